/**
 * `MemoryStore`: a {@link RateLimitStore} in process memory, for tests,
 * single-process servers and in-page previews. It is just a store: the
 * limiter drives it like any other, synchronously, with no Promise until the
 * caller's.
 * @module
 */
import { invalidRequest, mustBe, storeFull } from "../core/errors.js";
import { ownOptions } from "../core/options.js";
import type { RateLimitState, RateLimitStore, StateRef, WriteInfo } from "../core/types.js";

/** Shards from here on are the library's records (ledgers, grants' records), kept beside the states. */
const FIRST_RECORD_SHARD = 1024;

/** A ref's key, own field only: a polluted `Object.prototype.key` never redirects a keyless ref. */
function keyOf(ref: StateRef): string | undefined {
  return Object.hasOwn(ref, "key") ? ref.key : undefined;
}

/**
 * A {@link RateLimitStore} in process memory. States live in one slab of
 * typed arrays (24 bytes a shard), and each name and key maps to its block
 * of slots with JavaScript `Map`s, which keep every distinct string apart
 * (`"a:b"` + `"c"` and `"a"` + `"b:c"`, no key and `""`).
 *
 * @example
 * const limiter = new RateLimiter(new MemoryStore(), { api: { kind: "token bucket", rate: 10, period: SECOND } });
 */
export class MemoryStore implements RateLimitStore {
  /** name → key → the first slot of its block. */
  readonly #blocks = new Map<string, Map<string | undefined, number>>();
  /** name → key → shard → [value, ts, fullAt]: the library's records. */
  readonly #records = new Map<string, Map<string | undefined, Map<number, [number, number, number]>>>();
  #values = new Float64Array(64).fill(Number.NaN);
  #stamps = new Float64Array(64);
  /** Per slot: from when its state is full again (`Infinity`: never dropped). */
  #fullAt = new Float64Array(64);
  /** Per block start: its length; 0 inside a block. */
  #lengths = new Uint16Array(64);
  #end = 0;
  /** Freed blocks by length: their first slots. */
  readonly #free = new Map<number, number[]>();
  #occupied = 0;
  #keys = 0;
  readonly #maxKeys: number;
  /** No block can be dropped before this instant. */
  #nextDroppable = Number.POSITIVE_INFINITY;
  /** Until this instant a missing key may be one that was dropped: a clock that steps back before it would find it full. */
  #droppedUntil = Number.NEGATIVE_INFINITY;

  /**
   * @param options `maxKeys`: the most names-and-keys to hold (default: no
   * limit). When a new key would pass it, keys whose states have fully
   * refilled are dropped first, which changes no decision (a missing state
   * decides exactly as a full one). When none has, the call fails with
   * `code: "STORE_FULL"`: dropping a state that is not full would hand out
   * tokens. Fixed windows without `start`, and limits of 3 or more shards,
   * are never dropped. After a drop, a clock that steps back before the
   * dropped states were full again finds new keys `STORE_FULL` until it
   * catches up, rather than full.
   * @example
   * const store = new MemoryStore({ maxKeys: 100_000 });
   */
  constructor(options: { maxKeys?: number } = {}) {
    const [maxKeys] = ownOptions("MemoryStore", options, ["maxKeys"]);
    if (maxKeys !== undefined && !(typeof maxKeys === "number" && Number.isInteger(maxKeys) && maxKeys >= 1 && maxKeys <= 2 ** 32 - 1)) {
      throw invalidRequest("MemoryStore", "maxKeys", mustBe("maxKeys", "a positive integer", maxKeys));
    }
    this.#maxKeys = (maxKeys as number | undefined) ?? Number.POSITIVE_INFINITY;
  }

  /**
   * @param ref The shard to read.
   * @param info The limiter's clock, when a limiter reads.
   * @returns Its state, or `null` when it has none.
   */
  read(ref: StateRef, info?: { now: number }): RateLimitState | null {
    if (ref.shard >= FIRST_RECORD_SHARD) {
      const record = this.#records.get(ref.name)?.get(keyOf(ref))?.get(ref.shard);
      return record === undefined ? null : { value: record[0], ts: record[1] };
    }
    const base = this.#blocks.get(ref.name)?.get(keyOf(ref));
    const value = base === undefined || ref.shard >= this.#lengths[base]! ? Number.NaN : this.#values[base + ref.shard]!;
    if (!Number.isNaN(value)) return { value, ts: this.#stamps[base! + ref.shard]! };
    // Missing, but maybe dropped: before the dropped states were full again it would not decide as a full one.
    if (info !== undefined && info.now < this.#droppedUntil) throw storeFull(this.#maxKeys);
    return null;
  }

  /**
   * @param ref The shard to write.
   * @param state Its new state (two finite numbers), or `null` to delete it.
   * @param info The limiter's clock and when the state is full again. Without it the state is
   * never dropped, and a new key never makes room (it fails with STORE_FULL when at `maxKeys`).
   */
  write(ref: StateRef, state: RateLimitState | null, info?: WriteInfo): void {
    if (ref.shard >= FIRST_RECORD_SHARD) return this.#writeRecord(ref, state, info);
    const key = keyOf(ref);
    let base = this.#blocks.get(ref.name)?.get(key);
    if (state === null) {
      if (base === undefined || ref.shard >= this.#lengths[base]!) return;
      this.#set(base + ref.shard, null, Number.NEGATIVE_INFINITY);
      if (this.#blockIsEmpty(base)) this.#forget(ref.name, key, base);
      return;
    }
    if (!Number.isFinite(state.value) || !Number.isFinite(state.ts)) {
      throw invalidRequest("MemoryStore", "state", mustBe("state", "two finite numbers", state));
    }
    if (base === undefined) {
      // Room is made at the limiter's clock, never at the state's `ts` (a window may start in the future).
      this.#makeRoom(info?.now ?? Number.NEGATIVE_INFINITY);
      base = this.#allocate(ref.shard + 1);
      this.#adopt(ref.name, key, base);
    } else if (ref.shard >= this.#lengths[base]!) {
      base = this.#grow(ref.name, key, base, ref.shard + 1);
    }
    this.#set(base + ref.shard, state, info?.fullAt ?? Number.POSITIVE_INFINITY);
  }

  #writeRecord(ref: StateRef, state: RateLimitState | null, info?: WriteInfo): void {
    const key = keyOf(ref);
    let byKey = this.#records.get(ref.name);
    if (state === null) {
      byKey?.get(key)?.delete(ref.shard);
      return;
    }
    if (byKey === undefined) this.#records.set(ref.name, (byKey = new Map()));
    let byShard = byKey.get(key);
    if (byShard === undefined) byKey.set(key, (byShard = new Map()));
    byShard.set(ref.shard, [state.value, state.ts, info?.fullAt ?? Number.POSITIVE_INFINITY]);
  }

  #set(slot: number, state: RateLimitState | null, fullAt: number): void {
    const was = !Number.isNaN(this.#values[slot]!);
    if (state === null) {
      this.#values[slot] = Number.NaN;
      if (was) this.#occupied--;
      return;
    }
    this.#values[slot] = state.value;
    this.#stamps[slot] = state.ts;
    const droppable = Number.isNaN(fullAt) ? Number.POSITIVE_INFINITY : fullAt;
    this.#fullAt[slot] = droppable;
    if (this.#maxKeys !== Number.POSITIVE_INFINITY) this.#nextDroppable = Math.min(this.#nextDroppable, droppable);
    if (!was) this.#occupied++;
  }

  #blockIsEmpty(base: number): boolean {
    for (let slot = base; slot < base + this.#lengths[base]!; slot++) if (!Number.isNaN(this.#values[slot]!)) return false;
    return true;
  }

  /** A block of `length` empty slots; returns its first slot. */
  #allocate(length: number): number {
    this.#keys++;
    const reused = this.#free.get(length)?.pop();
    if (reused !== undefined) return reused;
    const base = this.#end;
    if (base + length > this.#values.length) {
      const size = Math.max(this.#values.length * 2, base + length);
      const grown = (from: Float64Array, fill: number) => {
        const to = new Float64Array(size).fill(fill);
        to.set(from);
        return to;
      };
      this.#values = grown(this.#values, Number.NaN);
      this.#stamps = grown(this.#stamps, 0);
      this.#fullAt = grown(this.#fullAt, 0);
      const lengths = new Uint16Array(size);
      lengths.set(this.#lengths);
      this.#lengths = lengths;
    }
    this.#lengths[base] = length;
    this.#end = base + length;
    return base;
  }

  /** Empties and frees the block at `base`. */
  #release(base: number): void {
    const length = this.#lengths[base]!;
    for (let slot = base; slot < base + length; slot++) this.#set(slot, null, 0);
    this.#keys--;
    let list = this.#free.get(length);
    if (list === undefined) this.#free.set(length, (list = []));
    list.push(base);
  }

  #adopt(name: string, key: string | undefined, base: number): void {
    let byKey = this.#blocks.get(name);
    if (byKey === undefined) this.#blocks.set(name, (byKey = new Map()));
    byKey.set(key, base);
  }

  #forget(name: string, key: string | undefined, base: number): void {
    this.#release(base);
    const byKey = this.#blocks.get(name);
    byKey?.delete(key);
    if (byKey?.size === 0) this.#blocks.delete(name);
  }

  /** `name` and `key`'s block moved to one of `length` slots (a limit with more shards than the writes that made it). */
  #grow(name: string, key: string | undefined, base: number, length: number): number {
    const had = this.#lengths[base]!;
    const moved = this.#allocate(Math.max(length, had * 2));
    for (let shard = 0; shard < had; shard++) {
      const value = this.#values[base + shard]!;
      if (!Number.isNaN(value)) this.#set(moved + shard, { value, ts: this.#stamps[base + shard]! }, this.#fullAt[base + shard]!);
    }
    this.#release(base);
    this.#adopt(name, key, moved);
    return moved;
  }

  /**
   * Before adding a key at `now`: at `maxKeys`, drops every key whose states
   * are all full again (which changes no decision), or throws STORE_FULL.
   */
  #makeRoom(now: number): void {
    if (this.#keys < this.#maxKeys) return;
    if (now >= this.#nextDroppable) {
      let next = Number.POSITIVE_INFINITY;
      for (const [name, byKey] of this.#blocks) {
        for (const [key, base] of byKey) {
          let fullFrom = Number.NEGATIVE_INFINITY;
          for (let slot = base; slot < base + this.#lengths[base]!; slot++) {
            if (!Number.isNaN(this.#values[slot]!)) fullFrom = Math.max(fullFrom, this.#fullAt[slot]!);
          }
          if (fullFrom <= now) {
            this.#droppedUntil = Math.max(this.#droppedUntil, fullFrom);
            this.#release(base);
            byKey.delete(key);
          } else next = Math.min(next, fullFrom);
        }
        if (byKey.size === 0) this.#blocks.delete(name);
      }
      this.#nextDroppable = next;
      // Records are kept while some grant may still read them, and no longer.
      for (const byKey of this.#records.values()) {
        for (const byShard of byKey.values()) for (const [shard, record] of byShard) if (record[2] <= now) byShard.delete(shard);
      }
    }
    if (this.#keys >= this.#maxKeys) throw storeFull(this.#maxKeys);
  }

  /** How many shard states are stored. */
  get size(): number {
    return this.#occupied;
  }

  /** How many names-and-keys are stored (what `maxKeys` bounds). */
  get keyCount(): number {
    return this.#keys;
  }

  /** Forgets every state. */
  clear(): void {
    this.#blocks.clear();
    this.#records.clear();
    this.#values = new Float64Array(64).fill(Number.NaN);
    this.#stamps = new Float64Array(64);
    this.#fullAt = new Float64Array(64);
    this.#lengths = new Uint16Array(64);
    this.#end = 0;
    this.#free.clear();
    this.#occupied = 0;
    this.#keys = 0;
    this.#nextDroppable = Number.POSITIVE_INFINITY;
  }
}
