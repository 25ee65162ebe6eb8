/**
 * A SvelteKit `handle` over the guard of `ratebound/http`, for
 * `src/hooks.server.ts` (alone, or in `sequence(...)`). SvelteKit is not
 * imported: the types below are what the handle, and a typical `key`, use of
 * its `RequestEvent`, so `ratebound/http` type-checks without it. Annotate
 * `key`'s parameter with `RequestEvent` for the rest of it.
 * @module
 */
import type { ConcurrencyConfig, RateLimitConfig } from "ratebound";
import { decide, responseOf } from "./guard.js";
import { makePlan, type GuardedLimiter, type GuardedNames, type HttpGuardOptions } from "./plan.js";

/** What the handle, and a typical `key`, use of SvelteKit's `RequestEvent`. */
export interface SvelteKitEventLike {
  /** The fetch-standard request. */
  readonly request: Request;
  /** The request's URL. */
  readonly url: URL;
  /** The client's address, as the adapter reports it; give it to `ipKey`. */
  getClientAddress(): string;
  /** What earlier hooks put there (`event.locals.user`): annotate `event` with `RequestEvent` for its type. */
  readonly locals: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  /** The platform's bindings (Cloudflare's `env`, …), when the adapter gives any. */
  readonly platform?: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  /** The matched route: its `id` (`"/api/[id]"`), or `null`. */
  readonly route: { readonly id: string | null };
}

/** The `handle` {@link sveltekitRateLimit} gives: SvelteKit's `Handle`. */
export type SvelteKitRateLimitHandle<E extends SvelteKitEventLike = SvelteKitEventLike> = (input: {
  event: E;
  resolve(event: E): Response | Promise<Response>;
}) => Promise<Response>;

/** `response` with the fields set: on it, or on a copy when its headers are immutable (a `fetch` response). */
function withHeaders(response: Response, fields: ReadonlyArray<[string, string]>): Response {
  try {
    for (const [field, value] of fields) response.headers.set(field, value);
    return response;
  } catch {
    const copy = new Response(response.body, response);
    for (const [field, value] of fields) copy.headers.set(field, value);
    return copy;
  }
}

/**
 * A SvelteKit 2 `handle`: decides each request (pages, endpoints and form
 * actions alike) against one limit or several (all consumed or none), adds the
 * rate-limit header fields to the response, and answers a refusal (429), a
 * limiter that failed closed (503 with `Retry-After`; the error goes to
 * `onError`) and an address that is not one (400) with `responseOf`'s
 * `application/problem+json`. An app's own bug (an unknown limit, a `key` that
 * gives a number) throws, for SvelteKit's `handleError` and 500. With
 * `refundSuccessful`, the tokens go back once `resolve` has the response.
 *
 * @param limiter The `RateLimiter` (or `rateLimiterClient`) whose named limits guard the requests.
 * @param name A limit's name, or several names.
 * @param options As for `httpGuard`; `key(event)` and `count(event)` take SvelteKit's `RequestEvent`.
 * @returns The `handle`, to export from `hooks.server.ts` or to put in `sequence(...)`.
 * @throws {HttpGuardError} `HTTP_GUARD_CONFIG` when an argument is wrong, naming it.
 * @example
 * export const handle = sveltekitRateLimit(limiter, "api", { key: (event) => ipKey(event.getClientAddress()) });
 */
export function sveltekitRateLimit<Limits extends Record<string, RateLimitConfig | ConcurrencyConfig>, E extends SvelteKitEventLike = SvelteKitEventLike>(
  limiter: GuardedLimiter<Limits>,
  name: GuardedNames<Limits>,
  options: HttpGuardOptions<E> = {},
): SvelteKitRateLimitHandle<E> {
  const plan = makePlan<E>("sveltekitRateLimit", limiter, name, options);
  return async ({ event, resolve }) => {
    const decision = await decide(plan, event);
    if (!decision.ok) return responseOf(decision);
    // A concurrency limit's slot: back as soon as the client goes away (the request's signal), or once resolved.
    if (decision.holds) event.request.signal?.addEventListener("abort", () => void decision.finish(499), { once: true });
    let resolved: Response;
    try {
      resolved = await resolve(event);
    } catch (error) {
      await decision.finish(500);
      throw error;
    }
    const response = withHeaders(resolved, decision.headers);
    await decision.finish(response.status);
    return response;
  };
}
