// Shared helpers of the JS test suites (not a test file itself).
import { MemoryStore } from "../../pkg/dist/node.js";

/** Both algorithms, for `for (const kind of KINDS) describe(kind, …)`. */
export const KINDS = ["token bucket", "fixed window"];

/**
 * A seeded PRNG (mulberry32): numbers in [0, 1), the same sequence for the same seed.
 * @param {number} seed
 */
export function seeded(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A clock the test moves by hand: `options.now` reads `clock.now`. */
export function manualClock(start = 0) {
  const clock = { now: start, read: () => clock.now };
  return clock;
}

/**
 * A MemoryStore that records every read and write, so tests can count them
 * and check that nothing was written.
 */
export class SpyStore {
  constructor(inner = new MemoryStore()) {
    this.inner = inner;
    this.reads = [];
    this.writes = [];
  }
  read(ref) {
    this.reads.push({ ...ref });
    return this.inner.read(ref);
  }
  write(ref, state) {
    this.writes.push({ ref: { ...ref }, state: state === null ? null : { ...state } });
    this.inner.write(ref, state);
  }
  /** Forgets the recorded calls (not the states). */
  forget() {
    this.reads = [];
    this.writes = [];
  }
}

/** A config for a fixed window aligned to 0 unless told otherwise; explicit `start` keeps tests deterministic. */
export function config(kind, fields) {
  if (kind === "fixed window") return { kind, start: 0, ...fields };
  return { kind, ...fields };
}

/** Every state a SpyStore/MemoryStore holds for the given refs, as plain data for deep comparison. */
export function snapshot(store, refs) {
  return refs.map((ref) => {
    const state = store.read(ref);
    return state === null ? null : { value: state.value, ts: state.ts };
  });
}

/** JSON that shows -0, NaN and ±Infinity instead of hiding them (the differential suites' messages). */
export function show(value) {
  return JSON.stringify(value, (_, v) => {
    if (typeof v !== "number") return v === undefined ? "undefined" : v;
    if (Object.is(v, -0)) return "-0";
    if (!Number.isFinite(v)) return String(v);
    return v;
  });
}

/**
 * A seeded generator and the draws the differential suites build their cases from: `chance(p)`,
 * `pick(list)`, an `integer` from `lo` to `hi`, and a `logUniform` number from 10^lo to 10^hi.
 */
export function randomTools(seed) {
  const random = seeded(seed);
  return {
    random,
    chance: (p) => random() < p,
    pick: (list) => list[Math.floor(random() * list.length)],
    integer: (lo, hi) => lo + Math.floor(random() * (hi - lo + 1)),
    logUniform: (lo, hi) => 10 ** (lo + random() * (hi - lo)),
  };
}
