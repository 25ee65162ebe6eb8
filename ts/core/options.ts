/**
 * Reading the options of a call: own fields only, each checked by the core
 * when anything about them is off, and the one-number answer of the
 * MemoryStore fast path read back into a result.
 * @module
 */
import { checkOptions } from "../wasm/ratebound.js";
import type { RateLimitConfig, RateLimitResult } from "../wasm/ratebound.js";
import { RateLimitError } from "./errors.js";
import type { Grant } from "./grant.js";

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
  /** A config for a limit not named when the limiter was made. */
  config?: LimitConfig;
  /**
   * `limit` only: answer with a {@link Grant} handle when granted, to settle
   * to what was really used or cancel. Off by default: plain grants stay free.
   */
  grant?: boolean;
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

const LIMIT_OPTIONS = ["key", "count", "reserve", "throws", "config", "grant"];
export const SETTLE_OPTIONS = ["config"];
export const VALUE_OPTIONS = ["key", "sampleShards", "config"];
export const RESET_OPTIONS = ["key", "config"];
export const BATCH_OPTIONS = ["throws"];

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
  if (!plain) checkOptions(name, options, allowed.join(","));
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
    checkOptions(name, options, LIMIT_OPTIONS.join(","));
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
      case "throws":
        if (given.throws !== undefined && typeof given.throws !== "boolean") checkOptions(name, options, LIMIT_OPTIONS.join(","));
        fields.throws = given.throws as boolean | undefined;
        break;
      default:
        checkOptions(name, options, LIMIT_OPTIONS.join(","));
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
 * A limit's config as a `RateLimiter` takes it: the core's, plus its own failure policy.
 *
 * @example
 * const search: LimitConfig = { kind: "token bucket", rate: 100, period: MINUTE, onStoreError: "open" };
 */
export type LimitConfig = RateLimitConfig & { onStoreError?: StoreErrorPolicy };

export type Inline = { config: LimitConfig };

export function refusal(name: string, result: RateLimitResult, throws: boolean | undefined): RateLimitResult {
  if (throws === true && !result.ok) throw new RateLimitError(name, result.retryAfter);
  return result;
}

/** The result of every plain grant; frozen, so it can be shared. */
const ALLOWED: RateLimitResult = Object.freeze({ ok: true });

/**
 * Reads the one number the slab path answers with: NaN is a plain grant,
 * `w >= 0` a reservation due in `w` ms, `-w` (or `-0`) a refusal.
 */
export function decoded(answer: number): RateLimitResult {
  if (Number.isNaN(answer)) return ALLOWED;
  if (answer < 0 || Object.is(answer, -0)) return { ok: false, retryAfter: -answer };
  return { ok: true, retryAfter: answer };
}

/**
 * Keys up to this many UTF-16 units are within the core's 1024-byte cap
 * whatever they contain (at most 3 UTF-8 bytes a unit); longer ones take the
 * general path, which measures them exactly.
 */
export const SHORT_KEY_UNITS = 341;

/**
 * Keys with a lone surrogate take the general path, which refuses them:
 * UTF-8 cannot carry them, so another store would see a different key.
 * The engine's own check where it has one; any surrogate at all otherwise.
 */
const SURROGATE = /[\uD800-\uDFFF]/;
export const wellFormed: (text: string) => boolean =
  typeof (String.prototype as { isWellFormed?: unknown }).isWellFormed === "function"
    ? (text) => (text as string & { isWellFormed(): boolean }).isWellFormed()
    : (text) => !SURROGATE.test(text);
