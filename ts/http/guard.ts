/**
 * The guard of `ratebound/http`: one request is decided with `limit` (one limit) or `limitAll` (several: all
 * consumed or none); the header fields are written from the core's
 * `rateLimitFigures`, read with `getValue` after the decision. A refusal is a
 * ready `429 Too Many Requests` with `Retry-After` in whole seconds, never
 * shorter than the core's wait. Errors (a throwing store, a bad key, an
 * unknown limit) reject: the request is never let through by a failure.
 * @module
 */
import { rateLimitFigures, type RateLimitConfig, type RateLimiter, type RateLimitResult } from "ratebound";
import type { RateLimiterClient } from "../stores/durable-object.js";
import { HEADER_DRAFTS, isPolicyName, rateLimitHeaders, type HeaderDraft, type HeaderPairs, type NamedFigures } from "./headers.js";
import { ownCopy } from "../stores/shared/options.js";

/** What a guard decides with: a `RateLimiter`, or a Durable Object's `rateLimiterClient`. */
export type GuardedLimiter<Limits extends Record<string, RateLimitConfig>> = RateLimiter<Limits> | RateLimiterClient<Limits>;

/** One guarding limit: its name, or `{ name, keyed: false }` for a limit shared by every key (a global one). */
export type GuardedLimit<Limits> = Extract<keyof Limits, string> | { name: Extract<keyof Limits, string>; keyed: false };

/** A guard's limits: one, or several (all consumed or none). */
export type GuardedNames<Limits> = GuardedLimit<Limits> | ReadonlyArray<GuardedLimit<Limits>>;


/** Why the guard failed: a bad option when it was made, or a bad `key` or `count` for one request. */
export type HttpGuardErrorCode = "HTTP_GUARD_CONFIG" | "HTTP_GUARD_KEY" | "HTTP_GUARD_COUNT";

/**
 * A guard that could not decide: made with bad options (thrown by
 * {@link httpGuard}), or given a request whose `key` or `count` is not usable
 * (the request's promise rejects; nothing was written).
 *
 * @example
 * try { httpGuard(limiter, "api", { headers: "draft-9" as never }); }
 * catch (error) { console.log((error as HttpGuardError).code); } // "HTTP_GUARD_CONFIG"
 */
export class HttpGuardError extends Error {
  /** What was wrong. */
  readonly code: HttpGuardErrorCode;

  /**
   * @param code What was wrong.
   * @param message Which option or value, and what it was.
   */
  constructor(code: HttpGuardErrorCode, message: string) {
    super(message);
    this.name = "HttpGuardError";
    this.code = code;
  }
}

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

/** Options of {@link httpGuard} (and of the Hono and Express middleware, with their own request type). */
export interface HttpGuardOptions<R> {
  /** The request's key (user, API key, IP); may be async. `undefined` (the default) makes one limit for everyone. */
  key?: (request: R) => string | undefined | Promise<string | undefined>;
  /** How many tokens the request takes from each limit; may be async. Default 1. */
  count?: (request: R) => number | Promise<number>;
  /** Which header fields to write; default `"draft-10"`. */
  headers?: HeaderDraft;
  /** The 429's body: a string is sent as text, anything else as JSON. Default: an RFC 9457 problem (`quota-exceeded`). */
  onRefused?: (refusal: Refusal<R>) => unknown;
  /** How many shards of a sharded limit the figures rest on (`getValue`'s `sampleShards`); default 1. */
  sampleShards?: number;
  /** The clock the figures are read at; pass the limiter's own `now` when you inject one. Default `Date.now`. */
  now?: () => number;
}

/** What the guard answers for one request. */
export type GuardResult =
  | { ok: true; headers: Headers; limits: NamedFigures[]; response?: undefined }
  | { ok: false; headers: Headers; limits: NamedFigures[]; response: Response; retryAfter: number };

/** A decision made, before it becomes a `Response` or an Express answer. */
export interface Decision {
  /** Whether the request may proceed. */
  ok: boolean;
  /** The rate-limit header fields (and, when refused, `Retry-After`). */
  headers: HeaderPairs;
  /** Each limit's figures (empty when allowed with `headers: "none"`). */
  limits: NamedFigures[];
  /** When refused: whole seconds, as in `Retry-After`. */
  retryAfter?: number;
  /** When refused: the body and its content type. */
  body?: { text: string; contentType: string };
}

/** A guard's validated plan: the limiter, the names, and the options. */
export interface Plan<R> {
  /** What decides: a `RateLimiter` or a `rateLimiterClient`. */
  limiter: RateLimiter<Record<string, RateLimitConfig>>;
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
  /** `getValue`'s `sampleShards`, when given. */
  sampleShards: number | undefined;
  /** The clock the figures are read at. */
  now: () => number;
}

const OPTIONS = ["key", "count", "headers", "onRefused", "sampleShards", "now"];
const FUNCTIONS = ["key", "count", "onRefused", "now"] as const;
const QUOTA_EXCEEDED = "https://iana.org/assignments/http-problem-types#quota-exceeded";

const config = (message: string) => new HttpGuardError("HTTP_GUARD_CONFIG", `ratebound/http: ${message}`);
const shown = (value: unknown) => (typeof value === "string" ? JSON.stringify(value) : typeof value === "function" ? "a function" : String(value));

/**
 * Checks a guard's arguments once, when it is made: every error names the option and what it was.
 *
 * @param who The function being made, for messages (`"httpGuard"`).
 * @param limiter A `RateLimiter`.
 * @param names A limit's name, or several.
 * @param options The guard's options.
 * @returns The plan every request is decided with.
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
  const options = ownCopy(who, given, OPTIONS);
  for (const field of FUNCTIONS) {
    if (options[field] !== undefined && typeof options[field] !== "function") throw config(`${who}: options.${field} must be a function (got ${shown(options[field])})`);
  }
  const headers = options.headers ?? "draft-10";
  if (!HEADER_DRAFTS.includes(headers)) throw config(`${who}: options.headers must be one of ${HEADER_DRAFTS.join(", ")} (got ${shown(options.headers)})`);
  if ((headers === "draft-10" || headers === "draft-8") && !list.every(isPolicyName)) {
    throw config(`${who}: a policy name must be printable ASCII for headers ${headers} (got ${JSON.stringify(list.find((name) => !isPolicyName(name)))})`);
  }
  const { sampleShards } = options;
  if (sampleShards !== undefined && !(Number.isInteger(sampleShards) && sampleShards >= 1)) {
    throw config(`${who}: options.sampleShards must be a whole number >= 1 (got ${shown(sampleShards)})`);
  }
  return {
    limiter: limiter as Plan<R>["limiter"],
    names: list,
    keyed,
    key: options.key,
    count: options.count,
    headers,
    onRefused: options.onRefused,
    sampleShards,
    now: options.now ?? Date.now,
  };
}

/** The request's key, checked: a string or `undefined`. */
async function keyOf<R>(plan: Plan<R>, request: R): Promise<string | undefined> {
  if (plan.key === undefined) return undefined;
  const key = await plan.key(request);
  if (key !== undefined && typeof key !== "string") {
    throw new HttpGuardError("HTTP_GUARD_KEY", `ratebound/http: options.key(request) must give a string or undefined (got ${shown(key)})`);
  }
  return key;
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

/** The names that refuse on their own, checked now (a batch refusal does not say which). */
async function violated<R>(plan: Plan<R>, key: string | undefined, count: number): Promise<string[]> {
  if (plan.names.length === 1) return plan.names;
  const checks = await Promise.all(plan.names.map((name, index) => plan.limiter.check(name, { key: plan.keyed[index] ? key : undefined, count })));
  const refusing = plan.names.filter((_, index) => !checks[index]!.ok);
  return refusing.length > 0 ? refusing : plan.names;
}

/** The refusal's body: the user's, or an RFC 9457 problem naming the limits that refused. */
async function refusedBody<R>(plan: Plan<R>, refusal: Refusal<R>, key: string | undefined, count: number): Promise<Decision["body"]> {
  if (plan.onRefused !== undefined) {
    const body = await plan.onRefused(refusal);
    return typeof body === "string"
      ? { text: body, contentType: "text/plain; charset=utf-8" }
      : { text: JSON.stringify(body ?? null), contentType: "application/json; charset=utf-8" };
  }
  const problem = {
    type: QUOTA_EXCEEDED,
    title: "Too Many Requests",
    status: 429,
    detail: `Retry after ${refusal.retryAfter} s.`,
    "violated-policies": await violated(plan, key, count),
  };
  return { text: JSON.stringify(problem), contentType: "application/problem+json" };
}

/**
 * Decides one request: consumes its count from every limit (all or none),
 * then reads each limit's figures for the headers. Rejects on any failure.
 *
 * @param plan From {@link makePlan}.
 * @param request What `key` and `count` are given.
 * @returns The decision, with its header fields and, when refused, its body.
 * @example
 * const decision = await decide(plan, request);
 * if (!decision.ok) return new Response(decision.body!.text, { status: 429 });
 */
export async function decide<R>(plan: Plan<R>, request: R): Promise<Decision> {
  const key = await keyOf(plan, request);
  const count = await countOf(plan, request);
  const { limiter, names } = plan;
  const keys = plan.keyed.map((keyed) => (keyed ? key : undefined));
  const result: RateLimitResult =
    names.length === 1
      ? await limiter.limit(names[0]!, { key: keys[0], count })
      : await limiter.limitAll(names.map((name, index) => ({ name, key: keys[index], count })));
  if (result.ok && plan.headers === "none") return { ok: true, headers: [], limits: [] };
  const reports = await Promise.all(names.map((name, index) => limiter.getValue(name, { key: keys[index], sampleShards: plan.sampleShards })));
  const now = plan.now();
  const wait = result.ok ? undefined : result.retryAfter;
  const limits: NamedFigures[] = names.map((name, index) => ({ name, key: keys[index], figures: rateLimitFigures(reports[index]!, now, wait, plan.sampleShards) }));
  const headers = await rateLimitHeaders(plan.headers, limits);
  if (result.ok) return { ok: true, headers, limits };
  const retryAfter = limits[0]!.figures.retryAfter!;
  headers.unshift(["Retry-After", String(retryAfter)]);
  const body = await refusedBody(plan, { request, names, retryAfter, limits }, key, count);
  return { ok: false, headers, limits, retryAfter, body };
}

/**
 * A guard for fetch-standard handlers: decides each request against one limit
 * or several (all consumed or none) and gives the headers to send.
 *
 * @param limiter The `RateLimiter` (or `rateLimiterClient`) whose named limits guard the requests.
 * @param name A limit's name, or several (one `RateLimit` header with a policy each); `{ name, keyed: false }` for a limit all keys share.
 * @param options `key(request)`, `count(request)`, `headers`, `onRefused`, `sampleShards`, `now`.
 * @returns `async (request) => ({ ok, headers, limits, response? })`: when refused, `response` is a ready 429.
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
    const headers = new Headers(decision.headers);
    if (decision.ok) return { ok: true, headers, limits: decision.limits };
    const responseHeaders = new Headers(decision.headers);
    responseHeaders.set("Content-Type", decision.body!.contentType);
    const response = new Response(decision.body!.text, { status: 429, statusText: "Too Many Requests", headers: responseHeaders });
    return { ok: false, headers, limits: decision.limits, response, retryAfter: decision.retryAfter! };
  };
}
