import { MemorySlab } from "../wasm/ratebound.js";
import type { RateLimitState, RateLimitStore, StateRef, WriteInfo } from "../wasm/ratebound.js";

/**
 * A {@link RateLimitStore} in process memory: for tests, single-process
 * servers, and in-page previews. The states live inside WebAssembly memory
 * (16 bytes a shard); this object maps each name and key to its block of
 * slots with JavaScript `Map`s, which keep every distinct string apart
 * (`"a:b"` + `"c"` and `"a"` + `"b:c"`, no key and `""`). A limiter on a
 * MemoryStore decides named limits without calling back into JavaScript.
 *
 * @example
 * const limiter = new RateLimiter(new MemoryStore(), { api: { kind: "token bucket", rate: 10, period: SECOND } });
 */
export class MemoryStore implements RateLimitStore {
  /** @internal The states, in WebAssembly memory. */
  readonly slab: MemorySlab;
  readonly #blocks = new Map<string, Map<string | undefined, number>>();

  /**
   * @param options `maxKeys`: the most names-and-keys to hold (default: no
   * limit). When a new key would pass it, keys whose states have fully
   * refilled are dropped first, which changes no decision (a missing state
   * decides exactly as a full one). When none has, the call fails with
   * `code: "STORE_FULL"`: dropping a state that is not full would hand out
   * tokens. Fixed windows without `start` are never dropped (a fresh state
   * would get new random windows).
   * @example
   * const store = new MemoryStore({ maxKeys: 100_000 });
   */
  constructor(options: { maxKeys?: number } = {}) {
    // The core reads `maxKeys` as an own field and refuses anything else.
    this.slab = new MemorySlab(options);
  }

  /** @internal Before adding a key at `now`: drops fully refilled keys if at `maxKeys`, or throws STORE_FULL. */
  makeRoom(now: number): void {
    if (!this.slab.full) return;
    const gone = new Set(this.slab.makeRoom(now));
    if (gone.size === 0) return;
    for (const [name, byKey] of this.#blocks) {
      for (const [key, base] of byKey) if (gone.has(base)) byKey.delete(key);
      if (byKey.size === 0) this.#blocks.delete(name);
    }
  }

  /** @internal The first slot of `name` and `key`'s block, or -1 when it has none. */
  blockOf(name: string, key: string | undefined): number {
    return this.#blocks.get(name)?.get(key) ?? -1;
  }

  /** @internal Records that `name` and `key`'s states live in the block at `base`. */
  adopt(name: string, key: string | undefined, base: number): void {
    let byKey = this.#blocks.get(name);
    if (byKey === undefined) {
      byKey = new Map();
      this.#blocks.set(name, byKey);
    }
    byKey.set(key, base);
  }

  #forget(name: string, key: string | undefined, base: number): void {
    this.slab.release(base);
    const byKey = this.#blocks.get(name);
    byKey?.delete(key);
    if (byKey?.size === 0) this.#blocks.delete(name);
  }

  /**
   * @param ref The shard to read.
   * @returns Its state, or `null` when it has none.
   */
  read(ref: StateRef): RateLimitState | null {
    const base = this.blockOf(ref.name, ref.key);
    if (base < 0 || ref.shard >= this.slab.blockLength(base)) return null;
    const value = this.slab.value(base + ref.shard);
    return Number.isNaN(value) ? null : { value, ts: this.slab.ts(base + ref.shard) };
  }

  /**
   * @param ref The shard to write.
   * @param state Its new state (two finite numbers), or `null` to delete it.
   * @param info The limiter's clock and when the state is full again. Without it the state is
   * never dropped, and a new key never makes room (it fails with STORE_FULL when at `maxKeys`).
   */
  write(ref: StateRef, state: RateLimitState | null, info?: WriteInfo): void {
    const base = this.blockOf(ref.name, ref.key);
    if (state === null) {
      if (base < 0 || ref.shard >= this.slab.blockLength(base)) return;
      this.slab.clear(base + ref.shard);
      if (this.slab.blockIsEmpty(base)) this.#forget(ref.name, ref.key, base);
      return;
    }
    // Room is made at the limiter's clock, never at the state's `ts` (a window may start in the future).
    if (base < 0) this.makeRoom(info?.now ?? -Infinity);
    const slot = base < 0 ? this.#allocate(ref.name, ref.key, ref.shard + 1) : this.blockWith(ref.name, ref.key, base, ref.shard + 1);
    this.slab.write(slot + ref.shard, state.value, state.ts, info?.fullAt ?? Infinity);
  }

  #allocate(name: string, key: string | undefined, length: number): number {
    const base = this.slab.allocate(length);
    this.adopt(name, key, base);
    return base;
  }

  /**
   * @internal `name` and `key`'s block at `base`, moved to a longer one when
   * it has fewer than `length` shards (a limit with more shards than the
   * writes that made it).
   */
  blockWith(name: string, key: string | undefined, base: number, length: number): number {
    const had = this.slab.blockLength(base);
    if (had >= length) return base;
    const moved = this.#allocate(name, key, length);
    for (let shard = 0; shard < had; shard += 1) {
      const value = this.slab.value(base + shard);
      if (!Number.isNaN(value)) this.slab.write(moved + shard, value, this.slab.ts(base + shard), this.slab.fullAt(base + shard));
    }
    this.slab.release(base);
    return moved;
  }

  /** How many shard states are stored. */
  get size(): number {
    return this.slab.occupied();
  }

  /** How many names-and-keys are stored (what `maxKeys` bounds). */
  get keyCount(): number {
    return this.slab.keys;
  }

  /** Forgets every state. */
  clear(): void {
    this.slab.clearAll();
    this.#blocks.clear();
  }
}
