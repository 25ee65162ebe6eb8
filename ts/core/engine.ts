/**
 * The WebAssembly core, instantiated once per realm by a runtime entry
 * (`ts/entries/`), and the buffer its calls go through: numbers in, numbers
 * out (`src/wasm/io.rs` documents the layout, which is read from the module
 * itself). The module imports nothing, so instantiating it is synchronous
 * and needs no glue.
 * @module
 */
import { FIGURE_EFFECTIVE_WINDOW, FIGURE_LIMIT, FIGURE_REMAINING, FIGURE_RESET, FIGURE_RETRY_AFTER, FIGURE_SAMPLED, FIGURE_WINDOW } from "./boundary.js";
import type { RateLimitFigures } from "./types.js";

/** What the module exports (`src/wasm/exports.rs`). */
export interface CoreExports {
  memory: { buffer: ArrayBuffer };
  rb_io(): number;
  rb_layout(which: number): number;
  rb_compile(): number;
  rb_plan(count: number): number;
  rb_decide(count: number, slots: number, mode: number): number;
  rb_decide_one(): number;
  /** Grants: in the full module only (`grantsEngine`). */
  rb_plan_charge(slot: number): number;
  rb_charge(slot: number, tag: number): number;
  rb_settle_reads(): number;
  rb_settle(actual: number, now: number): number;
  /** Limits stored in the host (`src/wasm/limits.rs`): in the full module only. */
  rb_limit_encode(): number;
  rb_limit_resolve(index: number): number;
  rb_value_draws(asked: number, wanted: number): number;
  rb_plan_value(asked: number, wanted: number, now: number): number;
  rb_value(count: number, now: number): number;
  rb_check_now(now: number): number;
  rb_calculate(kind: number, rate: number, period: number, capacity: number, maxReserved: number, shards: number, start: number, value: number, ts: number, now: number, count: number, phase: number): number;
  /** `calculateRateLimit` (`src/wasm/pure.rs`): a config loaded once, then four numbers and a phase a call. */
  rb_calculate_use(kind: number, rate: number, period: number, capacity: number, maxReserved: number, shards: number, start: number): void;
  rb_calculate_next(value: number, ts: number, now: number, count: number, phase: number): number;
  rb_decide_state(value: number, ts: number, now: number, count: number, reserve: number, phase: number): number;
  rb_figures(value: number, ts: number, now: number, retryAfter: number, sampled: number): number;
  rb_jitter(retryAfter: number, maxJitter: number, random: number): number;
  /** `MemoryStore`'s slab and config table (`src/wasm/slab.rs`). */
  rb_slab_config(): number;
  rb_slab_grow(slots: number): number;
  rb_slab_slots(): number;
  rb_slab_limit(config: number, slot: number, count: number, flags: number, now: number, draw: number): number;
}

// The globals, typed here so that no declaration the package ships names the WebAssembly namespace.
declare const WebAssembly: { Instance: new (module: object, imports: object) => { exports: unknown }; Module: new (bytes: Uint8Array) => object };
declare const atob: (text: string) => string;

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

/** An instance: its exports, its buffer and the buffer's layout. */
export interface Engine {
  readonly core: CoreExports;
  readonly io: Float64Array;
  readonly layout: Layout;
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
 * The header figures the core wrote at `at`: limit, remaining, reset, window,
 * retryAfter in seconds (NaN: none), sampled, effective window.
 *
 * @param at Where in the buffer.
 * @param buffer Whose buffer: the main instance's unless told (a grant's charge answers in the grants engine's).
 */
export function figuresAt(at: number, buffer: Float64Array = io): RateLimitFigures {
  const seconds = buffer[at + FIGURE_RETRY_AFTER]!;
  return {
    limit: buffer[at + FIGURE_LIMIT]!,
    remaining: buffer[at + FIGURE_REMAINING]!,
    reset: buffer[at + FIGURE_RESET]!,
    window: buffer[at + FIGURE_WINDOW]!,
    ...(Number.isNaN(seconds) ? {} : { retryAfter: seconds }),
    sampled: buffer[at + FIGURE_SAMPLED]!,
    effectiveWindow: buffer[at + FIGURE_EFFECTIVE_WINDOW]!,
  };
}

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
 * Compiles the core from its bytes inlined in JavaScript as base64 (the
 * generated `dist/wasm/*.base64.js`), synchronously, and makes it the
 * one every call uses: the entry of Node and Bun (browsers start with a small
 * module, {@link compileLatin1}). Nothing is read or fetched, so there is no path or URL for a bundler
 * to rewrite and no top-level `await`.
 *
 * @param base64 The `.wasm` file's bytes in base64.
 * @param full When `base64` is a small module (no grants): compiles the full one, on the first grant.
 */
export function useInlined(base64: string, full?: () => Promise<object>): void {
  useModule(compileBase64(base64), full);
}

/**
 * Compiles a module from its bytes in base64, synchronously.
 *
 * @param base64 The `.wasm` file's bytes in base64.
 * @returns A compiled `WebAssembly.Module`.
 */
export function compileBase64(base64: string): object {
  return new WebAssembly.Module(bytesOfBase64(base64));
}

/**
 * Compiles a module from its bytes inlined as a string of one character per
 * byte (the generated `dist/wasm/*.bytes.js`, what browsers start with: 15 %
 * smaller than base64 once gzipped in a bundle), synchronously.
 *
 * @param text The `.wasm` file's bytes, each a character from U+0000 to U+00FF.
 * @returns A compiled `WebAssembly.Module`.
 */
export function compileLatin1(text: string): object {
  const bytes = new Uint8Array(text.length);
  for (let at = 0; at < text.length; at++) bytes[at] = text.charCodeAt(at);
  return new WebAssembly.Module(bytes);
}

/**
 * Decodes base64 with the platform's own decoder where there is one
 * (`Uint8Array.fromBase64`, Node's `Buffer`: a tenth of a millisecond for
 * 60 KB), else `atob`. `Buffer` is read from `globalThis`, so that no bundler
 * injects a polyfill for it into a browser bundle.
 */
function bytesOfBase64(base64: string): Uint8Array {
  const native = Uint8Array as unknown as { fromBase64?: (text: string) => Uint8Array };
  if (typeof native.fromBase64 === "function") return native.fromBase64(base64);
  const buffer = (globalThis as { Buffer?: { from(text: string, encoding: "base64"): Uint8Array } }).Buffer;
  if (typeof buffer?.from === "function") return buffer.from(base64, "base64");
  const text = atob(base64);
  const bytes = new Uint8Array(text.length);
  for (let at = 0; at < text.length; at++) bytes[at] = text.charCodeAt(at);
  return bytes;
}

/**
 * Instantiates the core from a compiled module (each runtime entry compiles
 * or imports it its own way) and makes it the one every call uses.
 *
 * @param module A compiled `WebAssembly.Module` of `ratebound.wasm` (or of a small one, without grants).
 * @param full When `module` is a small one: compiles the full one, on the first grant.
 */
export function useModule(module: object, full?: () => Promise<object>): void {
  // Plain assignments, not a destructuring one: Turbopack (Next.js 16) misses an exported `let`
  // reassigned by destructuring and exports it as a constant, which stays undefined.
  const engine = instantiate(module);
  core = engine.core;
  io = engine.io;
  layout = engine.layout;
  // The buffer's view is read through `io` (remade when the slab grows the memory: `memoryGrew`).
  grants = typeof core.rb_charge === "function" ? Promise.resolve({ core, layout, get io() { return io; } }) : undefined;
  loadFull = full;
}

/** The slab (`ts/core/slab.ts`) grew the module's memory, which detaches every view of it: the buffer's is made again. */
export function memoryGrew(): void {
  io = new Float64Array(core.memory.buffer, core.rb_io(), core.rb_layout(12));
}

/** An instance of a compiled module, with its buffer and layout. */
function instantiate(module: object): Engine {
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
  // The module allocates nothing; only the slab grows its memory (`memoryGrew` then makes this view again).
  return { core: exports, io: new Float64Array(exports.memory.buffer, exports.rb_io(), at(12)), layout };
}

/** The instance that settles grants: the main one when it has them, else the full module, loaded once. */
let grants: Promise<Engine> | undefined;
/** How the runtime entry compiles the full module when the main one is a small one. */
let loadFull: (() => Promise<object>) | undefined;

/**
 * The instance that charges and settles grants. A runtime that loaded a
 * small module (no grants: what a browser app downloads) loads the full one
 * on the first grant, once. A load that
 * fails (a browser bundle that does not serve `ratebound.wasm` where the
 * entry's URL points) rejects that grant, and the next grant tries again.
 *
 * @returns The engine with the grant exports.
 */
export function grantsEngine(): Promise<Engine> {
  grants ??= (loadFull === undefined ? Promise.reject(new Error("ratebound: this runtime's entry loaded no module with grants")) : loadFull()).then(instantiate, (error: unknown) => {
    grants = undefined;
    throw error;
  });
  return grants;
}
