/**
 * `getValue` and `reset`: the reads and writes around the core's sampling
 * and report.
 * @module
 */
import { CONFIG_LEN, EXTRA, ITEMS, OUT, REPORT_SHARD, REPORT_START, REPORT_TS, REPORT_VALUE, VALUE_DRAWS, VALUE_REPORT, VALUE_SHARDS, VALUE_STATES } from "./boundary.js";
import { core, io, ownItems } from "./engine.js";
import { coreError, RateboundError } from "./errors.js";
import { refOf, type Random, drawMany } from "./call.js";
import { isThenable, putItem, putState, readAll, type Call } from "./driver.js";
import { applyLimit } from "./stored-limits.js";
import { describe, type Compiled } from "./config.js";
import type { RateLimitStore, RateLimitValue, StateRef } from "./types.js";

/** Writes `limit` as item 0's config. */
function putLimit(limit: Compiled): void {
  ownItems(undefined);
  limit.numbers.forEach((number, index) => (io[ITEMS + index] = number));
}

/**
 * The limit's value: the shards the core samples (`sampleShards`, default 1),
 * read in one batch, and the core's report.
 *
 * @param store The store, inside its transaction when it has one.
 * @param name The limit's name.
 * @param key The key.
 * @param limit Its compiled config.
 * @param wanted `sampleShards` as given (a number, or `undefined`).
 * @param now The clock, ms.
 * @param random The limiter's random source.
 * @returns `{ value, ts, shard, config }`.
 */
export function getValue(
  store: RateLimitStore,
  name: string,
  key: string | undefined,
  limit: Compiled,
  wanted: number | undefined,
  now: number,
  random: Random,
  records?: readonly StateRef[],
): RateLimitValue | Promise<RateLimitValue> {
  const asked = wanted === undefined ? 0 : 1;
  putLimit(limit);
  const needed = core.rb_value_draws(asked, wanted ?? 0);
  if (needed < 0) throw coreError(io, OUT, name);
  const draws = drawMany(random, needed);
  putLimit(limit);
  draws.forEach((drawn, index) => (io[EXTRA + VALUE_DRAWS + index] = drawn));
  const count = core.rb_plan_value(asked, wanted ?? 0, now);
  if (count < 0) throw coreError(io, OUT, name);
  const shards = Array.from(io.subarray(EXTRA + VALUE_SHARDS, EXTRA + VALUE_SHARDS + count));
  const refs = shards.map((shard) => refOf(name, key, shard));
  const finish = (stored: unknown[]): RateLimitValue => {
    putLimit(limit);
    if (records !== undefined) {
      // The stored limit, read with the states (`./stored-limits.ts`), becomes item 0's config.
      const item: Call = { name, key, limit, count: 0, reserve: false, write: false, now, draws: [] };
      putItem(io, ITEMS, item, false);
      const source = applyLimit(0, item, records, stored.slice(refs.length));
      if (source instanceof RateboundError) throw source;
    }
    shards.forEach((shard, index) => {
      io[EXTRA + VALUE_SHARDS + index] = shard;
      putState(EXTRA + VALUE_STATES + 2 * index, stored[index], { name, key, shard });
    });
    core.rb_value(count, now);
    const report = EXTRA + VALUE_REPORT;
    const start = io[report + REPORT_START]!;
    const numbers = Array.from(io.subarray(ITEMS, ITEMS + CONFIG_LEN));
    return { value: io[report + REPORT_VALUE]!, ts: io[report + REPORT_TS]!, shard: io[report + REPORT_SHARD]!, config: describe(numbers, Number.isNaN(start) ? undefined : start) };
  };
  const stored = readAll(store, records === undefined ? refs : [...refs, ...records], now);
  return isThenable(stored) ? Promise.resolve(stored).then(finish) : finish(stored);
}

/**
 * Deletes the state of every shard of `name` and `key`.
 *
 * @param store The store, inside its transaction when it has one.
 * @param name The limit's name.
 * @param key The key.
 * @param limit Its compiled config.
 * @param now The clock, ms.
 * @returns When every shard is deleted.
 */
export async function reset(store: RateLimitStore, name: string, key: string | undefined, limit: Compiled, now: number): Promise<void> {
  putLimit(limit);
  if (core.rb_check_now(now) < 0) throw coreError(io, OUT, name);
  // A sliding window's two windows live at shards 0 and 1.
  for (let shard = 0; shard < (limit.sliding ? 2 : limit.shards); shard++) {
    const done = store.write(refOf(name, key, shard), null);
    if (isThenable(done)) await done;
  }
}
