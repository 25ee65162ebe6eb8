// Compiled (not run) by `npm test` with tsc against the built package's types (issue 33): `figures:
// true` narrows the answer so a decision's figures are not possibly undefined (only an "open"
// admission, which decides nothing, has none), for limitAll/checkAll too; and a subclass can
// override limit/check/limitAll with the base's own generic signatures under strict.
import {
  MemoryStore,
  RateLimiter,
  MINUTE,
  isDegraded,
  type BatchAnswerOf,
  type BatchOptions,
  type BatchRequest,
  type CheckResultOf,
  type LimitAnswer,
  type LimitResultOf,
  type LimitCallOptions,
  type LimitConfig,
  type LimitName,
  type RateLimitFigures,
  type RateLimitResult,
} from "../../pkg/dist/index.js";

const limiter = new RateLimiter(new MemoryStore(), {
  login: { kind: "fixed window", rate: 5, period: 15 * MINUTE, start: 0 },
  search: { kind: "token bucket", rate: 100, period: MINUTE, onStoreError: "open" },
});

export async function figuresNarrow(): Promise<number[]> {
  const status = await limiter.limit("login", { key: "ip", figures: true });
  // A refusal is always decided: its figures are there.
  if (!status.ok) return [status.figures.remaining, status.figures.retryAfter ?? 0, status.retryAfter];
  // An admission may be "open" (no decision, no figures): narrow on the figures, or on degraded.
  // @ts-expect-error an admitted answer may be an open admission, without figures
  const unchecked: number = status.figures.remaining;
  if (status.figures !== undefined) return [status.figures.remaining, unchecked];
  if (isDegraded(status)) return [];
  return [];
}

export async function checkAndBatchesNarrow(): Promise<RateLimitFigures[]> {
  const checked = await limiter.check("search", { figures: true });
  const batch = await limiter.limitAll([{ name: "login", key: "ip" }, { name: "search" }], { figures: true });
  const peek = await limiter.checkAll([{ name: "login", key: "ip" }], { figures: true });
  const out: RateLimitFigures[] = [];
  if (!checked.ok) out.push(checked.figures);
  if (!batch.ok) out.push(...batch.figures);
  if (peek.figures !== undefined) out.push(...peek.figures);
  const plain = await limiter.limitAll([{ name: "login" }]);
  // @ts-expect-error without figures: true, figures may be absent
  out.push(...plain.figures);
  return out;
}

export async function withoutFiguresNothingChanges(): Promise<number | undefined> {
  const status = await limiter.limit("login", { key: "ip" });
  // @ts-expect-error figures only when asked
  const remaining: number = status.figures.remaining;
  return remaining;
}

/** A subclass that counts its calls: it overrides with the base's own signatures, and calls super. */
class CountedLimiter<Limits extends Record<string, LimitConfig>> extends RateLimiter<Limits> {
  calls = 0;
  override async limit<const O extends LimitCallOptions = {}, const N extends LimitName<Limits, O> = LimitName<Limits, O>>(name: N, options?: O): Promise<LimitResultOf<Limits, N, O>> {
    this.calls++;
    return super.limit(name, options);
  }
  override async check<const O extends LimitCallOptions = {}, const N extends LimitName<Limits, O> = LimitName<Limits, O>>(name: N, options?: O): Promise<CheckResultOf<Limits, N, O>> {
    this.calls++;
    return super.check(name, options);
  }
  override async limitAll<const Options extends BatchOptions = {}>(
    requests: ReadonlyArray<BatchRequest<Extract<keyof Limits, string>> | (BatchRequest & { config: LimitConfig })>,
    options?: Options,
  ): Promise<BatchAnswerOf<Options>> {
    this.calls += requests.length;
    return super.limitAll(requests, options);
  }
}

const counted = new CountedLimiter(new MemoryStore(), { api: { kind: "token bucket", rate: 10, period: MINUTE } });

export async function subclassKeepsTheTypes(): Promise<RateLimitResult[]> {
  const granted = await counted.limit("api", { key: "ada", grant: true });
  if (granted.ok) await granted.grant.cancel();
  const figured = await counted.limit("api", { figures: true });
  const remaining: number = figured.ok ? (figured.figures?.remaining ?? 0) : figured.figures.remaining;
  return [
    figured,
    await counted.check("api", { key: "ada" }),
    await counted.limit("oneOff", { config: { kind: "fixed window", rate: 1, period: 1000 } }),
    await counted.limitAll([{ name: "api" }], { throws: true }),
    // @ts-expect-error the subclass still checks names
    await counted.limit("apii"),
    // @ts-expect-error and for check
    await counted.check("apii", { key: "ada" }),
  ].concat(remaining >= 0 ? [] : [figured]);
}

/** A subclass can also narrow the signature it exposes by fixing the options it accepts. */
class KeyedOnly<Limits extends Record<string, LimitConfig>> extends RateLimiter<Limits> {
  async limitKey(name: LimitName<Limits, {}>, key: string): Promise<LimitAnswer<{ key: string }>> {
    return this.limit(name, { key });
  }
}

export const keyed = new KeyedOnly(new MemoryStore(), { api: { kind: "token bucket", rate: 1, period: 1000 } }).limitKey("api", "ada");

// The types know a limit's policy when it is declared (on the limit, or on the limiter): a limit
// that cannot be "open" always has its figures; one that can, or whose policy is not declared, may not.
const declared = new RateLimiter(
  new MemoryStore(),
  {
    login: { kind: "fixed window", rate: 5, period: 15 * MINUTE, onStoreError: { fallback: "memory" } },
    search: { kind: "token bucket", rate: 100, period: MINUTE, onStoreError: "open" },
    plain: { kind: "token bucket", rate: 1, period: 1000 },
  },
  { onStoreError: "closed" },
);
const undeclared = new RateLimiter(new MemoryStore(), { plain: { kind: "token bucket", rate: 1, period: 1000 } });
const openByDefault = new RateLimiter(
  new MemoryStore(),
  { strict: { kind: "token bucket", rate: 1, period: 1000, onStoreError: "closed" }, loose: { kind: "token bucket", rate: 1, period: 1000 } },
  { onStoreError: "open" },
);

export async function declaredPoliciesNarrow(): Promise<number[]> {
  const { figures } = await declared.limit("login", { key: "ip", figures: true });
  const checked = await declared.check("plain", { figures: true });
  const inline = await undeclared.limit("oneOff", { figures: true, config: { kind: "fixed window", rate: 1, period: 1000, onStoreError: "closed" } });
  const strict = await openByDefault.limit("strict", { figures: true });
  const out = [figures.remaining, checked.figures.remaining, inline.figures.remaining, strict.figures.remaining];
  const search = await declared.limit("search", { figures: true });
  // @ts-expect-error a limit whose own policy is "open" may answer without figures
  out.push(search.figures.remaining);
  const loose = await openByDefault.check("loose", { figures: true });
  // @ts-expect-error a limit without its own policy on a limiter that is "open" may too
  out.push(loose.figures.remaining);
  const unknown = await undeclared.limit("plain", { figures: true });
  // @ts-expect-error no policy declared anywhere: the types cannot rule "open" out
  out.push(unknown.figures.remaining);
  return out;
}

// A limiter whose policy the types know is still a RateLimiter of its limits (the guards take
// them too: tests/http/types/apps.ts).
export const anyPolicy: RateLimiter<{ plain: LimitConfig }> = undeclared;
export const widened: RateLimiter<{ strict: LimitConfig; loose: LimitConfig }> = openByDefault;
