/**
 * Limits stored in the host (`limiter.setLimit`, `getLimit`, `deleteLimit`):
 * a named limit's `rate`, `period`, `capacity` and `maxReserved` for the
 * whole name or for one key, kept as two records beside its states
 * (`src/stored_limit.rs`). A limiter made with `storedLimits: true` reads
 * them with the states of every call on a named limit, in the same batch,
 * transaction or round trip, and decides on the key's, else the name's, else
 * the config in code. Every number in a record is made and checked by the
 * core; this module only moves them.
 * @module
 */
import { CODES, CONFIG_LEN, EXTRA, ITEM, ITEM_COUNT, ITEM_RESERVE, ITEMS, KEY_LIMIT_SHARD, LIMIT_CODE, LIMIT_KEY, LIMIT_NAME, LIMIT_STORED, LIMIT_WRITE, NAME_LIMIT_SHARD, OUT, OUT_STRIDE, PLAN, PLAN_STATUS, PLAN_STRIDE } from "./boundary.js";
import { checkKey, checkName, checkNow, refOf } from "./call.js";
import { laneOf } from "./coalesce.js";
import { describe, type Compiled } from "./config.js";
import { compileLimit, type Internals } from "./limits.js";
import { core, io, type Engine } from "./engine.js";
import { coreError, corruptState, RateboundError, wrongArgument } from "./errors.js";
import { putItem, putState, type Call, type Planned } from "./driver.js";
import { checkedOptions, own } from "./options.js";
import type { RateLimitConfig, RateLimitState, RateLimitStore, StateRef } from "./types.js";

/** Where the limit a call decides on comes from: the key's stored limit, the name's, or the config in code. */
export type LimitSource = "key" | "name" | "code";

/** What `getLimit` answers: the limit a call with that key decides on now, and where it comes from. */
export interface StoredLimit {
  /** The config, as callers write it. */
  config: RateLimitConfig;
  /** `"key"`: the key's own stored limit; `"name"`: the name's stored limit; `"code"`: none is stored. */
  source: LimitSource;
}

/** Options of `setLimit`, `getLimit` and `deleteLimit`. */
export interface StoredLimitOptions {
  /** The key (a customer) whose own limit it is; absent: the limit of the whole name. */
  key?: string;
}

const SOURCES: readonly LimitSource[] = ["code", "key", "name"];

/** The records of the stored limit of `name` for `key` (`undefined`: the name's own). */
function recordsOf(name: string, key: string | undefined): StateRef[] {
  const base = key === undefined ? NAME_LIMIT_SHARD : KEY_LIMIT_SHARD;
  return [refOf(name, key, base), refOf(name, key, base + 1)];
}

/**
 * The records a call reads beside its states: the key's two (when it has a key), then the name's two.
 *
 * @param name The limit's name.
 * @param key The call's key.
 * @returns Two or four refs.
 */
export function limitRefs(name: string, key: string | undefined): StateRef[] {
  return key === undefined ? recordsOf(name, undefined) : [...recordsOf(name, key), ...recordsOf(name, undefined)];
}

/**
 * Item `index` (already in the buffer, with its config in code) takes the
 * stored limit its records hold, as the core resolves it. On error the item
 * can no longer be granted (its count is made NaN, which the core refuses),
 * and the error is returned for the call to answer.
 *
 * @param index The item.
 * @param call Its call.
 * @param refs The records it read ({@link limitRefs}).
 * @param states What each held.
 * @param e The engine whose buffer holds the item (a grant's may be another module's).
 * @returns Where its limit came from, or the call's error.
 */
export function applyLimit(index: number, call: Call, refs: readonly StateRef[], states: readonly unknown[], e: Pick<Engine, "core" | "io"> = { core, io }): LimitSource | RateboundError {
  const { io } = e;
  try {
    putRecords(refs, states, io);
  } catch (error) {
    io[ITEMS + index * ITEM + ITEM_COUNT] = Number.NaN;
    return error as RateboundError;
  }
  const source = e.core.rb_limit_resolve(index);
  if (source >= 0) return SOURCES[source] ?? "code";
  const error = coreError(io, OUT + index * OUT_STRIDE, call.name);
  io[ITEMS + index * ITEM + ITEM_COUNT] = Number.NaN;
  if (error.code !== "INVALID_CONFIG") return error;
  // Records that are not a limit: the store holds something no setLimit wrote. Fail closed.
  const at = refs.length === 4 && !Number.isNaN(io[EXTRA + LIMIT_KEY]!) ? refs[0]! : refs[refs.length - 2]!;
  return corruptState(at, `the stored limit does not decode to a valid config: ${error.message}`);
}

/** Writes the records read into the buffer: the key's at `LIMIT_KEY` (none without a key), the name's at `LIMIT_NAME`. */
function putRecords(refs: readonly StateRef[], states: readonly unknown[], io: Float64Array): void {
  const withKey = refs.length === 4;
  for (let record = 0; record < 2; record++) {
    const keyAt = EXTRA + LIMIT_KEY + 2 * record;
    if (withKey) putState(keyAt, states[record], refs[record]!, io);
    else io[keyAt] = io[keyAt + 1] = Number.NaN;
    putState(EXTRA + LIMIT_NAME + 2 * record, states[refs.length - 2 + record], refs[refs.length - 2 + record]!, io);
  }
}

/** Checks the call's name (a named limit), key and clock, and that the limiter reads stored limits. */
function target(limiter: Internals, method: string, name: unknown, options: unknown): { name: string; key: string | undefined; limit: Compiled; now: number } {
  if (!limiter.storedLimits) {
    throw wrongArgument(method, "storedLimits", `${method} needs a limiter that reads stored limits: make it with { storedLimits: true } (every instance that decides on the limit, too)`);
  }
  const checked = checkedOptions(name, options, ["key"]);
  const limitName = checkName(name);
  const key = checkKey(limitName, own(checked, "key"));
  // A named limit only: a stored limit keeps its kind, shards and start, which only the name's config in code has.
  const limit = limiter.resolve(limitName, undefined);
  return { name: limitName, key, limit, now: checkNow(limitName, limiter.now()) };
}

/**
 * Stores `config` as the limit of `name` (for `options.key` alone when given). See `RateLimiter.setLimit`.
 *
 * @param limiter The limiter's internals.
 * @param name A named limit.
 * @param config The limit to store: the same kind, shards and start as in code.
 * @param options `key`.
 */
export async function setLimit(limiter: Internals, name: string, config: unknown, options: StoredLimitOptions | undefined): Promise<void> {
  const { name: limitName, key, limit, now } = target(limiter, "setLimit", name, options);
  const stored = compileLimit(limitName, config);
  io.set(limit.numbers, EXTRA + LIMIT_CODE);
  io.set(stored.numbers, EXTRA + LIMIT_STORED);
  if (core.rb_limit_encode() < 0) throw coreError(io, OUT, limitName, (field) => (config as Record<string, unknown>)[field]);
  const records: RateLimitState[] = [0, 1].map((record) => ({ value: io[EXTRA + LIMIT_WRITE + 2 * record]!, ts: io[EXTRA + LIMIT_WRITE + 2 * record + 1]! }));
  const refs = recordsOf(limitName, key);
  const info = { now, fullAt: Number.POSITIVE_INFINITY };
  await limiter.failure.transact(async (store) => {
    for (let record = 0; record < 2; record++) await store.write(refs[record]!, records[record]!, info);
  }, key === undefined ? undefined : [laneOf(limitName, key)]);
  limiter.refusals?.forget(limitName, key);
}

/**
 * Deletes the stored limit of `name` (for `options.key` alone when given). See `RateLimiter.deleteLimit`.
 *
 * @param limiter The limiter's internals.
 * @param name A named limit.
 * @param options `key`.
 */
export async function deleteLimit(limiter: Internals, name: string, options: StoredLimitOptions | undefined): Promise<void> {
  const { name: limitName, key, now } = target(limiter, "deleteLimit", name, options);
  const refs = recordsOf(limitName, key);
  const info = { now, fullAt: Number.POSITIVE_INFINITY };
  await limiter.failure.transact(async (store) => {
    for (const ref of refs) await store.write(ref, null, info);
  }, key === undefined ? undefined : [laneOf(limitName, key)]);
  limiter.refusals?.forget(limitName, key);
}

/**
 * The limit a call on `name` with `options.key` decides on now, and where it comes from. See `RateLimiter.getLimit`.
 *
 * @param limiter The limiter's internals.
 * @param name A named limit.
 * @param options `key`.
 * @returns `{ config, source }`.
 */
export async function getLimit(limiter: Internals, name: string, options: StoredLimitOptions | undefined): Promise<StoredLimit> {
  const { name: limitName, key, limit, now } = target(limiter, "getLimit", name, options);
  const refs = limitRefs(limitName, key);
  const states = await limiter.failure.transact((store) => readRecords(store, refs, now));
  const call: Call = { name: limitName, key, limit, count: 0, reserve: false, write: false, now, draws: [] };
  putItem(io, ITEMS, call, false);
  const source = applyLimit(0, call, refs, states);
  if (source instanceof RateboundError) throw source;
  return { config: describe(Array.from(io.subarray(ITEMS, ITEMS + CONFIG_LEN))), source };
}

/** Reads `refs` one after another (a transaction's reads), answering what each held. */
async function readRecords(store: RateLimitStore, refs: readonly StateRef[], now: number): Promise<unknown[]> {
  if (typeof store.readMany === "function") return await store.readMany([...refs], { now });
  const states: unknown[] = [];
  for (const ref of refs) states.push(await store.read(ref, { now }));
  return states;
}

/**
 * The items of `planned` (in the buffer, with their configs in code) take
 * their stored limits from the records read (`stored`, per ref).
 *
 * @returns Per call, the error its records gave (it is then refused by the core), or `undefined`.
 */
export function applyLimits(planned: Planned, stored: readonly unknown[]): (RateboundError | undefined)[] {
  const errors: (RateboundError | undefined)[] = [];
  for (let index = 0; index < planned.calls.length; index++) {
    const first = planned.records[index]!;
    const call = planned.calls[index]!;
    if (first < 0 || call.records === undefined || planned.errors[index] !== undefined) {
      errors.push(undefined);
      continue;
    }
    const count = call.records.length;
    const source = applyLimit(index, call, call.records, stored.slice(first, first + count));
    errors.push(source instanceof RateboundError ? source : undefined);
  }
  return errors;
}

/**
 * A call that reads stored limits asks what its stored limit allows, not the
 * code's: a count beyond the code's capacity (`COUNT_EXCEEDS_MAX`,
 * `WAIT_UNBOUNDED`) is checked once the records are read. The shards it
 * reads do not depend on the count, so such a call is planned again as a
 * count of 0 (its item is written whole again before it is decided).
 *
 * @returns The core's status of the plan.
 */
export function planStoredAgain(calls: readonly Call[]): number {
  let again = false;
  for (let index = 0; index < calls.length; index++) {
    const code = CODES[-io[PLAN + index * PLAN_STRIDE + PLAN_STATUS]!];
    if (calls[index]!.records === undefined || (code !== "COUNT_EXCEEDS_MAX" && code !== "WAIT_UNBOUNDED")) continue;
    io[ITEMS + index * ITEM + ITEM_COUNT] = 0;
    io[ITEMS + index * ITEM + ITEM_RESERVE] = 0;
    again = true;
  }
  return again ? core.rb_plan(calls.length) : -1;
}
