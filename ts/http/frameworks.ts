/**
 * Hono and Express (or Connect) middleware over the guard of `ratebound/http`:
 * the same decision, the same header code, each framework's way of answering.
 * Neither framework is imported: the types below are what the middleware and
 * a typical `key` use of them, so `ratebound/http` type-checks without either
 * installed, and a `key` written inline at a route (`(req) => ipKey(req.ip)`)
 * sees `req.ip`, `req.get`, `c.req.header`, `c.get` without annotations.
 * Annotate the parameter with the framework's own type (`Request`,
 * `Context<Env>`) for everything else: the middleware then takes it.
 * @module
 */
import type { ConcurrencyConfig, RateLimitConfig } from "ratebound";
import { decide, responseOf } from "./guard.js";
import { makePlan, type GuardedLimiter, type GuardedNames, type HttpGuardOptions } from "./plan.js";

declare global {
  // Express's own augmentation point (passport's `req.user`, multer's `req.file` extend it): when
  // @types/express is installed this merges with its declaration, else it is empty.
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    // eslint-disable-next-line @typescript-eslint/no-empty-interface
    interface Request {}
  }
}

/** What the Hono middleware, and a typical `key`, use of Hono's `Context`. */
export interface HonoContextLike {
  /** The request: `header(name)` reads one header, `raw` is the fetch-standard `Request`. */
  req: { raw: Request; header(name: string): string | undefined };
  /** Sets a header of the response to come. */
  header(name: string, value: string): void;
  /** The response, after `next()`. */
  res: Response;
  /** A variable set by earlier middleware (`c.set`): annotate `c` with your `Context<Env>` for its type. */
  get(key: string): any; // eslint-disable-line @typescript-eslint/no-explicit-any
  /** The variables set by earlier middleware. */
  readonly var: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  /** The runtime's bindings (Workers' `env`, …). */
  readonly env: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/**
 * What the Express middleware, and a typical `key`, use of Express's request:
 * Express's `Request`, with its augmentations (`req.user`, `req.session`), is one.
 */
export interface ExpressRequestLike extends Express.Request {
  /** The client's address as Express's `trust proxy` setting reads it; give it to `ipKey`. */
  readonly ip?: string | undefined;
  /** The addresses of `X-Forwarded-For` that `trust proxy` trusts. */
  readonly ips?: string[];
  /** The request's header fields. */
  readonly headers: Record<string, string | string[] | undefined>;
  /** One header field (Express's `req.get`). */
  get(name: string): string | undefined;
  /** The HTTP method. */
  readonly method?: string;
  /** The path (Express). */
  readonly path?: string;
  /** The parsed body (Express's body parsers). */
  readonly body?: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  /** Route parameters (Express). */
  readonly params?: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  /** The query (Express). */
  readonly query?: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  /** The application (Express): the middleware reads its `trust proxy` setting to warn about it. */
  readonly app?: { get(setting: string): unknown };
}

/** What the Express middleware uses of Express's (or Node's) response. */
export interface ExpressResponseLike {
  /** The status code to send (read when the response finishes, for `refundSuccessful`). */
  statusCode: number;
  /** Sets one header. */
  setHeader(name: string, value: string): unknown;
  /** Sends the body and ends the response. */
  end(body: string): unknown;
  /** Listens for the response to be sent (`refundSuccessful` gives the tokens back then). */
  once(event: "finish" | "close", listener: () => void): unknown;
  /** True once headers went out (then the middleware writes none, and a refusal only ends the response). */
  readonly headersSent?: boolean;
}

/** Express's `next`: called with nothing to go on, or with an error. */
export type ExpressNext = (error?: unknown) => void;

/**
 * Hono middleware: decides each request against one limit or several (all
 * consumed or none), adds the rate-limit header fields to the app's response,
 * and answers a refusal itself (429), a limiter that failed closed (503, the
 * error to `onError`) and an address that is not one (400). An app's own bug
 * (an unknown limit, a `key` that gives a number) throws, for Hono's `onError`.
 *
 * @param limiter The `RateLimiter` (or `rateLimiterClient`) whose named limits guard the routes.
 * @param name A limit's name, or several names.
 * @param options As for `httpGuard`; `key(c)` and `count(c)` take Hono's context.
 * @returns The middleware, for `app.use` or a route.
 * @throws {HttpGuardError} `HTTP_GUARD_CONFIG` when an argument is wrong, naming it.
 * @example
 * app.use("/api/*", honoRateLimit(limiter, "api", { key: (c) => c.req.header("x-api-key") }));
 * app.post("/login", honoRateLimit(limiter, "login", { key: (c) => ipKey(c.req.header("cf-connecting-ip")), refundSuccessful: true }), login);
 */
export function honoRateLimit<Limits extends Record<string, RateLimitConfig | ConcurrencyConfig>, C extends HonoContextLike = HonoContextLike>(
  limiter: GuardedLimiter<Limits>,
  name: GuardedNames<Limits>,
  options: HttpGuardOptions<C> = {},
): (c: C, next: () => Promise<void>) => Promise<Response | void> {
  const plan = makePlan<C>("honoRateLimit", limiter, name, options);
  return async (c, next) => {
    const decision = await decide(plan, c);
    // Set on the context too when refused: once c.res exists (cors() sets its fields on it before
    // the route), Hono copies its fields over a Response a middleware returns, which would put back
    // an earlier guard's fields alone.
    for (const [field, value] of decision.headers) c.header(field, value);
    if (!decision.ok) return responseOf(decision);
    // A concurrency limit's slot: back as soon as the client goes away (the request's signal), or once the handler is done.
    if (decision.holds) c.req.raw.signal?.addEventListener("abort", () => void decision.finish(499), { once: true });
    try {
      await next();
    } catch (error) {
      await decision.finish(500);
      throw error;
    }
    // A handler that returns a Response of its own drops headers set before it: add them to a copy.
    const first = decision.headers[0];
    if (first !== undefined && !c.res.headers.has(first[0])) {
      const response = new Response(c.res.body, c.res);
      for (const [field, value] of decision.headers) response.headers.set(field, value);
      c.res = response;
    }
    // Before the response leaves, so the next request sees the refund (and workerd keeps the call alive).
    await decision.finish(c.res.status);
  };
}

/** Apps already warned about their proxy setting: each once. */
const warnedApps = new WeakSet<object>();

/**
 * express-rate-limit's two proxy checks, once per app: `trust proxy: true`
 * lets any client choose its `req.ip` with `X-Forwarded-For`; an
 * `X-Forwarded-For` while `trust proxy` is off means every client shares the
 * proxy's address (one limit for all).
 */
function warnAboutProxies(req: ExpressRequestLike): void {
  const app = req.app;
  // An Express app is a function with a `get` method.
  if ((typeof app !== "object" && typeof app !== "function") || app === null || typeof app.get !== "function" || warnedApps.has(app)) return;
  const trust = app.get("trust proxy");
  let warning: string | undefined;
  if (trust === true) {
    warning = `HTTP_GUARD_TRUST_PROXY: Express's 'trust proxy' is true, so req.ip is whatever the client's X-Forwarded-For says and anyone can bypass an IP-keyed limit. Set it to your proxies (app.set("trust proxy", 1) for one, or their addresses).`;
  } else if (trust === false && req.headers["x-forwarded-for"] !== undefined) {
    warning = `HTTP_GUARD_UNTRUSTED_FORWARDED: a request came with X-Forwarded-For while Express's 'trust proxy' is off: req.ip is the proxy's address, so every client shares one IP-keyed limit. Set 'trust proxy' to your proxies.`;
  }
  if (warning === undefined) return;
  warnedApps.add(app);
  console.warn(`ratebound/http: ${warning}`);
}

/**
 * Express (or Connect) middleware: decides each request against one limit or
 * several (all consumed or none), sets the rate-limit header fields, and
 * answers a refusal (429), a limiter that failed closed (503 with
 * `Retry-After` and a problem document; the error goes to `onError`, not to
 * `next(error)`, which Express renders as a 500) and an address that is not
 * one (400). An app's own bug (an unknown limit, a `key` that gives a number)
 * goes to `next(error)`. Warns once per app, as express-rate-limit does, when
 * `trust proxy` makes `req.ip` the client's to choose.
 *
 * @param limiter The `RateLimiter` (or `rateLimiterClient`) whose named limits guard the routes.
 * @param name A limit's name, or several names.
 * @param options As for `httpGuard`; `key(req)` and `count(req)` take Express's request.
 * @returns The middleware, for `app.use` or a route.
 * @throws {HttpGuardError} `HTTP_GUARD_CONFIG` when an argument is wrong, naming it.
 * @example
 * app.use(expressRateLimit(limiter, "api", { key: (req) => ipKey(req.ip) }));
 * app.post("/login", expressRateLimit(limiter, "login", { key: (req) => ipKey(req.ip), refundSuccessful: true }), login);
 */
export function expressRateLimit<
  Limits extends Record<string, RateLimitConfig | ConcurrencyConfig>,
  Req extends ExpressRequestLike = ExpressRequestLike,
  Res extends ExpressResponseLike = ExpressResponseLike,
>(limiter: GuardedLimiter<Limits>, name: GuardedNames<Limits>, options: HttpGuardOptions<Req> = {}): (req: Req, res: Res, next: ExpressNext) => void {
  const plan = makePlan<Req>("expressRateLimit", limiter, name, options);
  const keyed = plan.key !== undefined;
  return (req, res, next) => {
    if (keyed) warnAboutProxies(req);
    decide(plan, req).then((decision) => {
      if (!res.headersSent) for (const [field, value] of decision.headers) res.setHeader(field, value);
      if (decision.ok) {
        if (plan.refundSuccessful) res.once("finish", () => void decision.finish(res.statusCode));
        // A concurrency limit's slot: back when the response is done or the client went away ("close" comes either way).
        if (decision.holds) res.once("close", () => void decision.finish(res.statusCode));
        return next();
      }
      // Answered already by another middleware: end it there; the route never runs.
      if (res.headersSent) return void res.end("");
      res.statusCode = decision.status ?? 429;
      res.setHeader("Content-Type", decision.body!.contentType);
      res.end(decision.body!.text);
    }, next);
  };
}
