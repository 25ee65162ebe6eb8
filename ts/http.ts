/**
 * ratebound in front of HTTP handlers: {@link httpGuard} for any fetch-standard
 * handler (Workers, Deno, Bun, Next.js route handlers), and thin middleware for
 * Hono ({@link honoRateLimit}) and Express or Connect ({@link expressRateLimit}).
 * A refusal is a 429 with `Retry-After` in whole seconds (never early); the
 * `RateLimit-Policy` and `RateLimit` header fields (draft-ietf-httpapi-ratelimit-headers-10
 * by default, drafts 8, 7 and 6 on request) carry the core's figures.
 * @module
 */
export { httpGuard, HttpGuardError, decide, makePlan } from "./http/guard.js";
export type { Decision, GuardedLimit, GuardedLimiter, GuardedNames, GuardResult, HttpGuardErrorCode, HttpGuardOptions, Plan, Refusal } from "./http/guard.js";
export { honoRateLimit, expressRateLimit } from "./http/frameworks.js";
export type { ExpressNext, ExpressRequestLike, ExpressResponseLike, HonoContextLike } from "./http/frameworks.js";
export { HEADER_DRAFTS, isPolicyName, rateLimitHeaders } from "./http/headers.js";
export type { HeaderDraft, HeaderPairs, NamedFigures } from "./http/headers.js";
