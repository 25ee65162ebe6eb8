/**
 * The WebAssembly core, instantiated once per realm by a runtime entry
 * (`ts/entries/`), and the buffer its calls go through: numbers in, numbers
 * out (`src/wasm/io.rs` documents the layout, which is read from the module
 * itself). The module imports nothing, so instantiating it is synchronous
 * and needs no glue.
 * @module
 */

/** What the module exports (`src/wasm/exports.rs`). */
export interface CoreExports {
  memory: { buffer: ArrayBuffer };
  rb_io(): number;
  rb_layout(which: number): number;
  rb_compile(): number;
  rb_plan(count: number): number;
  rb_decide(count: number, slots: number, mode: number): number;
  rb_decide_one(): number;
  rb_plan_charge(slot: number): number;
  rb_charge(slot: number, tag: number): number;
  rb_settle_reads(): number;
  rb_settle(actual: number, now: number): number;
  rb_value_draws(asked: number, wanted: number): number;
  rb_plan_value(asked: number, wanted: number, now: number): number;
  rb_value(count: number, now: number): number;
  rb_check_now(now: number): number;
  rb_calculate(kind: number, rate: number, period: number, capacity: number, maxReserved: number, shards: number, start: number, value: number, ts: number, now: number, count: number, phase: number): number;
  rb_decide_state(value: number, ts: number, now: number, count: number, reserve: number, phase: number): number;
  rb_figures(value: number, ts: number, now: number, retryAfter: number, sampled: number): number;
  rb_jitter(retryAfter: number, maxJitter: number, random: number): number;
}

// The global, typed here so that no declaration the package ships names the WebAssembly namespace.
declare const WebAssembly: { Instance: new (module: object, imports: object) => { exports: unknown } };

/** The buffer's regions and strides, read from the module. */
export interface Layout {
  ITEMS: number;
  PLAN: number;
  MAP: number;
  SLOTS: number;
  OUT: number;
  EXTRA: number;
  ITEM: number;
  PLAN_STRIDE: number;
  SLOT: number;
  OUT_STRIDE: number;
  MAX_ITEMS: number;
  MAX_SLOTS: number;
}

/** The instance's exports. */
export let core: CoreExports = undefined as unknown as CoreExports;
/** The shared buffer. */
export let io: Float64Array = new Float64Array(0);
/** Its layout. */
export let layout: Layout = undefined as unknown as Layout;

/**
 * Whose items (and map) the buffer holds now: a batch planned and then read
 * synchronously, with nothing else run in between, need not write them again.
 * Every writer of the items sets it (to itself, or `undefined`).
 */
export let itemsOwner: unknown = undefined;

/**
 * Whose plan the buffer's `PLAN` region holds now (written by `rb_plan` from that batch's
 * items, with nothing run since): a store that decides next to its data is sent it without
 * planning again.
 */
export let planOwner: unknown = undefined;

/** Records who wrote the buffer's items last (the plan is theirs only if it was already). */
export function ownItems(owner: unknown): void {
  itemsOwner = owner;
  if (owner !== planOwner) planOwner = undefined;
}

/** Records that `owner` wrote the items and planned them: both are its. */
export function ownPlan(owner: unknown): void {
  itemsOwner = owner;
  planOwner = owner;
}

/**
 * Instantiates the core from a compiled module (each runtime entry compiles
 * or imports it its own way) and makes it the one every call uses.
 *
 * @param module A compiled `WebAssembly.Module` of `ratebound.wasm`.
 */
export function useModule(module: object): void {
  const exports = new WebAssembly.Instance(module, {}).exports as CoreExports;
  const at = (which: number) => exports.rb_layout(which);
  layout = {
    ITEMS: at(0),
    PLAN: at(1),
    MAP: at(2),
    SLOTS: at(3),
    OUT: at(4),
    EXTRA: at(5),
    ITEM: at(6),
    PLAN_STRIDE: at(7),
    SLOT: at(8),
    OUT_STRIDE: at(9),
    MAX_ITEMS: at(10),
    MAX_SLOTS: at(11),
  };
  // The module never grows its memory (it allocates nothing), so the view stays valid.
  io = new Float64Array(exports.memory.buffer, exports.rb_io(), at(12));
  core = exports;
}
