/**
 * A guard's plan: its options, checked once when the guard is made, and the
 * request's key and count, checked for each request. What `ratebound/http`'s
 * guards ({@link makePlan}'s callers: `httpGuard`, `honoRateLimit`,
 * `expressRateLimit`) share before they decide.
 * @module
 */
import type { ConcurrencyConfig, RateLimitConfig, RateLimiter, RateLimitFigures } from "ratebound";
import type { RateLimiterClient } from "../core/limiter-client.js";
import { HttpGuardError } from "./errors.js";
import { HEADER_DRAFTS, isPolicyName, QUOTA_UNITS, type HeaderDraft, type NamedFigures, type QuotaUnit } from "./headers.js";
import { storedKey } from "./key.js";

/** What a guard decides with: a `RateLimiter`, or a Durable Object's `rateLimiterClient`. */
export type GuardedLimiter<Limits extends Record<string, RateLimitConfig | ConcurrencyConfig>> = RateLimiter<Limits> | RateLimiterClient<Limits>;

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
  /** What the limits' tokens count, written as draft-11's `qu` unless `"requests"` (the default). */
  quotaUnit?: QuotaUnit;
  /**
   * Decide and report, never refuse: a request the limits would refuse proceeds (`ok: true`, never a
   * 429), its answer's `dryRun` says what would have happened, the header fields show the would-be
   * refusal's figures, and the limiter's `onDecision` sees it (`dryRun: "refused"`). A granted request
   * is charged as usual; a would-be refusal charges nothing, as a refusal does.
   */
  dryRun?: boolean;
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
  /** draft-11's quota unit. */
  quotaUnit: QuotaUnit;
  /** Whether the guard only reports (never refuses). */
  dryRun: boolean;
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
export interface DecidingLimiter {
  limit(name: string, options: { key?: string; count: number; figures: true; grant?: true; dryRun?: true }): Promise<FiguredResult>;
  limitAll(requests: ReadonlyArray<{ name: string; key?: string; count: number }>, options: { figures: true; dryRun?: true }): Promise<FiguredResult>;
}

/** A decision as `limit`/`limitAll` answer it with `figures: true`. */
export interface FiguredResult {
  ok: boolean;
  retryAfter?: number;
  figures?: RateLimitFigures | RateLimitFigures[];
  /** Present when the limiter's failure policy decided without the store. */
  degraded?: string;
  cause?: unknown;
  grant?: { cancel(): Promise<unknown> };
  /** Present when a limit decided in dry run: what enforcing would have answered. */
  dryRun?: { ok: boolean; retryAfter?: number };
}

const OPTIONS = ["key", "count", "headers", "quotaUnit", "dryRun", "onRefused", "onUnavailable", "unavailableRetryAfter", "onError", "refundSuccessful", "successful"];
const FUNCTIONS = ["key", "count", "onRefused", "onUnavailable", "onError", "successful"] as const;
const DEFAULT_UNAVAILABLE_RETRY_AFTER = 5;

/** The limiter's limit names when it can list them (a `RateLimiter`), else `undefined`. */
function limitNamesOf(limiter: object): readonly string[] | undefined {
  let names: unknown;
  try {
    names = (limiter as { limitNames?: unknown }).limitNames;
  } catch {
    return undefined;
  }
  return Array.isArray(names) && names.every((name) => typeof name === "string") ? names : undefined;
}

const config = (message: string) => new HttpGuardError("HTTP_GUARD_CONFIG", `ratebound/http: ${message}`);
const shown = (value: unknown) => (typeof value === "string" ? JSON.stringify(value) : typeof value === "function" ? "a function" : String(value));

/**
 * What `onError` receives: always an `Error` (a store that threw something else is wrapped, the
 * thrown value as its `cause`), with the `code` ratebound's errors and most drivers carry.
 */
export type GuardFailure = Error & { readonly code?: unknown };

/** A thrown value as an `Error`, for `onError`: an `Error` as it is, anything else wrapped. */
export function asFailure(error: unknown): GuardFailure {
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
  // A RateLimiter lists its limits: a name it does not have would fail every request. A
  // rateLimiterClient (a Durable Object's) cannot list them synchronously: its unknown name fails per request.
  const known = limitNamesOf(limiter);
  const missing = known === undefined ? undefined : list.find((name) => !known.includes(name));
  if (missing !== undefined) {
    throw config(`${who}: the limiter has no limit ${JSON.stringify(missing)} (its limits: ${known!.length === 0 ? "none" : known!.map((name) => JSON.stringify(name)).join(", ")})`);
  }
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
  if ((headers === "draft-11" || headers === "draft-10" || headers === "draft-8") && !list.every(isPolicyName)) {
    throw config(`${who}: a policy name must be printable ASCII for headers ${headers} (got ${JSON.stringify(list.find((name) => !isPolicyName(name)))})`);
  }
  const quotaUnit = (options.quotaUnit ?? "requests") as QuotaUnit;
  if (!QUOTA_UNITS.includes(quotaUnit)) throw config(`${who}: options.quotaUnit must be one of ${QUOTA_UNITS.join(", ")} (got ${shown(options.quotaUnit)})`);
  const dryRun = options.dryRun ?? false;
  if (typeof dryRun !== "boolean") throw config(`${who}: options.dryRun must be a boolean (got ${shown(dryRun)})`);
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
    quotaUnit,
    dryRun,
    onRefused: options.onRefused as Fn<[Refusal<R>], unknown>,
    onUnavailable: options.onUnavailable as Fn<[Unavailable<R>], unknown>,
    unavailableRetryAfter: retryAfter,
    onError: (options.onError as Fn<[GuardFailure, R], void>) ?? logToConsole,
    refundSuccessful: refund,
    successful: (options.successful as Fn<[number, R], boolean>) ?? ((status) => status < 400),
  };
}

/** The request's key, checked: a string or `undefined`. */
export async function keyOf<R>(plan: Plan<R>, request: R): Promise<string | undefined> {
  if (plan.key === undefined) return undefined;
  const key = await plan.key(request);
  if (key !== undefined && typeof key !== "string") {
    throw new HttpGuardError("HTTP_GUARD_KEY", `ratebound/http: options.key(request) must give a string or undefined (got ${shown(key)})`);
  }
  return key === undefined ? undefined : storedKey(key);
}

/** The request's cost, checked here for a clear message (the core checks it again). */
export async function countOf<R>(plan: Plan<R>, request: R): Promise<number> {
  if (plan.count === undefined) return 1;
  const count = await plan.count(request);
  if (typeof count !== "number" || !Number.isFinite(count) || count < 0) {
    throw new HttpGuardError("HTTP_GUARD_COUNT", `ratebound/http: options.count(request) must give a finite number >= 0 (got ${shown(count)})`);
  }
  return count;
}
