/**
 * The one-crossing road of a `RateLimiter` on a `SlabStore` (a
 * `MemoryStore`, or the failure policy's fallback): `limit`/`check` of an
 * unsharded limit is checked in TypeScript as every call is (name, key,
 * count, reserve, config, clock), then checked, decided and written by the
 * core in one call on the state in its slab (`limitInSlab`). No `Call`, no
 * `{ value, ts }` objects, no second crossing.
 * @module
 */
import { checkCount, checkFlag, checkKey, checkName, checkNow, draw } from "./call.js";
import type { Compiled } from "./config.js";
import type { Call } from "./driver.js";
import type { Internals } from "./limits.js";
import { refusal, type LimitFields } from "./options.js";
import { configId } from "./slab.js";
import { limitInSlab, SlabStore } from "./slab-store.js";
import type { RateLimitResult } from "./types.js";

const NO_DRAWS: readonly number[] = Object.freeze([]);

/** A `SlabStore`'s own `read` and `write`: a store whose are others (a subclass, a spy) takes the general path. */
const { read: slabRead, write: slabWrite } = SlabStore.prototype;

/** An unsharded named limit's config and its id in the core's config table. */
interface Entry {
  readonly limit: Compiled;
  readonly id: number;
}

/** Each unsharded named limit's entry, and the last one asked for (most calls repeat a name): at most one lookup a call. */
export class InTable {
  readonly byName = new Map<string, Entry>();
  lastName: string | undefined = undefined;
  last: Entry | undefined = undefined;

  /** The entry of the limit `name`, if it is one. */
  get(name: string): Entry | undefined {
    if (name === this.lastName) return this.last;
    const entry = this.byName.get(name);
    if (entry !== undefined) {
      this.lastName = name;
      this.last = entry;
    }
    return entry;
  }
}

/**
 * Compiles the unsharded named limits into the core's config table (when the limiter is made).
 *
 * @param limits The limiter's named limits, compiled.
 * @param table Where their ids go.
 */
export function intoTable(limits: ReadonlyMap<string, Compiled>, table: InTable): void {
  for (const [name, limit] of limits) {
    const id = limit.shards === 1 && !limit.sliding ? configId(limit) : -1;
    if (id >= 0) table.byName.set(name, { limit, id });
  }
}

/**
 * `limit`/`check` of an unsharded limit on a `SlabStore`, in one crossing: the call checked as
 * the general path checks it (`RateLimiter`'s `#call`), then decided and written in the slab;
 * with a refusal cache, asked first and told after, as on the general path.
 *
 * @returns The answer, or `undefined` (before the clock is read or anything drawn) to send the
 *   call down the general path: a sharded limit, a store whose `read`/`write` are not its own,
 *   a full config table, a draw with a refusal cache.
 */
export function inSlab(
  limiter: Internals,
  store: SlabStore,
  table: InTable,
  name: string,
  given: LimitFields,
  config: unknown,
  write: boolean,
  figures: boolean,
): Promise<RateLimitResult> | undefined {
  if (store.read !== slabRead || store.write !== slabWrite) return undefined;
  // A named limit (its name checked when the limiter was made) is one lookup; an inline one is compiled once per object.
  const named = config === undefined ? table.get(name) : undefined;
  const checked = named !== undefined ? name : checkName(name);
  const key = checkKey(checked, given.key);
  const count = checkCount(checked, given.count);
  const reserve = checkFlag(checked, "reserve", given.reserve);
  const limit = named !== undefined ? named.limit : limiter.resolve(checked, config);
  const refusals = limiter.refusals;
  // A draw is checked by the core: with a refusal cache, which answers before the core, it takes the general path.
  if (limit.shards !== 1 || limit.sliding || (refusals !== undefined && limit.draws !== 0)) return undefined;
  const id = named !== undefined ? named.id : configId(limit);
  if (id < 0) return undefined;
  const now = checkNow(checked, limiter.now());
  const drawn = limit.draws === 0 ? 0 : draw(limiter.random);
  if (refusals === undefined) return Promise.resolve(refusal(checked, limitInSlab(store, id, checked, key, count, reserve, write, now, drawn, figures), given.throws));
  const call: Call = { name: checked, key, limit, count, reserve, write, now, draws: NO_DRAWS };
  const local = refusals.refuse(call, figures);
  if (local !== undefined) return Promise.resolve(refusal(checked, local, given.throws));
  const result = limitInSlab(store, id, checked, key, count, reserve, write, now, drawn, figures);
  refusals.remember(call, result);
  return Promise.resolve(refusal(checked, result, given.throws));
}
