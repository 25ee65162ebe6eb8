/**
 * `SlabStore`: a {@link RateLimitStore} whose states live in the core's slab
 * (`./slab.ts`), in WebAssembly memory. It lives in core, not in
 * `ts/stores/`, because core needs one without importing upward: the
 * failure policy's memory fallback is a `SlabStore`, and `MemoryStore`
 * (`ts/stores/memory.ts`) is this class with its options checked. The
 * limiter decides an unsharded `limit`/`check` on it with one call into the
 * core ({@link limitInSlab}); everything else reads and writes it through
 * `read`/`write`, on the same slots, like any store.
 * @module
 */
import {
  OUT_FIGURES,
  OUT_RETRY_AFTER,
  SLAB_FIGURES,
  SLAB_FULL_AT,
  SLAB_MISSING_UNREADABLE,
  SLAB_NO_FULL_AT,
  SLAB_RESERVE,
  SLAB_TS,
  SLAB_UNREADABLE,
  SLAB_VALUE,
  SLAB_WRITE,
  SLOT_FULL_AT,
  SLOT_PENDING,
  STATE_TS,
  STATE_VALUE,
} from "./boundary.js";
import { core, figuresAt, io, layout } from "./engine.js";
import { coreError, invalidRequest, mustBe, storeFull } from "./errors.js";
import { allocate, lengthOf, release, slab, SLOT_LEN } from "./slab.js";
import type { RateLimitFigures, RateLimitResult, RateLimitState, RateLimitStore, StateRef, WriteInfo } from "./types.js";

/** Shards from here on are the library's records (ledgers, grants' records), kept beside the states. */
const FIRST_RECORD_SHARD = 1024;
const ALLOWED: RateLimitResult = Object.freeze({ ok: true }) as RateLimitResult;
/** `rb_slab_limit`'s flags and its status for a state it may not read as full (`src/wasm/slab_layout.rs`). */
const RESERVE = SLAB_RESERVE;
const WRITE = SLAB_WRITE;
const FIGURES = SLAB_FIGURES;
const MISSING_UNREADABLE = SLAB_MISSING_UNREADABLE;
const NO_FULL_AT = SLAB_NO_FULL_AT;
const UNREADABLE = SLAB_UNREADABLE;

/** A ref's key, own field only: a polluted `Object.prototype.key` never redirects a keyless ref. */
function keyOf(ref: StateRef): string | undefined {
  return Object.hasOwn(ref, "key") ? ref.key : undefined;
}

/** name → key → the first slot of its block. */
type Blocks = Map<string, Map<string | undefined, number>>;

/** A collected store's blocks go back to the slab. */
const collected =
  typeof FinalizationRegistry === "function"
    ? new FinalizationRegistry<Blocks>((blocks) => {
        for (const byKey of blocks.values()) for (const base of byKey.values()) release(base);
      })
    : undefined;

/**
 * One call decided and written in the slab, with one crossing: the limiter's road for an
 * unsharded `limit`/`check` on a store whose `read` and `write` are this class's own.
 *
 * @returns The answer (with its figures when asked).
 * @throws The core's error for bad input, or STORE_FULL.
 */
export let limitInSlab: (
  store: SlabStore,
  configId: number,
  name: string,
  key: string | undefined,
  count: number,
  reserve: boolean,
  write: boolean,
  now: number,
  drawn: number,
  figures: boolean,
) => RateLimitResult & { figures?: RateLimitFigures };

/**
 * A {@link RateLimitStore} in the core's slab. Each name and key maps to its
 * block of slots (one a shard) with JavaScript `Map`s, which keep every
 * distinct string apart (`"a:b"` + `"c"` and `"a"` + `"b:c"`, no key and `""`).
 * See `MemoryStore` for what it promises.
 */
export class SlabStore implements RateLimitStore {
  readonly #blocks: Blocks = new Map();
  /** The last name decided in the slab and its keys (`undefined`: none): most calls repeat a name. Cleared whenever `#blocks` gains or loses a name. */
  #lastName: string | undefined = undefined;
  #lastKeys: Map<string | undefined, number> | undefined = undefined;
  /** name → key → shard → [value, ts, fullAt]: the library's records. */
  readonly #records = new Map<string, Map<string | undefined, Map<number, [number, number, number]>>>();
  #keys = 0;
  readonly #maxKeys: number;
  /** No block can be dropped before this instant. */
  #nextDroppable = Number.POSITIVE_INFINITY;
  /** Until this instant a missing key may be one that was dropped: a clock that steps back before it would find it full. */
  #droppedUntil = Number.NEGATIVE_INFINITY;

  /** `rb_slab_limit`'s flags every call of this store takes: a store with no `maxKeys` never drops a state, so never reads its fullAt. */
  readonly #flags: number;

  /** @param maxKeys The most names-and-keys to hold (checked by the caller). */
  constructor(maxKeys: number = Number.POSITIVE_INFINITY) {
    this.#maxKeys = maxKeys;
    this.#flags = maxKeys === Number.POSITIVE_INFINITY ? NO_FULL_AT : 0;
    collected?.register(this, this.#blocks);
  }

  static {
    limitInSlab = (store, configId, name, key, count, reserve, write, now, drawn, figures) => {
      let keys = store.#lastKeys;
      if (name !== store.#lastName || keys === undefined) {
        keys = store.#blocks.get(name);
        if (keys !== undefined) {
          store.#lastName = name;
          store.#lastKeys = keys;
        }
      }
      const base = keys?.get(key);
      const flags = store.#flags | (reserve ? RESERVE : 0) | (write ? WRITE : 0) | (figures ? FIGURES : 0) | (now < store.#droppedUntil ? MISSING_UNREADABLE : 0);
      const status = core.rb_slab_limit(configId, base ?? -1, count, flags, now, drawn);
      if (status < 0) throw coreError(io, layout.OUT, name);
      if (status === UNREADABLE) throw storeFull(store.#maxKeys);
      const { OUT, SLOTS } = layout;
      const wait = io[OUT + OUT_RETRY_AFTER]!;
      const result: RateLimitResult = status === 1 ? (Number.isNaN(wait) ? ALLOWED : { ok: true, retryAfter: wait }) : { ok: false, retryAfter: wait };
      const answer = figures ? { ...result, figures: figuresAt(OUT + OUT_FIGURES) } : result;
      if (base === undefined) {
        // A new key: the core left its state in the buffer, placed here as `write` would.
        const value = io[SLOTS + SLOT_PENDING + STATE_VALUE]!;
        if (!Number.isNaN(value)) store.#place(name, key, value, io[SLOTS + SLOT_PENDING + STATE_TS]!, io[SLOTS + SLOT_FULL_AT]!, now);
      } else if (status === 1 && write && store.#maxKeys !== Number.POSITIVE_INFINITY) {
        store.#nextDroppable = Math.min(store.#nextDroppable, slab[SLOT_LEN * base + SLAB_FULL_AT]!);
      }
      return answer;
    };
  }

  /** A new key's first state, at shard 0, written at the limiter's clock `now`. */
  #place(name: string, key: string | undefined, value: number, ts: number, fullAt: number, now: number): void {
    this.#makeRoom(now);
    const base = this.#allocate(1);
    this.#adopt(name, key, base);
    this.#set(base, value, ts, fullAt);
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
    const at = base === undefined || ref.shard >= lengthOf(base) ? -1 : SLOT_LEN * (base + ref.shard);
    const value = at < 0 ? Number.NaN : slab[at + SLAB_VALUE]!;
    if (!Number.isNaN(value)) return { value, ts: slab[at + SLAB_TS]! };
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
      if (base === undefined || ref.shard >= lengthOf(base)) return;
      slab[SLOT_LEN * (base + ref.shard) + SLAB_VALUE] = Number.NaN;
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
    } else if (ref.shard >= lengthOf(base)) {
      base = this.#grow(ref.name, key, base, ref.shard + 1);
    }
    this.#set(base + ref.shard, state.value, state.ts, info?.fullAt ?? Number.POSITIVE_INFINITY);
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

  #set(slot: number, value: number, ts: number, fullAt: number): void {
    const droppable = Number.isNaN(fullAt) ? Number.POSITIVE_INFINITY : fullAt;
    const at = SLOT_LEN * slot;
    slab[at + SLAB_VALUE] = value;
    slab[at + SLAB_TS] = ts;
    slab[at + SLAB_FULL_AT] = droppable;
    if (this.#maxKeys !== Number.POSITIVE_INFINITY) this.#nextDroppable = Math.min(this.#nextDroppable, droppable);
  }

  #blockIsEmpty(base: number): boolean {
    for (let slot = base; slot < base + lengthOf(base); slot++) if (!Number.isNaN(slab[SLOT_LEN * slot]!)) return false;
    return true;
  }

  /** A block of `length` empty slots; returns its first slot. */
  #allocate(length: number): number {
    const base = allocate(length);
    // The module's memory cannot grow: no more states fit in this realm.
    if (base < 0) throw storeFull(this.#keys);
    this.#keys++;
    return base;
  }

  /** Empties and frees the block at `base`. */
  #release(base: number): void {
    release(base);
    this.#keys--;
  }

  #adopt(name: string, key: string | undefined, base: number): void {
    let byKey = this.#blocks.get(name);
    if (byKey === undefined) {
      this.#blocks.set(name, (byKey = new Map()));
      this.#lastKeys = undefined;
    }
    byKey.set(key, base);
  }

  #forget(name: string, key: string | undefined, base: number): void {
    this.#release(base);
    const byKey = this.#blocks.get(name);
    byKey?.delete(key);
    if (byKey?.size === 0) {
      this.#blocks.delete(name);
      this.#lastKeys = undefined;
    }
  }

  /** `name` and `key`'s block moved to one of `length` slots (a limit with more shards than the writes that made it). */
  #grow(name: string, key: string | undefined, base: number, length: number): number {
    const had = lengthOf(base);
    const moved = this.#allocate(Math.max(length, had * 2));
    for (let shard = 0; shard < had; shard++) {
      const from = SLOT_LEN * (base + shard);
      if (!Number.isNaN(slab[from + SLAB_VALUE]!)) this.#set(moved + shard, slab[from + SLAB_VALUE]!, slab[from + SLAB_TS]!, slab[from + SLAB_FULL_AT]!);
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
          for (let slot = base; slot < base + lengthOf(base); slot++) {
            if (!Number.isNaN(slab[SLOT_LEN * slot]!)) fullFrom = Math.max(fullFrom, slab[SLOT_LEN * slot + SLAB_FULL_AT]!);
          }
          if (fullFrom <= now) {
            this.#droppedUntil = Math.max(this.#droppedUntil, fullFrom);
            this.#release(base);
            byKey.delete(key);
          } else next = Math.min(next, fullFrom);
        }
        if (byKey.size === 0) {
          this.#blocks.delete(name);
          this.#lastKeys = undefined;
        }
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
    let occupied = 0;
    for (const byKey of this.#blocks.values()) {
      for (const base of byKey.values()) for (let slot = base; slot < base + lengthOf(base); slot++) if (!Number.isNaN(slab[SLOT_LEN * slot]!)) occupied++;
    }
    return occupied;
  }

  /** How many names-and-keys are stored (what `maxKeys` bounds). */
  get keyCount(): number {
    return this.#keys;
  }

  /** Forgets every state. */
  clear(): void {
    for (const byKey of this.#blocks.values()) for (const base of byKey.values()) release(base);
    this.#blocks.clear();
    this.#lastKeys = undefined;
    this.#records.clear();
    this.#keys = 0;
    this.#nextDroppable = Number.POSITIVE_INFINITY;
  }
}
