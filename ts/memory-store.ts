import type { RateLimitState, RateLimitStore, StateRef } from "./wasm/ratebound.js";

/**
 * Where a ref's state is kept: shard, then the name's length and the name,
 * then `=key` when there is a key. Reading the length first makes the
 * encoding unambiguous, so no two distinct refs share a slot
 * (`"a:b"` + `"c"` and `"a"` + `"b:c"` stay apart; no key and `""` too).
 */
function slot(ref: StateRef): string {
  const head = `${ref.shard}:${ref.name.length}:${ref.name}`;
  return ref.key === undefined ? head : `${head}=${ref.key}`;
}

/**
 * A {@link RateLimitStore} in process memory: for tests, single-process
 * servers, and in-page previews. It answers synchronously, so limiter calls on
 * it never wait on the event loop.
 *
 * @example
 * const limiter = new RateLimiter(new MemoryStore(), { api: { kind: "token bucket", rate: 10, period: SECOND } });
 */
export class MemoryStore implements RateLimitStore {
  readonly #states = new Map<string, RateLimitState>();

  /**
   * @param ref The shard to read.
   * @returns Its state, or `null` when it has none.
   */
  read(ref: StateRef): RateLimitState | null {
    return this.#states.get(slot(ref)) ?? null;
  }

  /**
   * @param ref The shard to write.
   * @param state Its new state, or `null` to delete it.
   */
  write(ref: StateRef, state: RateLimitState | null): void {
    if (state === null) this.#states.delete(slot(ref));
    else this.#states.set(slot(ref), { value: state.value, ts: state.ts });
  }

  /** How many shard states are stored. */
  get size(): number {
    return this.#states.size;
  }

  /** Forgets every state. */
  clear(): void {
    this.#states.clear();
  }
}
