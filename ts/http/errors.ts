/**
 * The errors of `ratebound/http`: one class, {@link HttpGuardError}, with a typed code.
 * @module
 */

/**
 * What went wrong in `ratebound/http`:
 * - `HTTP_GUARD_CONFIG`: a guard (or `ipKey`) was given a bad option; thrown when it is made, naming it
 *   (and by `nestRateLimit` for a request it cannot answer: not HTTP, or not Nest's Express platform).
 * - `HTTP_GUARD_KEY`: `options.key(request)` gave something other than a string or `undefined` (a bug in the app: the request fails).
 * - `HTTP_GUARD_COUNT`: `options.count(request)` gave something other than a finite number `>= 0` (a bug in the app).
 * - `HTTP_GUARD_IP`: `ipKey` was given something that is not an IP address; a guard whose `key` throws it answers `400 Bad Request`.
 */
export type HttpGuardErrorCode = "HTTP_GUARD_CONFIG" | "HTTP_GUARD_KEY" | "HTTP_GUARD_COUNT" | "HTTP_GUARD_IP";

/**
 * A guard that could not decide: made with bad options (thrown by
 * `httpGuard` and the middleware), given a request whose `key` or `count` is
 * not usable (that request fails; nothing was written), or an address that
 * is not one (`ipKey`).
 *
 * @example
 * try { httpGuard(limiter, "api", { headers: "draft-9" as never }); }
 * catch (error) { if (error instanceof HttpGuardError) console.log(error.code); } // "HTTP_GUARD_CONFIG"
 * @see {@link https://github.com/ratebound/ratebound/blob/main/docs/errors.md#http-httpguarderror | docs/errors.md}: every code, what it means, what to do.
 */
export class HttpGuardError extends Error {
  /** What was wrong. */
  readonly code: HttpGuardErrorCode;

  /**
   * @param code What was wrong.
   * @param message Which option or value, and what it was.
   */
  constructor(code: HttpGuardErrorCode, message: string) {
    super(message);
    this.name = "HttpGuardError";
    this.code = code;
  }
}
