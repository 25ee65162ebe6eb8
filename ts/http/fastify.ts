/**
 * Fastify over the guard of `ratebound/http`: an `onRequest` hook, as a plugin
 * for `app.register` (it guards the routes of the context it is registered in,
 * as a plugin wrapped by fastify-plugin does) and as a hook for one route.
 * Fastify is not imported: the types below are what the hook, and a typical
 * `key`, use of its request and reply, so `ratebound/http` type-checks without
 * it. Annotate `key`'s parameter with `FastifyRequest` for the rest of it.
 * @module
 */
import type { ConcurrencyConfig, RateLimitConfig } from "ratebound";
import { decide } from "./guard.js";
import { makePlan, type GuardedLimiter, type GuardedNames, type HttpGuardOptions } from "./plan.js";

/** What the hook, and a typical `key`, use of Fastify's request. */
export interface FastifyRequestLike {
  /** The client's address as Fastify's `trustProxy` reads it; give it to `ipKey`. */
  readonly ip: string;
  /** The request's header fields. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The HTTP method. */
  readonly method: string;
  /** The URL's path and query. */
  readonly url: string;
  /** Route parameters. */
  readonly params: unknown;
  /** The query. */
  readonly query: unknown;
}

/** What the hook uses of Fastify's reply. */
export interface FastifyReplyLike {
  /** Sets the status code. */
  code(statusCode: number): unknown;
  /** Sets one header field. */
  header(name: string, value: string): unknown;
  /** Sends the body (bytes: Fastify sends them as they are, under the content type set). */
  send(payload: Uint8Array): unknown;
  /** The status code sent (read when the response finishes, for `refundSuccessful`). */
  readonly statusCode: number;
  /** Node's response: the hook listens for its `finish` (`refundSuccessful` gives the tokens back then). */
  readonly raw: { once(event: "finish" | "close", listener: () => void): unknown };
}

/** What the plugin uses of a Fastify instance. */
export interface FastifyInstanceLike {
  /** Adds a hook to the instance's context (typed loosely: Fastify's own overloads are generic in the route). */
  addHook(name: "onRequest", hook: any): unknown; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** An async `onRequest` (or `preHandler`) hook: ends the request with the refusal, or lets it go on. */
export type FastifyRateLimitHook<Req extends FastifyRequestLike = FastifyRequestLike> = (request: Req, reply: FastifyReplyLike) => Promise<unknown>;

/** What {@link fastifyRateLimit} gives: a plugin for `app.register`, and its hook for one route. */
export interface FastifyRateLimitPlugin<Req extends FastifyRequestLike = FastifyRequestLike> {
  /** The plugin: adds the hook to the context it is registered in (not to a child of it). */
  (instance: FastifyInstanceLike, options: Record<never, never>, done: (error?: Error) => void): void;
  /** The hook, for one route: `app.post("/login", { onRequest: plugin.hook }, handler)`. */
  readonly hook: FastifyRateLimitHook<Req>;
}

/**
 * Fastify 5 rate limiting: decides each request, in an `onRequest` hook, against
 * one limit or several (all consumed or none), sets the rate-limit header fields,
 * and answers a refusal (429), a limiter that failed closed (503 with
 * `Retry-After`; the error goes to `onError`) and an address that is not one
 * (400), each with its `application/problem+json` body. An app's own bug (an
 * unknown limit, a `key` that gives a number) throws, for Fastify's error handler.
 *
 * Registered with `app.register`, the plugin skips Fastify's encapsulation (as
 * fastify-plugin does, without depending on it): the hook guards every route of
 * the context it is registered in, so registered inside a plugin it guards that
 * plugin's routes and no sibling's. For one route, use `.hook` as its `onRequest`
 * (or `preHandler`, to let `key` and `count` read the parsed body).
 *
 * @param limiter The `RateLimiter` (or `rateLimiterClient`) whose named limits guard the routes.
 * @param name A limit's name, or several names.
 * @param options As for `httpGuard`; `key(request)` and `count(request)` take Fastify's request.
 * @returns The plugin, with its hook as `.hook`.
 * @throws {HttpGuardError} `HTTP_GUARD_CONFIG` when an argument is wrong, naming it.
 * @example
 * await app.register(fastifyRateLimit(limiter, "api", { key: (request) => ipKey(request.ip) }));
 * const login = fastifyRateLimit(limiter, "login", { key: (request) => ipKey(request.ip), refundSuccessful: true });
 * app.post("/login", { onRequest: login.hook }, handler);
 */
export function fastifyRateLimit<Limits extends Record<string, RateLimitConfig | ConcurrencyConfig>, Req extends FastifyRequestLike = FastifyRequestLike>(
  limiter: GuardedLimiter<Limits>,
  name: GuardedNames<Limits>,
  options: HttpGuardOptions<Req> = {},
): FastifyRateLimitPlugin<Req> {
  const plan = makePlan<Req>("fastifyRateLimit", limiter, name, options);
  const hook: FastifyRateLimitHook<Req> = async (request, reply) => {
    const decision = await decide(plan, request);
    for (const [field, value] of decision.headers) reply.header(field, value);
    if (decision.ok) {
      if (plan.refundSuccessful) reply.raw.once("finish", () => void decision.finish(reply.statusCode));
      // A concurrency limit's slot: back when the response is done or the client went away.
      if (decision.holds) reply.raw.once("close", () => void decision.finish(reply.statusCode));
      return;
    }
    reply.code(decision.status ?? 429);
    reply.header("Content-Type", decision.body!.contentType);
    // As bytes: a string of a JSON type would get "; charset=utf-8" appended (RFC 9457 defines none).
    reply.send(new TextEncoder().encode(decision.body!.text));
    // An async hook that sent its reply returns it: Fastify then runs no handler.
    return reply;
  };
  const plugin = (instance: FastifyInstanceLike, _options: Record<never, never>, done: (error?: Error) => void) => {
    instance.addHook("onRequest", hook);
    done();
  };
  // fastify-plugin's two marks: the hook lands in the registering context, under a readable name.
  Object.defineProperty(plugin, Symbol.for("skip-override"), { value: true });
  Object.defineProperty(plugin, Symbol.for("fastify.display-name"), { value: "ratebound" });
  return Object.assign(plugin, { hook });
}
