/**
 * The slab: the states of every `MemoryStore` of this realm, in the core's
 * own memory (`src/wasm/slab.rs`), three numbers a slot (value, ts, fullAt;
 * a NaN value: no state), so that the core decides on a state where it lies
 * and a `limit()` crosses into WebAssembly once, with numbers. Stores take
 * blocks of slots here (one slot a shard) and give them back; this module
 * only hands out slots, it knows no names or keys.
 *
 * The slab grows the module's memory (`memory.grow`) rather than living in a
 * fixed static: a `MemoryStore` has no bound of its own unless given
 * `maxKeys`, and a static large enough for a server's million keys would be
 * memory every browser tab pays for. Growing replaces the memory's buffer,
 * so the views are made again after each grow (`memoryGrew`).
 * @module
 */
import type { Compiled } from "./config.js";
import { core, io, layout, memoryGrew } from "./engine.js";
import { SLAB_SLOT_LEN } from "./boundary.js";

/** A slot's numbers: value, ts, fullAt (`src/wasm/slab_layout.rs`). */
export const SLOT_LEN = SLAB_SLOT_LEN;

/** The slab: slot `s` is at `slab[3 * s]` (value), `+ 1` (ts), `+ 2` (fullAt). Remade when it grows. */
export let slab: Float64Array = new Float64Array(0);
/** Per block start: its length (0 inside a block or free). */
let lengths = new Uint16Array(0);
/** Slots handed out so far from the start (freed blocks are kept by length and reused). */
let end = 0;
/** Freed blocks by length: their first slots. */
const free = new Map<number, number[]>();
/** The instance whose memory the slab lives in (a new instance starts a new slab). */
let owner: unknown;

/** Starts a new slab (and config table) when the instance is not the one the slab lives in. */
function sameInstance(): void {
  if (owner === core) return;
  owner = core;
  slab = new Float64Array(0);
  lengths = new Uint16Array(0);
  end = 0;
  free.clear();
  ids = new WeakMap();
  idsByNumbers.clear();
}

/** Makes room for `slots` slots; false when the memory cannot grow. */
function reserve(slots: number): boolean {
  // Read before growing: a grow detaches the old view (its length reads 0 after).
  const had = slab.length / SLOT_LEN;
  if (slots <= had) return true;
  const at = core.rb_slab_grow(Math.max(slots, 2 * had, 1024));
  if (at < 0) return false;
  memoryGrew();
  const capacity = core.rb_slab_slots();
  const fresh = new Float64Array(core.memory.buffer, at, capacity * SLOT_LEN);
  // Slots past the old end hold no state (the grown pages are zeroes, which would read as a state).
  for (let slot = had; slot < capacity; slot++) fresh[SLOT_LEN * slot] = Number.NaN;
  slab = fresh;
  const grown = new Uint16Array(capacity);
  grown.set(lengths);
  lengths = grown;
  return true;
}

/**
 * A block of `length` empty slots.
 *
 * @param length How many slots (shards).
 * @returns Its first slot, or -1 when the memory cannot grow.
 */
export function allocate(length: number): number {
  sameInstance();
  const reused = free.get(length)?.pop();
  if (reused !== undefined) return reused;
  if (!reserve(end + length)) return -1;
  const base = end;
  lengths[base] = length;
  end = base + length;
  return base;
}

/**
 * How many slots the block at `base` has.
 *
 * @param base The block's first slot.
 * @returns Its length.
 */
export function lengthOf(base: number): number {
  return lengths[base]!;
}

/**
 * Empties the block at `base` and frees it for reuse.
 *
 * @param base The block's first slot.
 */
export function release(base: number): void {
  const length = lengths[base]!;
  for (let slot = base; slot < base + length; slot++) slab[SLOT_LEN * slot] = Number.NaN;
  let list = free.get(length);
  if (list === undefined) free.set(length, (list = []));
  list.push(base);
}

/** Config ids in the core's table, by the compiled config and by its numbers (equal configs share one). */
let ids = new WeakMap<Compiled, number>();
const idsByNumbers = new Map<string, number>();

/**
 * The id of `limit`'s config in the core's table, compiled into it on first use (-1: the table
 * is full; the limit then takes the general path).
 *
 * @param limit A compiled config.
 * @returns Its id, or -1.
 */
export function configId(limit: Compiled): number {
  let id = ids.get(limit);
  if (id !== undefined && owner === core) return id;
  sameInstance();
  if (!reserve(1)) return -1;
  // Every distinct number its own text (String() round-trips, and -0 is written apart from 0).
  const numbers = limit.numbers.map((number) => (Object.is(number, -0) ? "-0" : String(number))).join(",");
  id = idsByNumbers.get(numbers);
  if (id === undefined) {
    io.set(limit.numbers, layout.EXTRA);
    id = core.rb_slab_config();
    idsByNumbers.set(numbers, id);
  }
  ids.set(limit, id);
  return id;
}
