/**
 * Hono and Express (or Connect) middleware over the guard of `ratebound/http`:
 * the same decision, the same header code, each framework's way of answering.
 * Neither framework is imported: the types below are what the middleware uses
 * of them, so `ratebound/http` type-checks without either installed.
 * @module
 */
import type { RateLimitConfig } from "ratebound";
import { decide, makePlan, type GuardedLimiter, type GuardedNames, type HttpGuardOptions } from "./guard.js";

/** What the Hono middleware uses of Hono's `Context`. */
export interface HonoContextLike {
  /** The request: `header(name)` reads one header, `raw` is the fetch-standard `Request`. */
  req: { raw: Request; header(name: string): string | undefined };
  /** Sets a header of the response to come. */
  header(name: string, value: string): void;
  /** The response, after `next()`. */
  res: Response;
}

/** What the Express middleware uses of a request: nothing itself; `key` and `count` read it. */
export type ExpressRequestLike = object;

/** What the Express middleware uses of Express's (or Node's) response. */
export interface ExpressResponseLike {
  /** The status code to send. */
  statusCode: number;
  /** Sets one header. */
  setHeader(name: string, value: string): unknown;
  /** Sends the body and ends the response. */
  end(body: string): unknown;
  /** True once headers went out (then the middleware writes none, and a refusal only ends the response). */
  readonly headersSent?: boolean;
}

/** Express's `next`: called with nothing to go on, or with an error. */
export type ExpressNext = (error?: unknown) => void;

/**
 * Hono middleware: decides each request against one limit or several (all
 * consumed or none), adds the rate-limit header fields to the app's response,
 * and answers a refusal itself with a 429 and `Retry-After`. A failure
 * (a throwing store, a bad key) rejects, and Hono's error handler answers it.
 *
 * @param limiter The `RateLimiter` whose named limits guard the routes.
 * @param name A limit's name, or several names.
 * @param options `key(c)`, `count(c)`, `headers`, `onRefused`, `sampleShards`, `now`, as for `httpGuard`.
 * @returns The middleware, for `app.use`.
 * @throws {HttpGuardError} `HTTP_GUARD_CONFIG` when an argument is wrong, naming it.
 * @example
 * app.use("/api/*", honoRateLimit(limiter, "api", { key: (c) => c.req.header("x-api-key") }));
 */
export function honoRateLimit<Limits extends Record<string, RateLimitConfig>, C extends HonoContextLike = HonoContextLike>(
  limiter: GuardedLimiter<Limits>,
  name: GuardedNames<Limits>,
  options: HttpGuardOptions<C> = {},
): (c: C, next: () => Promise<void>) => Promise<Response | void> {
  const plan = makePlan<C>("honoRateLimit", limiter, name, options);
  return async (c, next) => {
    const decision = await decide(plan, c);
    if (!decision.ok) {
      const headers = new Headers(decision.headers);
      headers.set("Content-Type", decision.body!.contentType);
      return new Response(decision.body!.text, { status: 429, statusText: "Too Many Requests", headers });
    }
    for (const [field, value] of decision.headers) c.header(field, value);
    await next();
    // A handler that returns a Response of its own drops headers set before it: add them to a copy.
    const first = decision.headers[0];
    if (first !== undefined && !c.res.headers.has(first[0])) {
      const response = new Response(c.res.body, c.res);
      for (const [field, value] of decision.headers) response.headers.set(field, value);
      c.res = response;
    }
  };
}

/**
 * Express (or Connect) middleware: decides each request against one limit or
 * several (all consumed or none), sets the rate-limit header fields, and
 * answers a refusal with a 429 and `Retry-After`. A failure (a throwing store,
 * a bad key) goes to `next(error)`: Express's error handling answers it, never
 * the route.
 *
 * @param limiter The `RateLimiter` whose named limits guard the routes.
 * @param name A limit's name, or several names.
 * @param options `key(req)`, `count(req)`, `headers`, `onRefused`, `sampleShards`, `now`, as for `httpGuard`.
 * @returns The middleware, for `app.use`.
 * @throws {HttpGuardError} `HTTP_GUARD_CONFIG` when an argument is wrong, naming it.
 * @example
 * app.use(expressRateLimit(limiter, "api", { key: (req) => req.ip }));
 */
export function expressRateLimit<Limits extends Record<string, RateLimitConfig>, Req extends ExpressRequestLike = ExpressRequestLike>(
  limiter: GuardedLimiter<Limits>,
  name: GuardedNames<Limits>,
  options: HttpGuardOptions<Req> = {},
): (req: Req, res: ExpressResponseLike, next: ExpressNext) => void {
  const plan = makePlan<Req>("expressRateLimit", limiter, name, options);
  return (req, res, next) => {
    decide(plan, req).then((decision) => {
      if (!res.headersSent) for (const [field, value] of decision.headers) res.setHeader(field, value);
      if (decision.ok) return next();
      // Refused after another middleware already answered: end it there; the route never runs.
      if (res.headersSent) return void res.end("");
      res.statusCode = 429;
      res.setHeader("Content-Type", decision.body!.contentType);
      res.end(decision.body!.text);
    }, next);
  };
}
