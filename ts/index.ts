/**
 * ratebound: rate limits stored as two numbers per key, decided by one
 * WebAssembly core. This module is the API every runtime entry re-exports;
 * the entries load the `.wasm` first.
 * @module
 */
import {
  CompiledConfig,
  RateLimiterCore,
  checkOptions,
  calculateRateLimit as coreCalculateRateLimit,
  withJitter as coreWithJitter,
} from "./wasm/ratebound.js";
import type {
  FixedWindowConfig,
  RateLimitConfig,
  RateLimitResult,
  RateLimitState,
  RateLimitStore,
  RateLimitTransition,
  RateLimitValue,
  StateRef,
  TokenBucketConfig,
} from "./wasm/ratebound.js";
import { RateLimitError } from "./errors.js";
import { MemoryStore } from "./memory-store.js";

export type {
  FixedWindowConfig,
  RateLimitConfig,
  RateLimitResult,
  RateLimitState,
  RateLimitStore,
  RateLimitTransition,
  RateLimitValue,
  StateRef,
  TokenBucketConfig,
};
export { RateLimitError, isRateLimitError } from "./errors.js";
export type { RateLimitErrorData } from "./errors.js";
export { MemoryStore };
export { SECOND, MINUTE, HOUR, DAY, WEEK } from "./time.js";

/** Clock and randomness, injectable for deterministic tests and replays. */
export interface RateLimiterOptions {
  /** Milliseconds since the epoch; default `Date.now`. */
  now?: () => number;
  /** Numbers in `[0, 1)`; default: the runtime's cryptographic source, drawn inside each call. */
  random?: () => number;
}

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
  config?: RateLimitConfig;
}

/** Options of `getValue`. */
export interface GetValueOptions {
  /** Whose limit; omit for the shared state. */
  key?: string;
  /** How many shards to sample for a sharded limit (default 1). */
  sampleShards?: number;
  /** A config for a limit not named when the limiter was made. */
  config?: RateLimitConfig;
}

/** Options of `reset`. */
export interface ResetOptions {
  /** Whose limit; omit for the shared state. */
  key?: string;
  /** A config for a limit not named when the limiter was made. */
  config?: RateLimitConfig;
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
  config?: RateLimitConfig;
}

type Named<Limits> = Extract<keyof Limits, string>;

const LIMIT_OPTIONS = ["key", "count", "reserve", "throws", "config"];
const VALUE_OPTIONS = ["key", "sampleShards", "config"];
const RESET_OPTIONS = ["key", "config"];
const BATCH_OPTIONS = ["throws"];

/**
 * Checks the caller's options: a plain object whose own fields are all
 * known, with a boolean `throws`. When they are not, the core explains what
 * is wrong (an INVALID_REQUEST naming it). Fields are then read with
 * {@link own}, so an inherited one (a polluted `Object.prototype.count`, say)
 * is never read.
 */
function checkedOptions(name: unknown, options: unknown, allowed: readonly string[]): object {
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
class LimitFields {
  key: unknown = undefined;
  count: unknown = undefined;
  reserve: unknown = undefined;
  config: unknown = undefined;
  throws: boolean | undefined = undefined;
}

const NO_FIELDS: LimitFields = Object.freeze(new LimitFields());

/**
 * Reads `limit`/`check` options in one pass over their own enumerable
 * fields: an inherited field is never read, and anything else wrong (an
 * unknown own field, a non-object, a non-boolean `throws`) is explained by
 * the core as an INVALID_REQUEST naming it.
 */
function limitFields(name: string, options: unknown): LimitFields {
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
function own<T = unknown>(object: object, field: string): T | undefined {
  return Object.hasOwn(object, field) ? ((object as Record<string, unknown>)[field] as T) : undefined;
}
type Inline = { config: RateLimitConfig };

function refusal(name: string, result: RateLimitResult, throws: boolean | undefined): RateLimitResult {
  if (throws === true && !result.ok) throw new RateLimitError(name, result.retryAfter);
  return result;
}

/** The result of every plain grant; frozen, so it can be shared. */
const ALLOWED: RateLimitResult = Object.freeze({ ok: true });

/**
 * Reads the one number the slab path answers with: NaN is a plain grant,
 * `w >= 0` a reservation due in `w` ms, `-w` (or `-0`) a refusal.
 */
function decoded(answer: number): RateLimitResult {
  if (Number.isNaN(answer)) return ALLOWED;
  if (answer < 0 || Object.is(answer, -0)) return { ok: false, retryAfter: -answer };
  return { ok: true, retryAfter: answer };
}

/**
 * Keys up to this many UTF-16 units are within the core's 1024-byte cap
 * whatever they contain (at most 3 UTF-8 bytes a unit); longer ones take the
 * general path, which measures them exactly.
 */
const SHORT_KEY_UNITS = 341;

/**
 * Keys with a lone surrogate take the general path, which refuses them:
 * UTF-8 cannot carry them, so another store would see a different key.
 * The engine's own check where it has one; any surrogate at all otherwise.
 */
const SURROGATE = /[\uD800-\uDFFF]/;
const wellFormed: (text: string) => boolean =
  typeof (String.prototype as { isWellFormed?: unknown }).isWellFormed === "function"
    ? (text) => (text as string & { isWellFormed(): boolean }).isWellFormed()
    : (text) => !SURROGATE.test(text);

/**
 * Rate limits over a host store: every call reads at most two shard states,
 * decides in WebAssembly, and writes only what a granted limit changed.
 *
 * @typeParam Limits The named limits; their names are type-checked.
 * @example
 * const limiter = new RateLimiter(new MemoryStore(), {
 *   sendMessage: { kind: "token bucket", rate: 10, period: MINUTE, capacity: 3 },
 * });
 * const { ok, retryAfter } = await limiter.limit("sendMessage", { key: userId });
 */
export class RateLimiter<Limits extends Record<string, RateLimitConfig> = Record<string, never>> {
  readonly #core: RateLimiterCore;
  readonly #store: RateLimitStore;
  readonly #now: () => number;
  /** The store, when it is a MemoryStore: named limits are then decided on its slab directly. */
  readonly #memory: MemoryStore | undefined;
  /** Named limits' indexes in the core. */
  readonly #indexes = new Map<string, number>();
  /** Named limits' shard counts, by index, for those with more than one. */
  readonly #shardCounts = new Map<number, number>();

  /**
   * @param store The host's persistence: `read(ref)` and `write(ref, state | null)`.
   * @param limits Named limit configs, validated now (a bad one throws naming it and the field).
   * @param options `now` and `random`, for tests and replays.
   */
  constructor(store: RateLimitStore, limits: Limits = {} as Limits, options: RateLimiterOptions = {}) {
    this.#core = new RateLimiterCore(store, limits, options.random);
    this.#store = store;
    this.#now = options.now ?? Date.now;
    if (store instanceof MemoryStore) {
      this.#memory = store;
      this.#core.useSlab(store.slab);
      for (const name of Object.keys(limits)) {
        const index = this.#core.limitIndex(name);
        this.#indexes.set(name, index);
        const shards = this.#core.shardCount(index);
        if (shards > 1) this.#shardCounts.set(index, shards);
      }
    }
  }

  /**
   * Decides on the MemoryStore's slab when the call is the common case (a
   * named limit, a plain key, a number count, a boolean reserve); `undefined`
   * sends every other call down the general path, which validates it.
   */
  #onSlab(name: string, given: LimitFields, write: boolean): RateLimitResult | undefined {
    const memory = this.#memory;
    const index = this.#indexes.get(name);
    if (memory === undefined || index === undefined || given.config !== undefined) return undefined;
    // Only an absent field takes the default: null must reach the core's checks.
    const { key } = given;
    const count = given.count === undefined ? 1 : given.count;
    const reserve = given.reserve === undefined ? false : given.reserve;
    if (typeof count !== "number" || typeof reserve !== "boolean") return undefined;
    if (key !== undefined && (typeof key !== "string" || key.length > SHORT_KEY_UNITS || !wellFormed(key))) return undefined;
    const now = this.#now();
    if (typeof now !== "number") return undefined;
    let base = memory.blockOf(name, key);
    if (base < 0 && write) memory.makeRoom(now);
    // A block made by writes through the store's callbacks may hold fewer shards.
    const shards = this.#shardCounts.get(index) ?? 1;
    if (base >= 0 && shards > 1) base = memory.blockWith(name, key, base, shards);
    const answer = this.#core.decideInSlab(index, base, count, reserve, now, write);
    if (base < 0 && write) {
      const allocated = this.#core.takeAllocatedBase();
      if (allocated >= 0) memory.adopt(name, key, allocated);
    }
    return decoded(answer);
  }

  /**
   * Consumes `count` tokens if the limit allows, and writes its new state.
   *
   * @param name A named limit, or any name with an inline `config`.
   * @param options `key`, `count`, `reserve`, `throws`, `config`.
   * @returns `{ ok: true, retryAfter? }` (retryAfter when reserved) or `{ ok: false, retryAfter }`.
   * @example
   * const status = await limiter.limit("llmTokens", { count: 500, reserve: true });
   * if (status.ok && status.retryAfter) scheduleIn(status.retryAfter);
   */
  limit(name: Named<Limits>, options?: LimitOptions): Promise<RateLimitResult>;
  limit(name: string, options: LimitOptions & Inline): Promise<RateLimitResult>;
  limit(name: string, options?: LimitOptions): Promise<RateLimitResult> {
    return this.#decide(name, options, true);
  }

  /**
   * What {@link RateLimiter.limit} would answer now, without writing anything.
   *
   * @param name A named limit, or any name with an inline `config`.
   * @param options As for `limit`.
   * @returns The same result `limit` would give.
   * @example
   * const { ok } = await limiter.check("failedLogins", { key: userId });
   */
  check(name: Named<Limits>, options?: LimitOptions): Promise<RateLimitResult>;
  check(name: string, options: LimitOptions & Inline): Promise<RateLimitResult>;
  check(name: string, options?: LimitOptions): Promise<RateLimitResult> {
    return this.#decide(name, options, false);
  }

  /**
   * Runs one call against the store: inside `store.transaction` when the host
   * has one (the call then sees one consistent snapshot and commits all its
   * writes or none), else directly.
   */
  #transact<T>(call: (store: RateLimitStore) => T | Promise<T>): Promise<T> {
    const store = this.#store;
    if (typeof store.transaction === "function") return store.transaction(async (tx) => await call(tx));
    try {
      return Promise.resolve(call(store));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** `limit` (write) or `check`: on the slab when it can, else through the store's callbacks. */
  #decide(name: string, options: LimitOptions | undefined, write: boolean): Promise<RateLimitResult> {
    // Not an async function: on a MemoryStore this allocates one settled
    // Promise and nothing else. Every error still arrives as a rejection.
    try {
      const given = limitFields(name, options);
      const onSlab = this.#onSlab(name, given, write);
      if (onSlab !== undefined) return Promise.resolve(refusal(name, onSlab, given.throws));
      const { key, count, reserve, config, throws } = given;
      const core = this.#core;
      const answer = this.#transact((store) =>
        write
          ? core.limit(store, name, key, count, reserve, config, this.#now())
          : core.check(store, name, key, count, reserve, config, this.#now()),
      );
      return answer.then((result) => refusal(name, result, throws));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Consumes several limits together: all of them, or none. When any refuses,
   * nothing is written and `retryAfter` is the largest wait of the batch, so a
   * caller never holds one limit while waiting for another.
   *
   * @param requests The limits, each with its own `key`, `count`, `reserve`.
   * @param options `throws: true` to throw a {@link RateLimitError} on refusal.
   * @returns One result for the whole batch.
   * @example
   * await limiter.limitAll([{ name: "perUser", key: userId }, { name: "global" }], { throws: true });
   */
  async limitAll(
    requests: ReadonlyArray<BatchRequest<Named<Limits>> | (BatchRequest & Inline)>,
    options: { throws?: boolean } = {},
  ): Promise<RateLimitResult> {
    const throws = own<boolean>(checkedOptions("limitAll", options, BATCH_OPTIONS), "throws");
    const result = await this.#transact((store) => this.#core.limitAll(store, requests, this.#now(), true));
    return refusal(requests.map((request) => request.name).join(", "), result, throws);
  }

  /**
   * What {@link RateLimiter.limitAll} would answer now, without writing anything.
   *
   * @param requests The limits to check together.
   * @param options `throws: true` to throw on refusal.
   * @returns One result for the whole batch.
   * @example
   * const { ok, retryAfter } = await limiter.checkAll([{ name: "x" }, { name: "y", count: 10 }]);
   */
  async checkAll(
    requests: ReadonlyArray<BatchRequest<Named<Limits>> | (BatchRequest & Inline)>,
    options: { throws?: boolean } = {},
  ): Promise<RateLimitResult> {
    const throws = own<boolean>(checkedOptions("checkAll", options, BATCH_OPTIONS), "throws");
    const result = await this.#transact((store) => this.#core.limitAll(store, requests, this.#now(), false));
    return refusal(requests.map((request) => request.name).join(", "), result, throws);
  }

  /**
   * The limit's current value, to show or to project forward with {@link calculateRateLimit}.
   *
   * @param name A named limit, or any name with an inline `config`.
   * @param options `key`, `sampleShards`, `config`.
   * @returns `{ value, ts, shard, config }` for the whole limit.
   * @example
   * const { value, ts, config } = await limiter.getValue("sendMessage", { key: userId });
   * const inAMinute = calculateRateLimit({ value, ts }, config, Date.now() + MINUTE);
   */
  getValue(name: Named<Limits>, options?: GetValueOptions): Promise<RateLimitValue>;
  getValue(name: string, options: GetValueOptions & Inline): Promise<RateLimitValue>;
  async getValue(name: string, options?: GetValueOptions): Promise<RateLimitValue> {
    const checked = checkedOptions(name, options, VALUE_OPTIONS);
    const key = own(checked, "key");
    const sampleShards = own(checked, "sampleShards");
    const config = own(checked, "config");
    return await this.#transact((store) => this.#core.getValue(store, name, key, sampleShards, config, this.#now()));
  }

  /**
   * Deletes the limit's state for `key` on every shard: it is full again.
   *
   * @param name A named limit, or any name with an inline `config`.
   * @param options `key`, `config`.
   * @example
   * await limiter.reset("failedLogins", { key: userId });
   */
  reset(name: Named<Limits>, options?: ResetOptions): Promise<void>;
  reset(name: string, options: ResetOptions & Inline): Promise<void>;
  async reset(name: string, options?: ResetOptions): Promise<void> {
    const checked = checkedOptions(name, options, RESET_OPTIONS);
    const key = own(checked, "key");
    const config = own(checked, "config");
    await this.#transact((store) => this.#core.reset(store, name, key, config, this.#now()));
  }
}

/** A config object's compiled form and the fields it was compiled from. */
type Compiled = { compiled: CompiledConfig; fields: unknown[] };

const CONFIG_FIELDS = ["kind", "rate", "period", "capacity", "maxReserved", "shards", "start"] as const;
const compiledConfigs = new WeakMap<object, Compiled>();

/**
 * The config compiled by the core: validated once per config object, then
 * reused while its fields are unchanged (a changed field compiles it again).
 */
function compiledFor(config: RateLimitConfig): CompiledConfig {
  if (typeof config !== "object" || config === null) return new CompiledConfig(config);
  const cached = compiledConfigs.get(config);
  const fields = config as Record<(typeof CONFIG_FIELDS)[number], unknown>;
  if (cached !== undefined && CONFIG_FIELDS.every((field, index) => Object.is(fields[field], cached.fields[index]))) {
    return cached.compiled;
  }
  const compiled = new CompiledConfig(config);
  cached?.compiled.free();
  compiledConfigs.set(config, { compiled, fields: CONFIG_FIELDS.map((field) => fields[field]) });
  return compiled;
}

/**
 * The pure transition: the state after `count` tokens are taken at `now`.
 * The same function the limiter decides with, so a preview cannot disagree with the server.
 * Each config object is validated on first use; later calls pass only numbers to the core.
 *
 * @param state The stored `{ value, ts }`, or `null` for a fresh (full) limit.
 * @param config The limit's config.
 * @param now Milliseconds since the epoch (default `Date.now()`).
 * @param count Tokens to take (default 0: just project).
 * @returns `{ value, ts, retryAfter?, windowStart? }`.
 * @example
 * calculateRateLimit({ value: 0, ts: 0 }, { kind: "token bucket", rate: 10, period: MINUTE }, 3000, 1)
 * // => { value: -0.5, ts: 3000, retryAfter: 3000 }
 */
export function calculateRateLimit(
  state: RateLimitState | null,
  config: RateLimitConfig,
  now: number = Date.now(),
  count: number = 0,
): RateLimitTransition {
  const plainNumbers =
    typeof now === "number" &&
    typeof count === "number" &&
    (state === null || (typeof state === "object" && typeof state.value === "number" && typeof state.ts === "number"));
  // Anything else gets the core's full checks and their errors.
  if (!plainNumbers) return coreCalculateRateLimit(state, config, now, count, undefined);
  const compiled = compiledFor(config);
  const value =
    state === null ? compiled.transition(false, 0, 0, now, count) : compiled.transition(true, state.value, state.ts, now, count);
  const transition: RateLimitTransition = { value, ts: compiled.ts };
  const { retryAfter, windowStart } = compiled;
  if (!Number.isNaN(retryAfter)) transition.retryAfter = retryAfter;
  if (!Number.isNaN(windowStart)) transition.windowStart = windowStart;
  return transition;
}

/** What {@link decideRateLimit} answers: the decision and the state it leaves. */
export type RateLimitDecision = RateLimitResult & { value: number; ts: number };

/**
 * The decision `limit` makes, on one state you hold: the core's validation
 * (with the server's messages), its rule for refusals and reservations, and
 * its `retryAfter`, which is checked to be enough. For previews and custom
 * hosts; a sharded limit's state is treated as a whole.
 *
 * @param state The stored `{ value, ts }`, or `null` for a fresh (full) limit.
 * @param config The limit's config.
 * @param now Milliseconds since the epoch (default `Date.now()`).
 * @param options `count` (default 1), `reserve`, and `name` for error messages.
 * @returns `{ ok, retryAfter?, value, ts }`: `value` and `ts` are the state a grant would write.
 * @example
 * decideRateLimit({ value: 0, ts: 0 }, { kind: "token bucket", rate: 10, period: SECOND }, 50)
 * // => { ok: false, retryAfter: 50, value: -0.5, ts: 50 }
 */
export function decideRateLimit(
  state: RateLimitState | null,
  config: RateLimitConfig,
  now: number = Date.now(),
  options: { count?: number; reserve?: boolean; name?: string } = {},
): RateLimitDecision {
  const { count = 1, reserve = false, name = "preview" } = options;
  const compiled = compiledFor(config);
  const answer =
    state === null
      ? compiled.decide(name, false, 0, 0, now, count, reserve)
      : compiled.decide(name, true, state.value, state.ts, now, count, reserve);
  return { ...decoded(answer), value: compiled.nextValue, ts: compiled.ts };
}

/**
 * Many transitions at once, for dashboards and previews of many keys: one
 * call into the core for the whole batch.
 *
 * @param states `value, ts` pairs, one per key; a `NaN` value means the key has no state yet.
 * @param config The limit's config, shared by every key.
 * @param now Milliseconds since the epoch (default `Date.now()`).
 * @param count Tokens to take from each (default 0: just project).
 * @returns `value, ts, retryAfter, windowStart` for each key, `NaN` where absent.
 * @example
 * const out = calculateRateLimits(new Float64Array([0, 0, NaN, 0]), config, 3000);
 * const [firstValue, firstTs, firstRetryAfter] = out; // the second key's answer starts at out[4]
 */
export function calculateRateLimits(
  states: Float64Array,
  config: RateLimitConfig,
  now: number = Date.now(),
  count: number = 0,
): Float64Array {
  return compiledFor(config).transitionMany(states, now, count);
}

/**
 * Adds a random delay to a `retryAfter`, so refused clients do not all come back at once.
 *
 * @param retryAfter Milliseconds until a retry can succeed.
 * @param maxJitter The largest delay to add, in milliseconds.
 * @param random Numbers in `[0, 1)` for replays and tests; default: the runtime's cryptographic source.
 * @returns `retryAfter` plus a uniformly random delay in `[0, maxJitter)`.
 * @example
 * setTimeout(retry, withJitter(status.retryAfter, SECOND));
 */
export function withJitter(retryAfter: number, maxJitter: number, random?: () => number): number {
  return coreWithJitter(retryAfter, maxJitter, random);
}
