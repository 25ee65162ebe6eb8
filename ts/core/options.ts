/**
 * Reading the options of a call: own fields only, each checked by the core
 * when anything about them is off, and the one-number answer of the
 * MemoryStore fast path read back into a result.
 * @module
 */
import type { ConcurrencyConfig, RateLimitConfig, RateLimitResult } from "./types.js";
import { invalidRequest, mustBe, RateboundError, RateLimitError, unknownField, wrongArgument } from "./errors.js";

/** Options of `limit` and `check`. */
export interface LimitOptions {
  /** Whose limit: a user, a team, an IP. Omit for the limit's one shared state. */
  key?: string;
  /** Tokens to consume, a finite number `>= 0`; default 1. */
  count?: number;
  /** Go into debt instead of being refused, and get `retryAfter` for when to run. */
  reserve?: boolean;
  /** Throw a {@link RateLimitError} instead of returning `{ ok: false }`. */
  throws?: boolean;
  /**
   * Decide as a dry run (as the limit's own `dryRun: true` does): never refused, never thrown;
   * the answer is `ok: true` with `dryRun`, what enforcing would have answered.
   */
  dryRun?: boolean;
  /** A config for a limit not named when the limiter was made. */
  config?: LimitConfig;
  /**
   * `limit` only: answer with a `Grant` handle when granted, to settle
   * to what was really used or cancel. Off by default: plain grants stay free.
   */
  grant?: boolean;
  /**
   * Answer with the limit's `figures` (quota, remaining, reset, window, and a
   * refusal's Retry-After in whole seconds), computed by the core from the
   * decision itself: what HTTP headers show, with no second round trip.
   * With `grant: true`, the figures of the grant's charge.
   */
  figures?: boolean;
}

/** Options of `settle`. */
export interface SettleOptions {
  /** The config, when the grant's limit was passed inline rather than named. */
  config?: LimitConfig;
}

/** Options of `getValue`. */
export interface GetValueOptions {
  /** Whose limit; omit for the shared state. */
  key?: string;
  /** How many shards to sample for a sharded limit (default 1). */
  sampleShards?: number;
  /** A config for a limit not named when the limiter was made. */
  config?: LimitConfig;
}

/** Options of `reset`. */
export interface ResetOptions {
  /** Whose limit; omit for the shared state. */
  key?: string;
  /** A config for a limit not named when the limiter was made. */
  config?: LimitConfig;
}

/** One limit of a `limitAll` / `checkAll` batch. */
export interface BatchRequest<Name extends string = string> {
  /** The limit's name. */
  name: Name;
  /** Whose limit; omit for the shared state. */
  key?: string;
  /** Tokens to consume; default 1. */
  count?: number;
  /** Reserve instead of being refused. */
  reserve?: boolean;
  /** A config for a limit not named when the limiter was made. */
  config?: LimitConfig;
}

export type Named<Limits> = Extract<keyof Limits, string>;

const LIMIT_OPTIONS = ["key", "count", "reserve", "throws", "config", "grant", "figures", "dryRun"];
export const SETTLE_OPTIONS = ["config"];
export const VALUE_OPTIONS = ["key", "sampleShards", "config"];
export const RESET_OPTIONS = ["key", "config"];
export const BATCH_OPTIONS = ["throws", "figures", "dryRun"];

/**
 * Checks the caller's options: a plain object whose own fields are all
 * known, with a boolean `throws`. When they are not, the core explains what
 * is wrong (an INVALID_REQUEST naming it). Fields are then read with
 * {@link own}, so an inherited one (a polluted `Object.prototype.count`, say)
 * is never read.
 */
export function checkedOptions(name: unknown, options: unknown, allowed: readonly string[]): object {
  if (options === undefined) return NO_OPTIONS;
  let plain = typeof options === "object" && options !== null && !Array.isArray(options);
  if (plain) {
    for (const field in options as object) {
      if (!allowed.includes(field) && Object.hasOwn(options as object, field)) plain = false;
    }
    const throws = own(options as object, "throws");
    if (throws !== undefined && typeof throws !== "boolean") plain = false;
  }
  if (!plain) checkOptions(name, options, allowed);
  return options as object;
}

const NO_OPTIONS: object = Object.freeze(Object.create(null) as object);

/**
 * The fields of `limit` and `check` options, as given (unchecked values).
 * Every field is the instance's own, so a polluted `Object.prototype` can
 * never show through, and instances keep one fast shape.
 */
export class LimitFields {
  key: unknown = undefined;
  count: unknown = undefined;
  reserve: unknown = undefined;
  config: unknown = undefined;
  grant: unknown = undefined;
  figures: unknown = undefined;
  dryRun: unknown = undefined;
  throws: boolean | undefined = undefined;
}

const NO_FIELDS: LimitFields = Object.freeze(new LimitFields());

/**
 * Reads `limit`/`check` options in one pass over their own enumerable
 * fields: an inherited field is never read, and anything else wrong (an
 * unknown own field, a non-object, a non-boolean `throws`) is explained by
 * the core as an INVALID_REQUEST naming it.
 */
export function limitFields(name: string, options: unknown): LimitFields {
  if (options === undefined) return NO_FIELDS;
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    checkOptions(name, options, LIMIT_OPTIONS);
  }
  const fields = new LimitFields();
  const given = options as Record<string, unknown>;
  for (const field in given) {
    if (!Object.hasOwn(given, field)) continue;
    switch (field) {
      case "key":
        fields.key = given.key;
        break;
      case "count":
        fields.count = given.count;
        break;
      case "reserve":
        fields.reserve = given.reserve;
        break;
      case "config":
        fields.config = given.config;
        break;
      case "grant":
        fields.grant = given.grant;
        break;
      case "figures":
        fields.figures = given.figures;
        break;
      case "dryRun":
        fields.dryRun = given.dryRun;
        break;
      case "throws":
        if (given.throws !== undefined && typeof given.throws !== "boolean") checkOptions(name, options, LIMIT_OPTIONS);
        fields.throws = given.throws as boolean | undefined;
        break;
      default:
        checkOptions(name, options, LIMIT_OPTIONS);
    }
  }
  return fields;
}

/** `object[field]` if it is the object's own, else `undefined`. */
export function own<T = unknown>(object: object, field: string): T | undefined {
  return Object.hasOwn(object, field) ? ((object as Record<string, unknown>)[field] as T) : undefined;
}
/**
 * What a call does when the store fails (throws, rejects, or exceeds `timeout`):
 * - `"closed"` (default): the call rejects with the store's error, as ever.
 * - `"open"`: the call resolves `{ ok: true, degraded, cause }`.
 * - `{ fallback: "memory", maxKeys? }`: the call is decided on a local MemoryStore
 *   with the same limits, so one instance never admits more than the limit's own
 *   bound during the outage; its result carries `degraded` and `cause`.
 *
 * @example
 * const policy: StoreErrorPolicy = { fallback: "memory", maxKeys: 50_000 };
 */
export type StoreErrorPolicy = "closed" | "open" | { fallback: "memory"; maxKeys?: number };

/**
 * A limit's config as a `RateLimiter` takes it: the core's, plus its own failure policy and
 * `dryRun` (decided and reported, never refused: see docs/concepts.md).
 *
 * @example
 * const search: LimitConfig = { kind: "token bucket", rate: 100, period: MINUTE, onStoreError: "open" };
 */
export type LimitConfig = RateLimitConfig & { onStoreError?: StoreErrorPolicy; dryRun?: boolean };

/** A named limit of a `RateLimiter`: a rate limit, or a concurrency limit (which answers leases). */
export type NamedLimitConfig = LimitConfig | ConcurrencyConfig;

export type Inline = { config: LimitConfig };

export function refusal(name: string, result: RateLimitResult, throws: boolean | undefined): RateLimitResult {
  if (throws === true && !result.ok) throw new RateLimitError(name, result.retryAfter);
  return result;
}

/** Whether `value` is an array (false when asking throws: a revoked Proxy). */
function isArray(value: unknown): boolean {
  try {
    return Array.isArray(value);
  } catch {
    return false;
  }
}

/**
 * Explains what is wrong with the options of a call of the limit `name`
 * (called only when a quick look found something): they must be an object
 * whose own enumerable fields are all `allowed`, with a boolean `throws`.
 *
 * @param name The limit (or function) the options belong to.
 * @param options What the caller passed.
 * @param allowed The options it takes.
 */
export function checkOptions(name: unknown, options: unknown, allowed: readonly string[]): never | void {
  const limit = typeof name === "string" ? name : "";
  if (typeof options !== "object" || options === null || isArray(options)) {
    throw invalidRequest(limit, "options", mustBe("options", "an object", options));
  }
  let fields: string[];
  try {
    fields = Object.keys(options);
  } catch {
    throw invalidRequest(limit, "options", "options must be a plain object (listing its fields threw) (got an object)");
  }
  for (const field of fields) {
    if (!allowed.includes(field)) throw invalidRequest(limit, field, unknownField(field, allowed, "option"));
  }
  let throws: unknown;
  try {
    throws = Object.hasOwn(options, "throws") ? (options as { throws?: unknown }).throws : undefined;
  } catch {
    throws = undefined;
  }
  if (throws !== undefined && typeof throws !== "boolean") throw invalidRequest(limit, "throws", mustBe("throws", "a boolean", throws));
}

/**
 * The own fields of an options object, in the order of `known` (an inherited
 * field is never read); `undefined` reads as no options. Anything else is an
 * `INVALID_ARGUMENT` naming `fn`. For adapters and the subpath modules.
 *
 * @param fn The constructor or function the options belong to.
 * @param options What the caller passed.
 * @param known The options it takes.
 * @returns Their values, `undefined` where absent.
 * @example
 * const [prefix, timeoutMs] = ownOptions("redisStore", options, ["prefix", "timeoutMs"]);
 */
export function ownOptions(fn: string, options: unknown, known: readonly string[]): unknown[] {
  const found: unknown[] = known.map(() => undefined);
  if (options === undefined) return found;
  if (typeof options !== "object" || options === null || isArray(options)) throw wrongArgument(fn, "options", mustBe("options", "an object", options));
  let fields: string[];
  try {
    fields = Object.keys(options);
  } catch {
    throw wrongArgument(fn, "options", "options must be a plain object (listing its fields threw) (got an object)");
  }
  for (const field of fields) {
    const slot = known.indexOf(field);
    if (slot < 0) throw wrongArgument(fn, field, unknownField(field, known, "option"));
    try {
      found[slot] = (options as Record<string, unknown>)[field];
    } catch {
      throw wrongArgument(fn, "options", "options must be a plain object (reading a field threw) (got an object)");
    }
  }
  return found;
}

/** Whether `value` is a plain object: made by `{…}` or `Object.create(null)`, not an array, a `Map`, a class instance. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || isArray(value)) return false;
  try {
    const prototype = Object.getPrototypeOf(value);
    return prototype === null || Object.getPrototypeOf(prototype) === null;
  } catch {
    return false;
  }
}

export { RateboundError };
