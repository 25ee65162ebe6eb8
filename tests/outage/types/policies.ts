// The failure policy's types, as an app writes them: a named limit's onStoreError, the limiter's
// onStoreError and timeout, isDegraded narrowing a result, and wrong policies as compile errors.
import { MemoryStore, MINUTE, RateLimiter, StoreTimeoutError, isDegraded, type LimitConfig, type StoreErrorPolicy } from "ratebound";

const LIMITS = {
  login: { kind: "token bucket", rate: 5, period: MINUTE, onStoreError: "closed" },
  search: { kind: "token bucket", rate: 100, period: MINUTE, onStoreError: "open" },
  feed: { kind: "fixed window", rate: 60, period: MINUTE, onStoreError: { fallback: "memory", maxKeys: 50_000 } },
} satisfies Record<string, LimitConfig>;

export async function app(): Promise<string> {
  const limiter = new RateLimiter(new MemoryStore(), LIMITS, { onStoreError: { fallback: "memory" }, timeout: 250, now: Date.now });
  const status = await limiter.limit("search", { key: "ip" });
  if (isDegraded(status)) {
    const why: "store-error" | "store-timeout" = status.degraded;
    return `${why}: ${String(status.cause instanceof StoreTimeoutError ? status.cause.timeoutMs : status.cause)}`;
  }
  const policy: StoreErrorPolicy = "open";
  // @ts-expect-error: not a policy
  const wrong: StoreErrorPolicy = "sometimes";
  // @ts-expect-error: the only fallback is memory
  new RateLimiter(new MemoryStore(), {}, { onStoreError: { fallback: "redis" } });
  // @ts-expect-error: a timeout is a number of milliseconds
  new RateLimiter(new MemoryStore(), {}, { timeout: "1s" });
  // @ts-expect-error: a named limit's policy is checked too
  new RateLimiter(new MemoryStore(), { x: { kind: "token bucket", rate: 1, period: 1, onStoreError: "opne" } });
  return `${policy} ${String(wrong)} ${status.ok}`;
}
