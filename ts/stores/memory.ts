/**
 * `MemoryStore`: a {@link RateLimitStore} in process memory, for tests,
 * single-process servers and in-page previews. Its states live in the core's
 * own memory (`ts/core/slab-store.ts`), so a limiter decides an unsharded
 * `limit()` on it with one call into WebAssembly; everything else drives it
 * like any other store, synchronously, with no Promise until the caller's.
 * @module
 */
import { invalidRequest, mustBe } from "../core/errors.js";
import { ownOptions } from "../core/options.js";
import { SlabStore } from "../core/slab-store.js";

/**
 * A {@link RateLimitStore} in process memory. States live in one slab in
 * the core's WebAssembly memory (24 bytes a shard), and each name and key
 * maps to its block of slots with JavaScript `Map`s, which keep every
 * distinct string apart (`"a:b"` + `"c"` and `"a"` + `"b:c"`, no key and `""`).
 *
 * @example
 * const limiter = new RateLimiter(new MemoryStore(), { api: { kind: "token bucket", rate: 10, period: SECOND } });
 */
export class MemoryStore extends SlabStore {
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
    super((maxKeys as number | undefined) ?? Number.POSITIVE_INFINITY);
  }
}
