/** What a refused call carries when it throws: the same shape as `@convex-dev/rate-limiter`'s `ConvexError` data. */
export type RateLimitErrorData = { kind: "RateLimited"; name: string; retryAfter: number };

/**
 * Thrown by `limit`, `check`, `limitAll` and `checkAll` with `throws: true` when the limit refuses.
 *
 * @example
 * try { await limiter.limit("sendMessage", { key, throws: true }); }
 * catch (error) { if (isRateLimitError(error)) console.log(error.data.retryAfter); }
 */
export class RateLimitError extends Error {
  /** `{ kind: "RateLimited", name, retryAfter }`. */
  readonly data: RateLimitErrorData;

  /**
   * @param name The limit (or, for a batch, the limits) that refused.
   * @param retryAfter Milliseconds until a retry can succeed.
   */
  constructor(name: string, retryAfter: number) {
    super(`Rate limit ${JSON.stringify(name)} exceeded: retry after ${retryAfter} ms`);
    this.name = "RateLimitError";
    this.data = { kind: "RateLimited", name, retryAfter };
  }
}

/**
 * Whether `error` is a rate-limit refusal: a {@link RateLimitError}, or any error
 * (such as Convex's `ConvexError`) whose `data` is `{ kind: "RateLimited", name, retryAfter }`.
 *
 * @param error Anything caught.
 * @returns `true` when it is a refusal, narrowing `error.data`.
 * @example
 * if (isRateLimitError(error)) retryIn(error.data.retryAfter);
 */
export function isRateLimitError(error: unknown): error is { data: RateLimitErrorData } {
  if (error instanceof RateLimitError) return true;
  // Own fields only: a polluted Object.prototype.data must not make every error a refusal.
  const own = (object: unknown, field: string): unknown =>
    typeof object === "object" && object !== null && Object.hasOwn(object, field) ? (object as Record<string, unknown>)[field] : undefined;
  const data = own(error, "data");
  return own(data, "kind") === "RateLimited" && typeof own(data, "name") === "string" && typeof own(data, "retryAfter") === "number";
}
