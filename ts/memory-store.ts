import { MemorySlab } from "./wasm/ratebound.js";
import type { RateLimitState, RateLimitStore, StateRef } from "./wasm/ratebound.js";

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
  readonly slab: MemorySlab = new MemorySlab();
  readonly #blocks = new Map<string, Map<string | undefined, number>>();

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
   */
  write(ref: StateRef, state: RateLimitState | null): void {
    const base = this.blockOf(ref.name, ref.key);
    if (state === null) {
      if (base < 0 || ref.shard >= this.slab.blockLength(base)) return;
      this.slab.clear(base + ref.shard);
      if (this.slab.blockIsEmpty(base)) this.#forget(ref.name, ref.key, base);
      return;
    }
    const needed = ref.shard + 1;
    let slot = base;
    if (base < 0 || this.slab.blockLength(base) < needed) {
      slot = this.slab.allocate(needed);
      if (base >= 0) {
        // A limit with more shards than this key's block: move the states over.
        for (let shard = 0; shard < this.slab.blockLength(base); shard += 1) {
          const value = this.slab.value(base + shard);
          if (!Number.isNaN(value)) this.slab.write(slot + shard, value, this.slab.ts(base + shard));
        }
        this.slab.release(base);
      }
      this.adopt(ref.name, ref.key, slot);
    }
    this.slab.write(slot + ref.shard, state.value, state.ts);
  }

  /** How many shard states are stored. */
  get size(): number {
    return this.slab.occupied();
  }

  /** Forgets every state. */
  clear(): void {
    this.slab.clearAll();
    this.#blocks.clear();
  }
}
