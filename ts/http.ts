/**
 * ratebound in front of HTTP handlers: {@link httpGuard} for any fetch-standard
 * handler (Workers, Deno, Bun, Next.js route handlers), and thin middleware for
 * Hono ({@link honoRateLimit}), Express or Connect ({@link expressRateLimit}), Fastify
 * ({@link fastifyRateLimit}), Koa ({@link koaRateLimit}), NestJS ({@link nestRateLimit}) and
 * SvelteKit ({@link sveltekitRateLimit}); {@link makePlan}, {@link decide} and {@link responseOf}
 * for any other framework.
 * A refusal is a 429 with `Retry-After` in whole seconds (never early); a
 * limiter that failed closed is a 503 with `Retry-After`; the
 * `RateLimit-Policy` and `RateLimit` header fields (draft-ietf-httpapi-ratelimit-headers-10
 * by default, drafts 8, 7 and 6 on request) carry the core's figures, from the
 * decision itself. {@link ipKey} keys a client by its address, an IPv6 one by its /56.
 * @module
 */
export { httpGuard, decide, responseOf } from "./http/guard.js";
export type { Decision, GuardResult } from "./http/guard.js";
export { makePlan } from "./http/plan.js";
export type { GuardedLimit, GuardedLimiter, GuardedNames, GuardFailure, HttpGuardOptions, Plan, Refusal, Unavailable } from "./http/plan.js";
export { HttpGuardError } from "./http/errors.js";
export type { HttpGuardErrorCode } from "./http/errors.js";
export { honoRateLimit, expressRateLimit } from "./http/frameworks.js";
export type { ExpressNext, ExpressRequestLike, ExpressResponseLike, HonoContextLike } from "./http/frameworks.js";
export { fastifyRateLimit } from "./http/fastify.js";
export type { FastifyInstanceLike, FastifyRateLimitHook, FastifyRateLimitPlugin, FastifyReplyLike, FastifyRequestLike } from "./http/fastify.js";
export { koaRateLimit } from "./http/koa.js";
export type { KoaContextLike } from "./http/koa.js";
export { nestRateLimit } from "./http/nestjs.js";
export type { NestExecutionContextLike, NestRateLimitGuard } from "./http/nestjs.js";
export { sveltekitRateLimit } from "./http/sveltekit.js";
export type { SvelteKitEventLike, SvelteKitRateLimitHandle } from "./http/sveltekit.js";
export { HEADER_DRAFTS, MAX_HEADER_INTEGER, QUOTA_UNITS, isPolicyName, rateLimitHeaders } from "./http/headers.js";
export type { HeaderDraft, HeaderPairs, NamedFigures, QuotaUnit } from "./http/headers.js";
export { ipKey } from "./http/ip.js";
export type { IpKeyOptions } from "./http/ip.js";
export { HASHED_KEY_PREFIX, MAX_PLAIN_KEY_BYTES, storedKey } from "./http/key.js";
