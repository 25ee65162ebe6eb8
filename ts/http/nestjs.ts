/**
 * A NestJS guard over the guard of `ratebound/http`, for Nest's Express
 * platform. Nest is not imported: the types below are what the guard uses of
 * its `ExecutionContext`, so `ratebound/http` type-checks without it, and the
 * guard is a `CanActivate` for `@UseGuards`, `app.useGlobalGuards` or an
 * `APP_GUARD` provider.
 * @module
 */
import type { ConcurrencyConfig, RateLimitConfig } from "ratebound";
import { HttpGuardError } from "./errors.js";
import type { ExpressRequestLike, ExpressResponseLike } from "./frameworks.js";
import { decide } from "./guard.js";
import { makePlan, type GuardedLimiter, type GuardedNames, type HttpGuardOptions } from "./plan.js";

/** What the guard uses of Nest's `ExecutionContext`. */
export interface NestExecutionContextLike {
  /** `"http"` for a request; the guard guards nothing else. */
  getType(): string;
  /** The request and the response of the platform (Express's `req` and `res`). */
  switchToHttp(): { getRequest(): unknown; getResponse(): unknown };
}

/** A Nest `CanActivate`: `true` lets the route run; a refusal is answered by the guard itself. */
export interface NestRateLimitGuard {
  /** Decides the request; when refused, writes the answer and returns `false`. */
  canActivate(context: NestExecutionContextLike): Promise<boolean>;
}

/**
 * A NestJS 10 or 11 guard: decides each request against one limit or several
 * (all consumed or none), sets the rate-limit header fields, and answers a
 * refusal (429), a limiter that failed closed (503 with `Retry-After`; the
 * error goes to `onError`) and an address that is not one (400) itself, with
 * its `application/problem+json` body and no exception to rewrite it (Nest's
 * exception filter finds the response sent and only ends it). An app's own bug
 * (an unknown limit, a `key` that gives a number) throws, for Nest's 500.
 *
 * @param limiter The `RateLimiter` (or `rateLimiterClient`) whose named limits guard the routes.
 * @param name A limit's name, or several names.
 * @param options As for `httpGuard`; `key(req)` and `count(req)` take Express's request.
 * @returns The guard, for `@UseGuards(...)`, `app.useGlobalGuards(...)` or an `APP_GUARD` factory.
 * @throws {HttpGuardError} `HTTP_GUARD_CONFIG` when an argument is wrong, naming it; when the
 *   guard meets a context that is not HTTP (a microservice, a gateway), as the request's error.
 * @example
 * app.useGlobalGuards(nestRateLimit(limiter, "api", { key: (req) => ipKey(req.ip) }));
 * \@UseGuards(nestRateLimit(limiter, "login", { key: (req) => ipKey(req.ip), refundSuccessful: true }))
 */
export function nestRateLimit<Limits extends Record<string, RateLimitConfig | ConcurrencyConfig>, Req extends ExpressRequestLike = ExpressRequestLike>(limiter: GuardedLimiter<Limits>, name: GuardedNames<Limits>, options: HttpGuardOptions<Req> = {}): NestRateLimitGuard {
  const plan = makePlan<Req>("nestRateLimit", limiter, name, options);
  return {
    async canActivate(context) {
      if (context.getType() !== "http") {
        throw new HttpGuardError("HTTP_GUARD_CONFIG", `ratebound/http: nestRateLimit guards HTTP requests (got a ${context.getType()} context)`);
      }
      const http = context.switchToHttp();
      const req = http.getRequest() as Req;
      const res = http.getResponse() as ExpressResponseLike;
      if (typeof res?.setHeader !== "function") {
        throw new HttpGuardError("HTTP_GUARD_CONFIG", "ratebound/http: nestRateLimit needs Nest's Express platform (the response has no setHeader); on the Fastify platform, register fastifyRateLimit on app.getHttpAdapter().getInstance()");
      }
      const decision = await decide(plan, req);
      if (!res.headersSent) for (const [field, value] of decision.headers) res.setHeader(field, value);
      if (decision.ok) {
        if (plan.refundSuccessful) res.once("finish", () => void decision.finish(res.statusCode));
        // A concurrency limit's slot: back when the response is done or the client went away.
        if (decision.holds) res.once("close", () => void decision.finish(res.statusCode));
        return true;
      }
      if (res.headersSent) {
        res.end("");
        return false;
      }
      res.statusCode = decision.status ?? 429;
      res.setHeader("Content-Type", decision.body!.contentType);
      res.end(decision.body!.text);
      return false;
    },
  };
}
