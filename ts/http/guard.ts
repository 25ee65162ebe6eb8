/**
 * The guard of `ratebound/http`: one request is decided with `limit` (one
 * limit) or `limitAll` (several: all consumed or none), in one call that also
 * gives each limit's figures for the header fields (the core computes them
 * from the decision itself: no second round trip). What the request gets:
 *
 * - granted: the route runs, with the `RateLimit` fields;
 * - refused: `429 Too Many Requests`, `Retry-After` in whole seconds (never shorter than the core's wait);
 * - the limiter failed closed (its store threw or timed out): `503 Service Unavailable` with
 *   `Retry-After`, and the error goes to `onError`;
 * - admitted by the limiter's own failure policy (`onStoreError: "open"` or a fallback: the result
 *   is `degraded`): the route runs, whatever the header format, and the cause goes to `onError`;
 * - `key` threw `HTTP_GUARD_IP` (the client's address is not one): `400 Bad Request`.
 *
 * A bug in the app (an unknown limit, a `key` that gives a number, a count the limit can never
 * grant) is not the client's doing nor the store's: it rejects, for the framework's 500.
 * @module
 */
import type { RateLimitConfig, RateLimiter, RateLimitFigures } from "ratebound";
import type { RateLimiterClient } from "../stores/durable-object.js";
import { HttpGuardError } from "./errors.js";
import { HEADER_DRAFTS, headerInteger, isPolicyName, rateLimitHeaders, type HeaderDraft, type HeaderPairs, type NamedFigures } from "./headers.js";
import { storedKey } from "./key.js";

export { HttpGuardError, type HttpGuardErrorCode } from "./errors.js";

/** What a guard decides with: a `RateLimiter`, or a Durable Object's `rateLimiterClient`. */
export type GuardedLimiter<Limits extends Record<string, RateLimitConfig>> = RateLimiter<Limits> | RateLimiterClient<Limits>;

/** One guarding limit: its name, or `{ name, keyed: false }` for a limit shared by every key (a global one). */
export type GuardedLimit<Limits> = Extract<keyof Limits, string> | { name: Extract<keyof Limits, string>; keyed: false };

/** A guard's limits: one, or several (all consumed or none). */
export type GuardedNames<Limits> = GuardedLimit<Limits> | ReadonlyArray<GuardedLimit<Limits>>;

/** What a refused request's body is made from. */
export interface Refusal<R> {
  /** The request (for Hono, the context; for Express, `req`). */
  request: R;
  /** The guarding limits' names. */
  names: string[];
  /** Whole seconds until a retry can succeed, as in `Retry-After`. */
  retryAfter: number;
  /** Each limit's figures at the decision. */
  limits: NamedFigures[];
}

/** What a `503`'s body is made from: the limiter could not decide. */
export interface Unavailable<R> {
  /** The request (for Hono, the context; for Express, `req`). */
  request: R;
  /** The guarding limits' names. */
  names: string[];
  /** Whole seconds in `Retry-After` (`unavailableRetryAfter`). */
  retryAfter: number;
  /** Why: the store's error, or `STORE_TIMEOUT`. Do not send it to the client. */
  error: unknown;
}

/** Options of {@link httpGuard} (and of the Hono and Express middleware, with their own request type). */
export interface HttpGuardOptions<R> {
  /**
   * The request's key (user, API key, `ipKey(address)`); may be async. `undefined` (the default)
   * makes one limit for everyone. A key longer than 128 UTF-8 bytes, or one that begins with
   * `sha256:`, is limited under its SHA-256 (see {@link storedKey}), so no client's input is too long.
   */
  key?(request: R): string | undefined | Promise<string | undefined>;
  /** How many tokens the request takes from each limit; may be async. Default 1. */
  count?(request: R): number | Promise<number>;
  /** Which header fields to write; default `"draft-10"`. */
  headers?: HeaderDraft;
  /** The 429's body: a string is sent as text, anything else as JSON. Default: an RFC 9457 problem (`quota-exceeded`). */
  onRefused?(refusal: Refusal<R>): unknown;
  /** The 503's body when the limiter fails closed: a string is sent as text, anything else as JSON. Default: an RFC 9457 problem. */
  onUnavailable?(failure: Unavailable<R>): unknown;
  /** `Retry-After` of the 503, in whole seconds; default 5. */
  unavailableRetryAfter?: number;
  /**
   * Called with every store failure the guard meets: the error behind a 503, the `cause` of a
   * degraded admission, a refund that failed. Default: `console.error`. Your logger goes here
   * (Express's `next(error)` would render a 500 instead of the 503; Hono's `onError` is for errors that end a request).
   */
  onError?(error: GuardFailure, request: R): void;
  /**
   * Count only the requests that fail: each request takes its tokens before it runs (so
   * concurrent attempts are bounded too), and gets them back when its response is successful.
   * The brute-force defence for a login. Needs one limit per guard (stack a guard per limit).
   */
  refundSuccessful?: boolean;
  /** With `refundSuccessful`: whether a response status is a success; default `status < 400`. */
  successful?(status: number, request: R): boolean;
}

/** What the guard answers for one request. */
export type GuardResult =
  | {
      ok: true;
      /** The rate-limit header fields to add to the response (none for a degraded admission without figures). */
      headers: Headers;
      /** Each limit's figures (empty when none were computed). */
      limits: NamedFigures[];
      response?: undefined;
      /**
       * Tells the guard how the request ended: with `refundSuccessful`, a successful status gives the
       * tokens back. Await it (or hand it to `waitUntil`); a no-op otherwise. Never rejects (failures go to `onError`).
       */
      finish(response: Response | number): Promise<void>;
    }
  | {
      ok: false;
      /** The header fields the `response` carries. */
      headers: Headers;
      /** Each limit's figures (empty unless refused by a limit). */
      limits: NamedFigures[];
      /** Ready to return: the 429, the 503, or a 400. */
      response: Response;
      /** Whole seconds in `Retry-After` (absent for a 400). */
      retryAfter?: number;
      finish?: undefined;
    };

/** A decision made, before it becomes a `Response` or an Express answer. */
export interface Decision {
  /** Whether the request may proceed. */
  ok: boolean;
  /** When not ok: 429 (refused), 503 (the limiter failed closed) or 400 (the client's address is not one). */
  status?: 400 | 429 | 503;
  /** The rate-limit header fields (and, when not ok, `Retry-After`). */
  headers: HeaderPairs;
  /** Each limit's figures (empty when none were computed). */
  limits: NamedFigures[];
  /** When refused or unavailable: whole seconds, as in `Retry-After`. */
  retryAfter?: number;
  /** When not ok: the body and its content type. */
  body?: { text: string; contentType: string };
  /** When ok: tells the guard the response's status (refunds a successful one with `refundSuccessful`). Never rejects. */
  finish(status: number): Promise<void>;
}

/** A guard's validated plan: the limiter, the names, and the options. */
export interface Plan<R> {
  /** What decides: a `RateLimiter` or a `rateLimiterClient`. */
  limiter: DecidingLimiter;
  /** The guarding limits' names, in order. */
  names: string[];
  /** Per limit, in order: whether the request's key applies to it. */
  keyed: boolean[];
  /** `options.key`, when given. */
  key: ((request: R) => string | undefined | Promise<string | undefined>) | undefined;
  /** `options.count`, when given. */
  count: ((request: R) => number | Promise<number>) | undefined;
  /** Which header fields to write. */
  headers: HeaderDraft;
  /** `options.onRefused`, when given. */
  onRefused: ((refusal: Refusal<R>) => unknown) | undefined;
  /** `options.onUnavailable`, when given. */
  onUnavailable: ((failure: Unavailable<R>) => unknown) | undefined;
  /** `Retry-After` of a 503, whole seconds. */
  unavailableRetryAfter: number;
  /** Where store failures are reported. */
  onError: (error: GuardFailure, request: R) => void;
  /** Whether successful requests get their tokens back. */
  refundSuccessful: boolean;
  /** Whether a status is a success. */
  successful: (status: number, request: R) => boolean;
}

/** What the guard uses of a limiter: `limit` (with `figures`, and `grant` for refunds) and `limitAll`. */
interface DecidingLimiter {
  limit(name: string, options: { key?: string; count: number; figures: true; grant?: true }): Promise<FiguredResult>;
  limitAll(requests: ReadonlyArray<{ name: string; key?: string; count: number }>, options: { figures: true }): Promise<FiguredResult>;
}

/** A decision as `limit`/`limitAll` answer it with `figures: true`. */
interface FiguredResult {
  ok: boolean;
  retryAfter?: number;
  figures?: RateLimitFigures | RateLimitFigures[];
  /** Present when the limiter's failure policy decided without the store. */
  degraded?: string;
  cause?: unknown;
  grant?: { cancel(): Promise<unknown> };
}

const OPTIONS = ["key", "count", "headers", "onRefused", "onUnavailable", "unavailableRetryAfter", "onError", "refundSuccessful", "successful"];
const FUNCTIONS = ["key", "count", "onRefused", "onUnavailable", "onError", "successful"] as const;
const QUOTA_EXCEEDED = "https://iana.org/assignments/http-problem-types#quota-exceeded";
const DEFAULT_UNAVAILABLE_RETRY_AFTER = 5;

/**
 * Codes of errors that are the app's own doing (a bad config, an unknown limit, a count that can
 * never be granted, a bad argument): they reject, for the framework's 500. Any other error of the
 * limiter (a store error, `STORE_TIMEOUT`, a corrupt state, an unreachable Durable Object) means
 * it failed closed: a 503.
 */
const APP_ERRORS = new Set(["INVALID_CONFIG", "INVALID_REQUEST", "INVALID_ARGUMENT", "COUNT_EXCEEDS_MAX", "WAIT_UNBOUNDED", "UNKNOWN_LIMIT", "GRANT_SETTLED", "INVALID_RANDOM"]);

const config = (message: string) => new HttpGuardError("HTTP_GUARD_CONFIG", `ratebound/http: ${message}`);
const shown = (value: unknown) => (typeof value === "string" ? JSON.stringify(value) : typeof value === "function" ? "a function" : String(value));
const codeOf = (error: unknown): unknown => (typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined);

/**
 * What `onError` receives: always an `Error` (a store that threw something else is wrapped, the
 * thrown value as its `cause`), with the `code` ratebound's errors and most drivers carry.
 */
export type GuardFailure = Error & { readonly code?: unknown };

/** A thrown value as an `Error`, for `onError`: an `Error` as it is, anything else wrapped. */
function asFailure(error: unknown): GuardFailure {
  return error instanceof Error ? error : new Error(`the store threw a non-Error value: ${shown(error)}`, { cause: error });
}

/** The default `onError`: the console, as express-rate-limit's default logger. */
function logToConsole(error: GuardFailure): void {
  console.error("ratebound/http: the rate limiter's store failed", error);
}

/**
 * Checks a guard's arguments once, when it is made: every error names the option and what it was.
 *
 * @param who The function being made, for messages (`"httpGuard"`).
 * @param limiter A `RateLimiter` or a `rateLimiterClient`.
 * @param names A limit's name, or several.
 * @param given The guard's options.
 * @returns The plan every request is decided with.
 * @throws {HttpGuardError} `HTTP_GUARD_CONFIG`, naming the argument.
 * @example
 * const plan = makePlan("httpGuard", limiter, ["perUser", { name: "global", keyed: false }], { key: (r) => r.headers.get("x-user") ?? undefined });
 */
export function makePlan<R>(who: string, limiter: unknown, names: unknown, given: HttpGuardOptions<R> = {}): Plan<R> {
  if (typeof limiter !== "object" || limiter === null || typeof (limiter as { limitAll?: unknown }).limitAll !== "function") {
    throw config(`${who}(limiter, …) needs a RateLimiter (got ${limiter === null ? "null" : typeof limiter})`);
  }
  const entries: unknown[] = Array.isArray(names) ? names : [names];
  const isEntry = (entry: unknown) =>
    typeof entry === "string" ||
    (typeof entry === "object" && entry !== null && typeof (entry as { name?: unknown }).name === "string" && (entry as { keyed?: unknown }).keyed === false && Object.keys(entry).length === 2);
  if (entries.length === 0 || !entries.every(isEntry)) {
    throw config(`${who}(limiter, name) needs a limit's name, { name, keyed: false }, or a non-empty array of them (got ${JSON.stringify(names) ?? shown(names)})`);
  }
  const list = entries.map((entry) => (typeof entry === "string" ? entry : (entry as { name: string }).name));
  const keyed = entries.map((entry) => typeof entry === "string");
  const duplicate = list.find((name, index) => list.indexOf(name) !== index);
  if (duplicate !== undefined) throw config(`${who}: the limit ${JSON.stringify(duplicate)} is named twice`);
  if (typeof given !== "object" || given === null) throw config(`${who}: options must be an object (got ${shown(given)})`);
  const unknown = Object.keys(given).filter((field) => !OPTIONS.includes(field));
  if (unknown.length > 0) throw config(`${who}: unknown option ${unknown.map((field) => JSON.stringify(field)).join(", ")} (known: ${OPTIONS.join(", ")})`);
  // From here on only the caller's own fields are read: an inherited one never is.
  const options: Record<string, unknown> = Object.create(null);
  for (const field of OPTIONS) if (Object.hasOwn(given, field)) options[field] = (given as Record<string, unknown>)[field];
  for (const field of FUNCTIONS) {
    if (options[field] !== undefined && typeof options[field] !== "function") throw config(`${who}: options.${field} must be a function (got ${shown(options[field])})`);
  }
  const headers = (options.headers ?? "draft-10") as HeaderDraft;
  if (!HEADER_DRAFTS.includes(headers)) throw config(`${who}: options.headers must be one of ${HEADER_DRAFTS.join(", ")} (got ${shown(options.headers)})`);
  if ((headers === "draft-10" || headers === "draft-8") && !list.every(isPolicyName)) {
    throw config(`${who}: a policy name must be printable ASCII for headers ${headers} (got ${JSON.stringify(list.find((name) => !isPolicyName(name)))})`);
  }
  const retryAfter = options.unavailableRetryAfter ?? DEFAULT_UNAVAILABLE_RETRY_AFTER;
  if (!(typeof retryAfter === "number" && Number.isInteger(retryAfter) && retryAfter >= 0 && retryAfter <= 86_400)) {
    throw config(`${who}: options.unavailableRetryAfter must be whole seconds from 0 to 86400 (got ${shown(options.unavailableRetryAfter)})`);
  }
  const refund = options.refundSuccessful ?? false;
  if (typeof refund !== "boolean") throw config(`${who}: options.refundSuccessful must be a boolean (got ${shown(refund)})`);
  if (refund && list.length > 1) {
    throw config(`${who}: options.refundSuccessful takes one limit per guard (got ${list.length}: ${list.join(", ")}); stack one guard per limit`);
  }
  if (options.successful !== undefined && !refund) throw config(`${who}: options.successful is read only with refundSuccessful: true`);
  type Fn<A extends unknown[], T> = ((...args: A) => T) | undefined;
  return {
    limiter: limiter as DecidingLimiter,
    names: list,
    keyed,
    key: options.key as Fn<[R], string | undefined | Promise<string | undefined>>,
    count: options.count as Fn<[R], number | Promise<number>>,
    headers,
    onRefused: options.onRefused as Fn<[Refusal<R>], unknown>,
    onUnavailable: options.onUnavailable as Fn<[Unavailable<R>], unknown>,
    unavailableRetryAfter: retryAfter,
    onError: (options.onError as Fn<[GuardFailure, R], void>) ?? logToConsole,
    refundSuccessful: refund,
    successful: (options.successful as Fn<[number, R], boolean>) ?? ((status) => status < 400),
  };
}

/** The request's key, checked: a string or `undefined`. */
async function keyOf<R>(plan: Plan<R>, request: R): Promise<string | undefined> {
  if (plan.key === undefined) return undefined;
  const key = await plan.key(request);
  if (key !== undefined && typeof key !== "string") {
    throw new HttpGuardError("HTTP_GUARD_KEY", `ratebound/http: options.key(request) must give a string or undefined (got ${shown(key)})`);
  }
  return key === undefined ? undefined : storedKey(key);
}

/** The request's cost, checked here for a clear message (the core checks it again). */
async function countOf<R>(plan: Plan<R>, request: R): Promise<number> {
  if (plan.count === undefined) return 1;
  const count = await plan.count(request);
  if (typeof count !== "number" || !Number.isFinite(count) || count < 0) {
    throw new HttpGuardError("HTTP_GUARD_COUNT", `ratebound/http: options.count(request) must give a finite number >= 0 (got ${shown(count)})`);
  }
  return count;
}

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
  let result: FiguredResult;
  try {
    result =
      names.length === 1
        ? await limiter.limit(names[0]!, { key: keys[0], count, figures: true, ...(plan.refundSuccessful ? { grant: true as const } : {}) })
        : await limiter.limitAll(names.map((name, index) => ({ name, key: keys[index], count })), { figures: true });
  } catch (error) {
    const code = codeOf(error);
    if (error instanceof HttpGuardError || (typeof code === "string" && APP_ERRORS.has(code))) throw error;
    return await unavailable(plan, request, error);
  }
  if (result.degraded !== undefined) report(plan, result.cause, request);
  const figures = result.figures === undefined ? [] : Array.isArray(result.figures) ? result.figures : [result.figures];
  // A degraded admission may carry no figures (policy "open"): then no header is written, under every format.
  const limits: NamedFigures[] = figures.length === names.length ? names.map((name, index) => ({ name, key: keys[index], figures: figures[index]! })) : [];
  const headers = await rateLimitHeaders(plan.headers, limits);
  if (result.ok) {
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
    return { ok: true, headers, limits, finish };
  }
  // The limits that refused on their own carry a wait; a batch waits for the longest.
  const waits = limits.flatMap(({ figures }) => (figures.retryAfter === undefined ? [] : [figures.retryAfter]));
  const retryAfter = waits.length > 0 ? Math.max(...waits) : Math.ceil((result.retryAfter ?? 0) / 1000);
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
 * @param options `key(request)`, `count(request)`, `headers`, `onRefused`, `onUnavailable`,
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
export function httpGuard<Limits extends Record<string, RateLimitConfig>>(
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
    return { ok: true, headers: new Headers(decision.headers), limits: decision.limits, finish };
  };
}
