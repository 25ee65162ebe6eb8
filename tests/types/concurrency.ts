// Compile-time checks of concurrency limits: a limiter takes `{ kind: "concurrency", max, lease }`
// among its named limits; `limit` on such a name answers a lease (a token limit's name, a result
// without one); `acquire` on it answers `{ waited, lease }`; the HTTP guards take a limiter typed
// with a concurrency limit; ratebound/convex's RateLimiter (which overrides `limit`) answers the same.
// "ratebound" is the source (tsconfig paths), as the built http.d.ts and convex.d.ts import it.
import { MemoryStore, RateLimiter, MINUTE, type ConcurrencyConfig, type Lease, type LeaseResult, type RateLimitConfig, type RateLimitResult } from "ratebound";
import { RateLimiter as ConvexRateLimiter } from "../../pkg/dist/convex.js";
import { expressRateLimit, fastifyRateLimit, honoRateLimit, httpGuard, koaRateLimit, nestRateLimit, sveltekitRateLimit } from "../../pkg/dist/http.js";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const same = <A, B>(proof: Equal<A, B>): Equal<A, B> => proof;

const exportsLimit: ConcurrencyConfig = { kind: "concurrency", max: 4, lease: 30_000 };
const LIMITS = {
  exports: exportsLimit,
  api: { kind: "token bucket", rate: 100, period: MINUTE },
} as const;
const limiter = new RateLimiter(new MemoryStore(), LIMITS);

export async function leased(): Promise<number> {
  const answer = await limiter.limit("exports", { key: "team" });
  same<typeof answer, LeaseResult>(true);
  if (!answer.ok) return answer.retryAfter;
  const lease: Lease = answer.lease;
  const { expiresAt }: { expiresAt: number } = await lease.extend(30_000);
  const { released }: { released: number } = await lease.release();
  // @ts-expect-error extend takes ms as a number
  await lease.extend("30s");
  return expiresAt + released;
}

export async function tokens(): Promise<boolean> {
  const answer = await limiter.limit("api", { key: "ada" });
  // @ts-expect-error a token limit's answer has no lease
  void answer.lease;
  // An inline config is a token limit's, whatever its name.
  const inline = await limiter.limit("exports", { config: { kind: "fixed window", rate: 1, period: MINUTE } });
  same<typeof inline extends RateLimitResult ? true : false, true>(true);
  return answer.ok && inline.ok;
}

export async function values(): Promise<number> {
  const { held, max, ts } = await limiter.getValue("exports", { key: "team" });
  const tokens = await limiter.getValue("api", { key: "ada" });
  // @ts-expect-error a token limit's value has no held
  void tokens.held;
  return held + max + ts + tokens.value;
}

export async function acquired(): Promise<number> {
  const { waited, lease } = await limiter.acquire("exports", { key: "team", maxWait: 1_000 });
  await lease.release();
  const turn = await limiter.acquire("api", { key: "ada" });
  same<typeof turn, { waited: number }>(true);
  // @ts-expect-error a token limit's turn has no lease
  void turn.lease;
  return waited;
}

export async function onConvex(convex: ConvexRateLimiter<typeof LIMITS>): Promise<void> {
  const answer: LeaseResult = await convex.limit("exports", { key: "team" });
  if (answer.ok) await answer.lease.release();
  const tokens = await convex.limit("api", { key: "ada", grant: true });
  if (tokens.ok) await tokens.grant.settle(0);
  // @ts-expect-error a name that is none of its limits
  await convex.limit("nope");
}

// The guards take a limiter typed with a concurrency limit (its name: requests in flight per key).
export const guards = [
  httpGuard(limiter, "exports", { key: () => "team" }),
  expressRateLimit(limiter, "exports", { key: (req) => req.ip }),
  fastifyRateLimit(limiter, "exports", { key: (req) => req.ip }),
  honoRateLimit(limiter, "exports", { key: () => "team" }),
  koaRateLimit(limiter, "exports", { key: (ctx) => ctx.ip }),
  nestRateLimit(limiter, "exports", { key: (req) => req.ip }),
  sveltekitRateLimit(limiter, "exports", { key: (event) => event.getClientAddress() }),
];
// @ts-expect-error a name that is none of the limiter's limits
httpGuard(limiter, "nope", { key: () => "team" });

// @ts-expect-error a concurrency limit has max and lease, not rate
export const wrong: ConcurrencyConfig = { kind: "concurrency", rate: 4, lease: 1 };
// A limiter of concurrency and token limits is a limiter of limits of either kind.
export const widened: RateLimiter<Record<string, RateLimitConfig | ConcurrencyConfig>> = limiter;
