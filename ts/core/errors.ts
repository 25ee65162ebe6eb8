/**
 * The package's errors: a refusal that throws ({@link RateLimitError}), and
 * every failure of the core and its checks ({@link RateboundError}, one class
 * with a typed code). The core hands errors over as numbers (a code, a field,
 * a rule and up to three values); this module words them, so the
 * WebAssembly carries no formatter. Every message is built here, once.
 * @module
 */

import { CODES, FIELDS, OUT_FIELD, OUT_NUMBERS, OUT_RESERVE, OUT_RULE, OUT_STATUS, RULES, SENTENCES } from "./boundary.js";

/** What a refused call carries when it throws: the same shape as `@convex-dev/rate-limiter`'s `ConvexError` data. */
export type RateLimitErrorData = { kind: "RateLimited"; name: string; retryAfter: number };

/**
 * Thrown by `limit`, `check`, `limitAll` and `checkAll` with `throws: true` when the limit refuses.
 *
 * @example
 * try { await limiter.limit("sendMessage", { key, throws: true }); }
 * catch (error) { if (isRateLimitError(error)) console.log(error.data.retryAfter); }
 * @see {@link https://github.com/ratebound/ratebound/blob/main/docs/errors.md#rate_limited | docs/errors.md}: every code, what it means, what to do.
 */
export class RateLimitError extends Error {
  /** `"RATE_LIMITED"`: a refusal, not a failure (see `docs/errors.md`). */
  readonly code = "RATE_LIMITED";
  /** `{ kind: "RateLimited", name, retryAfter }`. */
  readonly data: RateLimitErrorData;

  /**
   * @param name The limit (or, for a batch, the limits) that refused.
   * @param retryAfter Milliseconds until a retry can succeed.
   */
  constructor(name: string, retryAfter: number) {
    super(`Rate limit ${JSON.stringify(name)} exceeded: retry after ${retryAfter} ms`);
    this.name = "RateLimitError";
    this.data = { kind: "RateLimited", name, retryAfter };
  }
}

/** `object[field]` if it is the object's own, else `undefined`; never throws. */
function ownValue(object: unknown, field: string): unknown {
  try {
    return typeof object === "object" && object !== null && Object.hasOwn(object, field) ? (object as Record<string, unknown>)[field] : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether `error` is a rate-limit refusal: a {@link RateLimitError}, or any error
 * (such as Convex's `ConvexError`) whose `data` is `{ kind: "RateLimited", name, retryAfter }`.
 *
 * @param error Anything caught.
 * @returns `true` when it is a refusal, narrowing `error.data`.
 * @example
 * if (isRateLimitError(error)) retryIn(error.data.retryAfter);
 */
export function isRateLimitError(error: unknown): error is { data: RateLimitErrorData } {
  if (error instanceof RateLimitError) return true;
  // Own fields only: a polluted Object.prototype.data must not make every error a refusal.
  const data = ownValue(error, "data");
  return ownValue(data, "kind") === "RateLimited" && typeof ownValue(data, "name") === "string" && typeof ownValue(data, "retryAfter") === "number";
}

/**
 * Every code a {@link RateboundError} (or, for `INVALID_ARGUMENT`, a {@link RateboundTypeError}) carries. Each is explained, with what to do, in
 * `docs/errors.md`.
 *
 * - `INVALID_CONFIG`: a limit's config is invalid (named, with the field).
 * - `INVALID_REQUEST`: an argument of one call is invalid (`count`, `key`, `now`, a grant's data…).
 * - `INVALID_ARGUMENT`: a constructor's or function's argument has the wrong shape.
 * - `COUNT_EXCEEDS_MAX`: the request asks more than the limit can ever grant.
 * - `WAIT_UNBOUNDED`: a reservation (or a settle's extra) so large no clock could repay it.
 * - `UNKNOWN_LIMIT`: no limit of that name, and no `config` inline.
 * - `CORRUPT_STATE`: a stored state is not two finite numbers.
 * - `INVALID_RANDOM`: the injected `random()` returned something outside `[0, 1)`.
 * - `RANDOM_UNAVAILABLE`: the runtime has no cryptographic random source and none was injected.
 * - `STORE_FULL`: a MemoryStore at its `maxKeys` could not make room without handing out tokens.
 * - `GRANT_SETTLED`: a grant was settled (or cancelled) already.
 * - `LEASE_LOST`: a concurrency lease to extend holds no slot any more (expired, released, or not this limit's).
 * - `STORE_MISMATCH`: a store that decides next to its data wrote other than the core decided.
 * - `WAIT_TOO_LONG`: `acquire`'s turn would come later than its `maxWait`; nothing was charged.
 * - `ABORTED`: `acquire`'s `signal` aborted the wait; its reservation was given back.
 * @see {@link https://github.com/ratebound/ratebound/blob/main/docs/errors.md#the-core-ratebounderror-rateboundtypeerror | docs/errors.md}: every code, what it means, what to do.
 */
export type RateboundErrorCode =
  | "INVALID_CONFIG"
  | "INVALID_REQUEST"
  | "INVALID_ARGUMENT"
  | "COUNT_EXCEEDS_MAX"
  | "WAIT_UNBOUNDED"
  | "UNKNOWN_LIMIT"
  | "CORRUPT_STATE"
  | "INVALID_RANDOM"
  | "RANDOM_UNAVAILABLE"
  | "STORE_FULL"
  | "GRANT_SETTLED"
  | "LEASE_LOST"
  | "STORE_MISMATCH"
  | "WAIT_TOO_LONG"
  | "ABORTED";

/**
 * A call that failed, as opposed to being refused: bad input, a request that
 * can never succeed, a corrupt state. Nothing was written. `code` tells the
 * cases apart; `field` names the field or argument when there is one.
 *
 * @example
 * try { await limiter.limit("upload", { count }); }
 * catch (error) {
 *   if (error instanceof RateboundError && error.code === "COUNT_EXCEEDS_MAX") return respond(413);
 *   throw error;
 * }
 * @see {@link https://github.com/ratebound/ratebound/blob/main/docs/errors.md#the-core-ratebounderror-rateboundtypeerror | docs/errors.md}: every code, what it means, what to do.
 */
export class RateboundError extends Error {
  /** What failed: see {@link RateboundErrorCode}. */
  readonly code: RateboundErrorCode;
  /** The field or argument at fault, when there is one (`"count"`, `"rate"`, `"key"`…). */
  readonly field: string | undefined;

  /**
   * @param code What failed.
   * @param message What happened, for people.
   * @param field The field or argument at fault.
   */
  constructor(code: RateboundErrorCode, message: string, field?: string) {
    super(message);
    this.name = "RateboundError";
    this.code = code;
    this.field = field;
  }
}

// ---------------------------------------------------------------------------------------------
// Showing values in messages.

/** Whether a string converts to UTF-8 without loss (no lone surrogate). */
const SURROGATE = /[\uD800-\uDFFF]/;
const LONE_SURROGATE = /(?:[\uD800-\uDBFF](?![\uDC00-\uDFFF]))|(?:(?<![\uD800-\uDBFF])[\uDC00-\uDFFF])/;
export const wellFormed: (text: string) => boolean =
  typeof (String.prototype as { isWellFormed?: unknown }).isWellFormed === "function"
    ? (text) => (text as string & { isWellFormed(): boolean }).isWellFormed()
    : (text) => !SURROGATE.test(text) || !LONE_SURROGATE.test(text);

/** A string as a JSON-like literal: quotes, backslashes and control characters escaped, so empty names and odd characters stay visible. */
export function quoted(text: string): string {
  let out = '"';
  for (const char of text) {
    const code = char.codePointAt(0)!;
    if (char === '"') out += '\\"';
    else if (char === "\\") out += "\\\\";
    else if (char === "\n") out += "\\n";
    else if (char === "\r") out += "\\r";
    else if (char === "\t") out += "\\t";
    else if (code < 0x20) out += `\\u00${code.toString(16).padStart(2, "0")}`;
    else out += char;
  }
  return `${out}"`;
}

/** A caller's string quoted, and cut after 64 characters so that a huge name never makes a huge message. */
export function shown(text: string): string {
  const characters = [...text];
  if (characters.length <= 64) return quoted(text);
  return `${quoted(characters.slice(0, 64).join(""))}… (${characters.length} characters)`;
}

/** A value as a message shows it: `-1`, `NaN`, `"10"`, `null`, `an object`. */
export function show(value: unknown): string {
  switch (typeof value) {
    case "undefined":
      return "undefined";
    case "boolean":
    case "number":
      return String(value);
    case "string":
      return wellFormed(value) ? shown(value) : "a string with a lone surrogate";
    case "function":
      return "a function";
    case "bigint":
      return "a bigint";
    case "symbol":
      return "a symbol";
    default:
      if (value === null) return "null";
      try {
        if (Array.isArray(value)) return "an array";
      } catch {
        // a revoked Proxy
      }
      return "an object";
  }
}

/** `{field} must be {rule} (got {value})`. */
export function mustBe(field: string, rule: string, got: unknown): string {
  return `${field} must be ${rule} (got ${show(got)})`;
}

/** `unknown {what} "{name}"{of} (the {plural} are …)`. */
export function unknownField(name: string, known: readonly string[], what = "field", of = ""): string {
  return `unknown ${what} ${shown(name)}${of} (the ${what}s are ${known.join(", ")})`;
}

// ---------------------------------------------------------------------------------------------
// The errors, by family.

/** Bad input to one call of the limit (or function) `limit`: `Rate limit "x": {problem}`. */
export function invalidRequest(limit: string, field: string, problem: string): RateboundError {
  return new RateboundError("INVALID_REQUEST", `Rate limit ${shown(limit)}: ${problem}`, field);
}

/** A config that is invalid, named (`Rate limit "x": …`) or not (`Invalid rate limit config: …`). */
export function invalidConfig(limit: string | undefined, field: string, problem: string): RateboundError {
  const prefix = limit === undefined ? "Invalid rate limit config" : `Rate limit ${shown(limit)}`;
  return new RateboundError("INVALID_CONFIG", `${prefix}: ${problem}`, field);
}

/**
 * An argument of the wrong shape (a store without methods, limits that are
 * not an object, an options object with an unknown field): a `TypeError`, as
 * JavaScript's own are, carrying `code: "INVALID_ARGUMENT"` and the `field`.
 *
 * @example
 * try { new RateLimiter(client, LIMITS); }
 * catch (error) { if (error instanceof RateboundTypeError) console.error(error.field, error.message); }
 * @see {@link https://github.com/ratebound/ratebound/blob/main/docs/errors.md#invalid_argument | docs/errors.md}: every code, what it means, what to do.
 */
export class RateboundTypeError extends TypeError {
  /** Always `"INVALID_ARGUMENT"`. */
  readonly code = "INVALID_ARGUMENT" as const;
  /** The argument or option at fault. */
  readonly field: string | undefined;

  /**
   * @param message What was wrong, for people.
   * @param field The argument or option at fault.
   */
  constructor(message: string, field?: string) {
    super(message);
    this.field = field;
  }
}

/**
 * Whether `error` is one of the package's own failures: a {@link RateboundError}
 * or a {@link RateboundTypeError}, narrowed so `error.code` can be switched on exhaustively.
 *
 * @param error Anything caught.
 * @returns `true` for the package's errors.
 * @example
 * if (isRateboundError(error)) switch (error.code) { case "COUNT_EXCEEDS_MAX": return respond(413); }
 */
export function isRateboundError(error: unknown): error is RateboundError | RateboundTypeError {
  return error instanceof RateboundError || error instanceof RateboundTypeError;
}

/**
 * An argument of the wrong shape: `{fn}: {field} must be {rule} (got …)`, code `INVALID_ARGUMENT`.
 *
 * @param fn The constructor or function called.
 * @param field The argument or option.
 * @param rule What it must be.
 * @param value What it was.
 * @returns The error, to throw.
 * @example
 * throw invalidArgument("RateLimitPreview", "now", "a function", now);
 */
export function invalidArgument(fn: string, field: string, rule: string, value: unknown): RateboundTypeError {
  return new RateboundTypeError(`${fn}: ${mustBe(field, rule, value)}`, field);
}

/** `{fn}: {message}`, code `INVALID_ARGUMENT`, for messages of other forms. */
export function wrongArgument(fn: string, field: string, message: string): RateboundTypeError {
  return new RateboundTypeError(`${fn}: ${message}`, field);
}

/** No limit of that name and no inline config. */
export function unknownLimit(name: string): RateboundError {
  return new RateboundError("UNKNOWN_LIMIT", `Rate limit ${shown(name)} is not defined: define it in the limits or pass \`config\` inline.`);
}

/** Where a corrupt state was found: a ref in the store, or a function's argument. */
export type Place = { name: string; key?: string | undefined; shard: number } | { passedTo: string };

/** A stored state that is not two finite numbers. */
export function corruptState(at: Place, problem: string): RateboundError {
  const where =
    "passedTo" in at
      ? `the state passed to ${at.passedTo}`
      : `rate limit ${quoted(at.name)}${at.key === undefined ? "" : ` key ${quoted(at.key)}`} shard ${at.shard}`;
  return new RateboundError("CORRUPT_STATE", `Stored state for ${where} is corrupt: ${problem}`);
}

/** The injected `random()` returned `got`. */
export function invalidRandom(got: unknown): RateboundError {
  return new RateboundError("INVALID_RANDOM", `random() must return a number in [0, 1) (got ${show(got)})`);
}

/** The runtime has no random source. */
export function randomUnavailable(): RateboundError {
  return new RateboundError("RANDOM_UNAVAILABLE", "No random numbers are available in this runtime; pass `random` in the limiter's options");
}

/** A MemoryStore at `maxKeys` with nothing to drop. */
export function storeFull(maxKeys: number): RateboundError {
  return new RateboundError(
    "STORE_FULL",
    `The MemoryStore holds its maxKeys (${maxKeys}) keys and none has fully refilled; dropping one would hand out tokens, so the call is refused`,
  );
}

/** A grant settled twice. */
export function grantSettled(limit: string): RateboundError {
  return new RateboundError("GRANT_SETTLED", `Rate limit ${shown(limit)}: this grant was settled already; a grant settles (or cancels) once, and nothing was written`);
}

/** A concurrency lease extended after it ended. */
export function leaseLost(limit: string): RateboundError {
  return new RateboundError(
    "LEASE_LOST",
    `Rate limit ${shown(limit)}: this lease holds no slot any more (it expired or was released); nothing was written, and its work no longer holds a slot`,
  );
}

// Waiting for a turn (`acquire`, `acquireAll`, `throttle`): codes of the TypeScript side only.

/** An acquire whose turn would come `wait` ms after it began, past its `maxWait`. */
export function waitTooLong(limit: string, wait: number, maxWait: number): RateboundError {
  return new RateboundError(
    "WAIT_TOO_LONG",
    `Rate limit ${shown(limit)}: the turn would come after ${Math.ceil(wait)} ms, more than maxWait ${maxWait} ms; nothing was charged`,
    "maxWait",
  );
}

/** An acquire whose `signal` aborted (its `reason` as `cause`). */
export function aborted(limit: string, reason: unknown): RateboundError {
  const error = new RateboundError("ABORTED", `Rate limit ${shown(limit)}: the wait was aborted by its signal; its reservation was given back`, "signal");
  error.cause = reason;
  return error;
}

// ---------------------------------------------------------------------------------------------
// The core's errors, from its numbers.

/** The kinds, at their numbers across the boundary (any other is refused by the core, naming `kind`). */
export const KINDS = ["token bucket", "fixed window", "sliding window"] as const;

/** What a call gave, from the number the core reports for it: `reserve` as a flag, `kind` by its number. */
function reported(field: string, got: number): unknown {
  if (field === "reserve") return got === 1;
  if (field === "kind") return KINDS[got] ?? got;
  return got;
}

/**
 * The core's error written at `out` (`-code`, field, rule, three numbers,
 * reserve: the `OUT_*` offsets), worded for the limit `limit` from the
 * core's tables (generated from `src/error.rs`). `given` shows what the caller gave
 * for a field when it was not a number (a config's raw field, say).
 */
export function coreError(io: Float64Array, out: number, limit: string | undefined, given?: (field: string) => unknown): RateboundError {
  const code = CODES[-io[out + OUT_STATUS]!] || "INVALID_REQUEST";
  const field = FIELDS[io[out + OUT_FIELD]!] ?? "";
  const rule = io[out + OUT_RULE]!;
  const numbers = [io[out + OUT_NUMBERS]!, io[out + OUT_NUMBERS + 1]!, io[out + OUT_NUMBERS + 2]!];
  const name = limit ?? "";
  switch (code) {
    case "COUNT_EXCEEDS_MAX": {
      const [count, max, shards] = numbers as [number, number, number];
      const bound = io[out + OUT_RESERVE] === 1 ? max.toFixed(2) : String(max);
      return new RateboundError(code, `Rate limit ${name} count ${count} exceeds ${bound}${shards > 1 ? ` per ${shards} shards.` : "."}`, "count");
    }
    case "WAIT_UNBOUNDED":
      return new RateboundError(
        code,
        `Rate limit ${shown(name)}: count ${numbers[0]} would never be due (its wait is not a finite number of ms); nothing was written`,
        "count",
      );
    case "INVALID_RANDOM":
      return invalidRandom(numbers[0]);
    case "GRANT_SETTLED":
      return grantSettled(name);
    case "LEASE_LOST":
      return leaseLost(name);
    default: {
      const got = given !== undefined && Number.isNaN(numbers[0]) ? given(field) : reported(field, numbers[0]!);
      const sentence = SENTENCES[rule];
      const problem = sentence ? sentence.replace(/\{([012])\}/g, (_, index: string) => String(numbers[Number(index)])) : mustBe(field, RULES[rule] ?? "", got);
      return code === "INVALID_CONFIG" ? invalidConfig(limit, field, problem) : invalidRequest(name, field, problem);
    }
  }
}
