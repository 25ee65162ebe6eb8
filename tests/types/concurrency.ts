// Compile-time checks of concurrency limits as far as they are typed on this branch: a limiter
// takes `{ kind: "concurrency", max, lease }` among its named limits, and a lease is typed once
// the answer is read as a `LeaseResult` (`limit`'s answer type does not name the lease yet:
// docs/concurrency-status.md, what is left).
import { MemoryStore, RateLimiter, MINUTE, type ConcurrencyConfig, type Lease, type LeaseResult } from "../../pkg/dist/index.js";

const exportsLimit: ConcurrencyConfig = { kind: "concurrency", max: 4, lease: 30_000 };
const limiter = new RateLimiter(new MemoryStore(), {
  exports: exportsLimit,
  api: { kind: "token bucket", rate: 100, period: MINUTE },
});

export async function leased(): Promise<number> {
  const answer = (await limiter.limit("exports", { key: "team" })) as LeaseResult;
  if (!answer.ok) return answer.retryAfter;
  const lease: Lease = answer.lease;
  const { expiresAt }: { expiresAt: number } = await lease.extend(30_000);
  const { released }: { released: number } = await lease.release();
  // @ts-expect-error extend takes ms as a number
  await lease.extend("30s");
  return expiresAt + released;
}

// @ts-expect-error a concurrency limit has max and lease, not rate
export const wrong: ConcurrencyConfig = { kind: "concurrency", rate: 4, lease: 1 };
