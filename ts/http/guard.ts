/**
 * The guard of `ratebound/http`: one request is decided with `limit` (one
 * limit) or `limitAll` (several: all consumed or none), in one call that also
 * gives each limit's figures for the header fields (the core computes them
 * from the decision itself: no second round trip). What the request gets:
 *
 * - granted: the route runs, with the `RateLimit` fields;
 * - refused: `429 Too Many Requests`, `Retry-After` in whole seconds (never shorter than the core's wait);
 * - would be refused, under `dryRun` (the guard's option or a limit's own): the route runs, with the
 *   `RateLimit` fields of the would-be refusal (no `Retry-After`), and `dryRun` says what enforcing would have answered;
 * - the limiter failed closed (its store threw or timed out): `503 Service Unavailable` with
 *   `Retry-After`, and the error goes to `onError`;
 * - decided by the limiter's memory fallback (the result is `degraded`): as any decision, with the
 *   fallback's figures in the fields, and the cause goes to `onError`;
 * - admitted by `onStoreError: "open"` (`degraded`, nothing decided): the route runs with no field
 *   for that limit (a made-up `remaining` would be a lie), and the cause goes to `onError`;
 * - `key` threw `HTTP_GUARD_IP` (the client's address is not one): `400 Bad Request`.
 *
 * Guards stacked on one route (one per limit) each write the fields of every limit decided for
 * the request so far (`stack.ts`).
 *
 * A bug in the app (an unknown limit, a `key` that gives a number, a count the limit can never
 * grant) is not the client's doing nor the store's: it rejects, for the framework's 500.
 * @module
 */
import type { ConcurrencyConfig, RateLimitConfig } from "ratebound";
import { HttpGuardError } from "./errors.js";
import { headerInteger, rateLimitHeaders, type HeaderPairs, type NamedFigures } from "./headers.js";
import { stackedLimits } from "./stack.js";
import { asFailure, countOf, keyOf, makePlan, type FiguredResult, type GuardedLimiter, type GuardedNames, type HttpGuardOptions, type Plan } from "./plan.js";

export { HttpGuardError, type HttpGuardErrorCode } from "./errors.js";

/** What the guard answers for one request. */
export type GuardResult =
  | {
      ok: true;
      /**
       * The rate-limit header fields to add to the response: of this guard's limits and of every
       * limit an earlier guard decided for the same `Request` (stacked guards append theirs); none
       * of a limit admitted by `onStoreError: "open"` (it decided nothing).
       */
      headers: Headers;
      /** This guard's limits' figures (empty when none were computed). */
      limits: NamedFigures[];
      response?: undefined;
      /** Present when a limit decided in dry run: what enforcing would have answered (`ok: false` with its `retryAfter` in ms: a would-be refusal). */
      dryRun?: { ok: boolean; retryAfter?: number };
      /**
       * Tells the guard how the request ended: with `refundSuccessful`, a successful status gives the
       * tokens back. Await it (or hand it to `waitUntil`); a no-op otherwise. Never rejects (failures go to `onError`).
       */
      finish(response: Response | number): Promise<void>;
    }
  | {
      ok: false;
      /** The header fields the `response` carries (a 429's: every limit decided for the request, as when ok). */
      headers: Headers;
      /** This guard's limits' figures (empty unless refused by a limit). */
      limits: NamedFigures[];
      /** Ready to return: the 429, the 503, or a 400. */
      response: Response;
      /** Whole seconds in `Retry-After` (absent for a 400). */
      retryAfter?: number;
      finish?: undefined;
      /** A dry run never refuses: never here. */
      dryRun?: undefined;
    };

/** A decision made, before it becomes a `Response` or an Express answer. */
export interface Decision {
  /** Whether the request may proceed. */
  ok: boolean;
  /** When not ok: 429 (refused), 503 (the limiter failed closed) or 400 (the client's address is not one). */
  status?: 400 | 429 | 503;
  /** The rate-limit header fields of every limit decided for the request so far (and, when not ok, `Retry-After`: the refusing limits'). */
  headers: HeaderPairs;
  /** This decision's limits' figures (empty when none were computed). */
  limits: NamedFigures[];
  /** When refused or unavailable: whole seconds, as in `Retry-After`. */
  retryAfter?: number;
  /** When not ok: the body and its content type. */
  body?: { text: string; contentType: string };
  /** When ok: tells the guard the response's status (refunds a successful one with `refundSuccessful`; gives a concurrency limit's slot back). Never rejects. */
  finish(status: number): Promise<void>;
  /** Present when a limit decided in dry run: what enforcing would have answered. */
  dryRun?: { ok: boolean; retryAfter?: number };
  /** When ok on a concurrency limit: the request holds a slot until `finish` (call it however the response ends: sent, failed or aborted). */
  holds?: boolean;
}

const QUOTA_EXCEEDED = "https://iana.org/assignments/http-problem-types#quota-exceeded";

/**
 * Codes of errors that are the app's own doing (a bad config, an unknown limit, a count that can
 * never be granted, a bad argument): they reject, for the framework's 500. Any other error of the
 * limiter (a store error, `STORE_TIMEOUT`, a corrupt state, an unreachable Durable Object) means
 * it failed closed: a 503.
 */
const APP_ERRORS = new Set(["INVALID_CONFIG", "INVALID_REQUEST", "INVALID_ARGUMENT", "COUNT_EXCEEDS_MAX", "WAIT_UNBOUNDED", "UNKNOWN_LIMIT", "GRANT_SETTLED", "INVALID_RANDOM"]);

const codeOf = (error: unknown): unknown => (typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined);

/** A body a user's function gave: a string as text, anything else as JSON. */
function bodyOf(body: unknown): { text: string; contentType: string } {
  return typeof body === "string"
    ? { text: body, contentType: "text/plain; charset=utf-8" }
    : { text: JSON.stringify(body ?? null), contentType: "application/json; charset=utf-8" };
}

const problem = (fields: Record<string, unknown>) => ({ text: JSON.stringify(fields), contentType: "application/problem+json" });
const NOTHING_TO_FINISH = async () => {};

/** Reports to `onError`, which must never break a request. */
function report<R>(plan: Plan<R>, error: unknown, request: R): void {
  try {
    plan.onError(asFailure(error), request);
  } catch {
    // A throwing logger must not turn an answer into a crash.
  }
}

/** The 503 for a limiter that failed closed, with the error reported. */
async function unavailable<R>(plan: Plan<R>, request: R, error: unknown): Promise<Decision> {
  report(plan, error, request);
  const retryAfter = plan.unavailableRetryAfter;
  const body =
    plan.onUnavailable !== undefined
      ? bodyOf(await plan.onUnavailable({ request, names: plan.names, retryAfter, error }))
      : problem({ type: "about:blank", title: "Service Unavailable", status: 503, detail: `The rate limiter is unavailable. Retry after ${retryAfter} s.` });
  return { ok: false, status: 503, headers: [["Retry-After", String(retryAfter)]], limits: [], retryAfter, body, finish: NOTHING_TO_FINISH };
}

/** The 400 for a client whose address is not one. */
function badRequest(error: HttpGuardError): Decision {
  const body = problem({ type: "about:blank", title: "Bad Request", status: 400, detail: "The client's address could not be read." });
  void error;
  return { ok: false, status: 400, headers: [], limits: [], body, finish: NOTHING_TO_FINISH };
}

/**
 * Decides one request: consumes its count from every limit (all or none) in
 * one call that also gives the figures for the headers.
 *
 * @param plan From {@link makePlan}.
 * @param request What `key` and `count` are given.
 * @returns The decision: its header fields and, when not ok, its status and body.
 * @throws What the app's own `key` or `count` threw, `HTTP_GUARD_KEY`, `HTTP_GUARD_COUNT`, and the
 *   limiter's errors that are the app's doing (`UNKNOWN_LIMIT`, `COUNT_EXCEEDS_MAX`, …).
 * @example
 * const decision = await decide(plan, request);
 * if (!decision.ok) return new Response(decision.body!.text, { status: decision.status });
 */
export async function decide<R>(plan: Plan<R>, request: R): Promise<Decision> {
  let key: string | undefined;
  try {
    key = await keyOf(plan, request);
  } catch (error) {
    if (error instanceof HttpGuardError && error.code === "HTTP_GUARD_IP") return badRequest(error);
    throw error;
  }
  const count = await countOf(plan, request);
  const { limiter, names } = plan;
  const keys = plan.keyed.map((keyed) => (keyed ? key : undefined));
  // A dry-run guard asks the limiter for a dry run: its hooks see the would-be refusals too.
  const dryRun = plan.dryRun ? { dryRun: true as const } : {};
  let result: FiguredResult;
  try {
    result =
      names.length === 1
        ? await limiter.limit(names[0]!, { key: keys[0], count, figures: true, ...(plan.refundSuccessful ? { grant: true as const } : {}), ...dryRun })
        : await limiter.limitAll(names.map((name, index) => ({ name, key: keys[index], count })), { figures: true, ...dryRun });
  } catch (error) {
    const code = codeOf(error);
    if (error instanceof HttpGuardError || (typeof code === "string" && APP_ERRORS.has(code))) throw error;
    return await unavailable(plan, request, error);
  }
  if (result.degraded !== undefined) report(plan, result.cause, request);
  const figures = result.figures === undefined ? [] : Array.isArray(result.figures) ? result.figures : [result.figures];
  // A degraded admission under policy "open" carries no figures (nothing decided): it adds no field, under every format.
  const limits: NamedFigures[] = figures.length === names.length ? names.map((name, index) => ({ name, key: keys[index], figures: figures[index]! })) : [];
  // The fields of every limit decided for this request: guards stacked on its route append theirs.
  const stacked = stackedLimits(request, limits);
  if (result.ok) {
    const headers = await rateLimitHeaders(plan.headers, stacked, plan.quotaUnit);
    const { lease } = result as { lease?: { release(): Promise<unknown> } };
    if (lease !== undefined) {
      // A concurrency limit's slot, held while the request is in flight: given back once, however it ends.
      let released: Promise<void> | undefined;
      const finish = () =>
        (released ??= lease.release().then(
          () => {},
          (error: unknown) => report(plan, error, request),
        ));
      return { ok: true, headers, limits, finish, holds: true };
    }
    const { grant } = result;
    const finish =
      grant === undefined
        ? NOTHING_TO_FINISH
        : async (status: number) => {
            try {
              if (plan.successful(status, request)) await grant.cancel();
            } catch (error) {
              report(plan, error, request);
            }
          };
    return { ok: true, headers, limits, finish, ...(result.dryRun === undefined ? {} : { dryRun: result.dryRun }) };
  }
  // The limits that refused on their own carry a wait; a batch waits for the longest.
  const waits = limits.flatMap(({ figures }) => (figures.retryAfter === undefined ? [] : [figures.retryAfter]));
  const retryAfter = waits.length > 0 ? Math.max(...waits) : Math.ceil((result.retryAfter ?? 0) / 1000);
  // draft-11 §6: Retry-After never names a point earlier than any effective window's end.
  const headers = await rateLimitHeaders(plan.headers, stacked, plan.quotaUnit, retryAfter);
  headers.unshift(["Retry-After", headerInteger(retryAfter)]);
  const violated = limits.filter(({ figures }) => figures.retryAfter !== undefined).map(({ name }) => name);
  const body =
    plan.onRefused !== undefined
      ? bodyOf(await plan.onRefused({ request, names, retryAfter, limits }))
      : problem({
          type: QUOTA_EXCEEDED,
          title: "Too Many Requests",
          status: 429,
          detail: `Retry after ${retryAfter} s.`,
          "violated-policies": violated.length > 0 ? violated : names,
        });
  return { ok: false, status: 429, headers, limits, retryAfter, body, finish: NOTHING_TO_FINISH };
}

const STATUS_TEXT = { 400: "Bad Request", 429: "Too Many Requests", 503: "Service Unavailable" } as const;

/**
 * A decision that is not ok as a `Response`.
 *
 * @param decision A decision with `ok: false`.
 * @returns The 429, 503 or 400, with its header fields and body.
 * @example
 * if (!decision.ok) return responseOf(decision);
 */
export function responseOf(decision: Decision): Response {
  const headers = new Headers(decision.headers);
  headers.set("Content-Type", decision.body!.contentType);
  const status = decision.status ?? 429;
  return new Response(decision.body!.text, { status, statusText: STATUS_TEXT[status], headers });
}

/**
 * A guard for fetch-standard handlers: decides each request against one limit
 * or several (all consumed or none) and gives the headers to send.
 *
 * @param limiter The `RateLimiter` (or `rateLimiterClient`) whose named limits guard the requests.
 * @param name A limit's name, or several (one `RateLimit` header with a policy each); `{ name, keyed: false }` for a limit all keys share.
 * @param options `key(request)`, `count(request)`, `headers`, `quotaUnit`, `dryRun`, `onRefused`, `onUnavailable`,
 *   `unavailableRetryAfter`, `onError`, `refundSuccessful`, `successful`.
 * @returns `async (request) => ({ ok, headers, limits, response?, finish? })`: when not ok, `response`
 *   is ready (429 refused, 503 the limiter failed closed, 400 a client address that is not one).
 * @throws {HttpGuardError} `HTTP_GUARD_CONFIG` when an argument is wrong, naming it.
 * @example
 * const guard = httpGuard(limiter, "api", { key: (request) => request.headers.get("x-api-key") ?? undefined });
 * export default { async fetch(request) {
 *   const { ok, headers, response } = await guard(request);
 *   if (!ok) return response;
 *   return new Response("hello", { headers });
 * } };
 */
export function httpGuard<Limits extends Record<string, RateLimitConfig | ConcurrencyConfig>>(
  limiter: GuardedLimiter<Limits>,
  name: GuardedNames<Limits>,
  options: HttpGuardOptions<Request> = {},
): (request: Request) => Promise<GuardResult> {
  const plan = makePlan<Request>("httpGuard", limiter, name, options);
  return async (request) => {
    const decision = await decide(plan, request);
    if (!decision.ok) {
      return { ok: false, headers: new Headers(decision.headers), limits: decision.limits, response: responseOf(decision), ...(decision.retryAfter === undefined ? {} : { retryAfter: decision.retryAfter }) };
    }
    const finish = (response: Response | number) => decision.finish(typeof response === "number" ? response : response.status);
    return { ok: true, headers: new Headers(decision.headers), limits: decision.limits, finish, ...(decision.dryRun === undefined ? {} : { dryRun: decision.dryRun }) };
  };
}
