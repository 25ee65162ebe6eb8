// Compiled (not run) by `npm test` with tsc against the built package's types:
// each @ts-expect-error must be an error, and every other line must compile.
import { RateLimiter, MemoryStore, MINUTE, type RateLimitResult } from "../../pkg/dist/index.js";

const limiter = new RateLimiter(new MemoryStore(), {
  sendMessage: { kind: "token bucket", rate: 10, period: MINUTE, capacity: 3 },
  signups: { kind: "fixed window", rate: 100, period: MINUTE, start: 0 },
});

export async function namesAreChecked(): Promise<RateLimitResult[]> {
  return [
    await limiter.limit("sendMessage", { key: "ada" }),
    await limiter.check("signups"),
    // @ts-expect-error a name that is not defined, without an inline config
    await limiter.limit("sendMesage"),
    // @ts-expect-error a typo with options fails on the name (tsc: '"sendMesage"' is not assignable to '"sendMessage" | "signups"'), not on a missing inline config
    await limiter.limit("sendMesage", { key: "ada" }),
    // @ts-expect-error the same for check
    await limiter.check("sigups", { key: "ada" }),
    // @ts-expect-error and for a grant
    await limiter.limit("sendMesage", { key: "ada", grant: true }),
    // An unknown name is fine with an inline config.
    await limiter.limit("oneOff", { config: { kind: "fixed window", rate: 1, period: 1000 } }),
    await limiter.limitAll([{ name: "sendMessage" }, { name: "signups", count: 2 }]),
    // @ts-expect-error batch items are checked too
    await limiter.limitAll([{ name: "nope" }]),
  ];
}

// @ts-expect-error a token bucket has no window start
new RateLimiter(new MemoryStore(), { bad: { kind: "token bucket", rate: 1, period: 1, start: 5 } });

// A fixed window's period may be a calendar period, anchored or not.
new RateLimiter(new MemoryStore(), { monthly: { kind: "fixed window", rate: 1000, period: "month", start: Date.UTC(2026, 0, 31) }, daily: { kind: "fixed window", rate: 5, period: "day" } });

// @ts-expect-error a token bucket's period is ms only
new RateLimiter(new MemoryStore(), { bad: { kind: "token bucket", rate: 1, period: "day" } });

// @ts-expect-error the calendar periods are four literals
new RateLimiter(new MemoryStore(), { bad: { kind: "fixed window", rate: 1, period: "fortnight" } });

// @ts-expect-error the kind is one of three literals
new RateLimiter(new MemoryStore(), { bad: { kind: "leaky bucket", rate: 1, period: 1 } });

// A sliding window takes rate and period, and nothing else.
new RateLimiter(new MemoryStore(), { slide: { kind: "sliding window", rate: 10, period: MINUTE } });
// @ts-expect-error a sliding window has no capacity
new RateLimiter(new MemoryStore(), { bad: { kind: "sliding window", rate: 1, period: 1, capacity: 2 } });
// @ts-expect-error its period is ms only (no calendar period)
new RateLimiter(new MemoryStore(), { bad: { kind: "sliding window", rate: 1, period: "day" } });
// @ts-expect-error nor shards
new RateLimiter(new MemoryStore(), { bad: { kind: "sliding window", rate: 1, period: 1, shards: 2 } });

export async function resultsNarrow(): Promise<number> {
  const result = await limiter.limit("sendMessage");
  // A refusal always carries retryAfter; a grant only when it reserved.
  if (!result.ok) return result.retryAfter;
  // @ts-expect-error retryAfter may be undefined on a grant
  const wait: number = result.retryAfter;
  return wait;
}

export async function typosInOtherMethods(): Promise<void> {
  // @ts-expect-error getValue checks names
  await limiter.getValue("sendMesage", { key: "ada" });
  // @ts-expect-error reset checks names
  await limiter.reset("sendMesage", { key: "ada" });
  // A named limit with an inline config (it overrides) still compiles.
  await limiter.limit("sendMessage", { key: "ada", config: { kind: "token bucket", rate: 1, period: 1000 } });
}

export async function valuesProject(): Promise<number> {
  const { value, ts, config, shard } = await limiter.getValue("sendMessage", { key: "ada" });
  return value + ts + config.rate + shard;
}

export async function storedLimitsAreNamed(): Promise<string> {
  const stored = new RateLimiter(new MemoryStore(), { api: { kind: "token bucket", rate: 10, period: MINUTE } }, { storedLimits: true });
  await stored.setLimit("api", { kind: "token bucket", rate: 1_000, period: MINUTE }, { key: "acme" });
  // @ts-expect-error setLimit takes a named limit only (a stored limit keeps the kind, shards and start in code)
  await stored.setLimit("apii", { kind: "token bucket", rate: 1, period: MINUTE });
  // @ts-expect-error a stored limit is a config, without onStoreError
  await stored.setLimit("api", { kind: "token bucket", rate: 1, period: MINUTE, onStoreError: "open" });
  await stored.deleteLimit("api", { key: "acme" });
  const { config, source } = await stored.getLimit("api");
  return `${config.rate} ${source satisfies "key" | "name" | "code"}`;
}
