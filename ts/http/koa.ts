/**
 * Koa middleware over the guard of `ratebound/http`. Koa is not imported: the
 * type below is what the middleware, and a typical `key`, use of its context,
 * so `ratebound/http` type-checks without it. Annotate `key`'s parameter with
 * your `ParameterizedContext<State>` for the rest of it.
 * @module
 */
import type { ConcurrencyConfig, RateLimitConfig } from "ratebound";
import { decide } from "./guard.js";
import { makePlan, type GuardedLimiter, type GuardedNames, type HttpGuardOptions } from "./plan.js";

/** What the Koa middleware, and a typical `key`, use of Koa's context. */
export interface KoaContextLike {
  /** The client's address as Koa's `app.proxy` reads it; give it to `ipKey`. */
  readonly ip: string;
  /** One request header field (`""` when absent). */
  get(field: string): string;
  /** Sets one response header field. */
  set(field: string, value: string): void;
  /** The response's status code. */
  status: number;
  /** The response's body. */
  body: unknown;
  /** The HTTP method. */
  readonly method: string;
  /** The path. */
  readonly path: string;
  /** What earlier middleware put there (`ctx.state.user`): annotate `ctx` with your context for its type. */
  state: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  /** Node's response: its `close` (sent, failed or aborted by the client) gives a concurrency limit's slot back. */
  readonly res?: { once(event: "close", listener: () => void): unknown };
}

/** A status carried by an error thrown downstream (`ctx.throw(404)`), else 500. */
function statusOfError(error: unknown): number {
  const status = typeof error === "object" && error !== null ? ((error as { status?: unknown }).status ?? (error as { statusCode?: unknown }).statusCode) : undefined;
  return typeof status === "number" ? status : 500;
}

/**
 * Koa 2 or 3 middleware: decides each request against one limit or several
 * (all consumed or none), sets the rate-limit header fields, and answers a
 * refusal (429), a limiter that failed closed (503 with `Retry-After`; the
 * error goes to `onError`) and an address that is not one (400), each with its
 * `application/problem+json` body. An app's own bug (an unknown limit, a `key`
 * that gives a number) throws, for Koa's error handling. With
 * `refundSuccessful`, the tokens go back once the downstream middleware is
 * done, before the response leaves (so the next request sees them).
 *
 * @param limiter The `RateLimiter` (or `rateLimiterClient`) whose named limits guard the routes.
 * @param name A limit's name, or several names.
 * @param options As for `httpGuard`; `key(ctx)` and `count(ctx)` take Koa's context.
 * @returns The middleware, for `app.use` or a router's route.
 * @throws {HttpGuardError} `HTTP_GUARD_CONFIG` when an argument is wrong, naming it.
 * @example
 * app.use(koaRateLimit(limiter, "api", { key: (ctx) => ipKey(ctx.ip) }));
 */
export function koaRateLimit<Limits extends Record<string, RateLimitConfig | ConcurrencyConfig>, C extends KoaContextLike = KoaContextLike>(
  limiter: GuardedLimiter<Limits>,
  name: GuardedNames<Limits>,
  options: HttpGuardOptions<C> = {},
): (ctx: C, next: () => Promise<unknown>) => Promise<void> {
  const plan = makePlan<C>("koaRateLimit", limiter, name, options);
  return async (ctx, next) => {
    const decision = await decide(plan, ctx);
    for (const [field, value] of decision.headers) ctx.set(field, value);
    if (!decision.ok) {
      ctx.status = decision.status ?? 429;
      // Before the body: a string body would otherwise make the type text/plain.
      ctx.set("Content-Type", decision.body!.contentType);
      ctx.body = decision.body!.text;
      return;
    }
    // A concurrency limit's slot: back when Node's response closes (sent, failed, or the client went
    // away while the handler still ran); without one, when the downstream middleware is done.
    const closes = decision.holds === true && typeof ctx.res?.once === "function";
    if (closes) ctx.res!.once("close", () => void decision.finish(ctx.status));
    try {
      await next();
    } catch (error) {
      if (!closes) await decision.finish(statusOfError(error));
      throw error;
    }
    if (!closes) await decision.finish(ctx.status);
  };
}
