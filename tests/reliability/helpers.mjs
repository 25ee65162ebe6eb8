// Shared pieces of the reliability suites (not a test file itself): counts for
// the report, stores that fail on purpose, a transactional host, and the
// checks every stored state and every decision must pass.
import { appendFileSync } from "node:fs";
import { setImmediate as nextTurn } from "node:timers/promises";
import assert from "node:assert/strict";

export { KINDS, seeded } from "../js/helpers.mjs";

/**
 * Adds `counts` to the report of `npm run test:reliability`: one JSON line in
 * the file `RATEBOUND_RELIABILITY_COUNTS` names (nothing when it is unset).
 * @param {string} suite
 * @param {Record<string, number>} counts e.g. `{ inputs: 120, faults: 3, decisions: 40 }`
 */
export function report(suite, counts) {
  const path = process.env.RATEBOUND_RELIABILITY_COUNTS;
  if (path) appendFileSync(path, `${JSON.stringify({ suite, ...counts })}\n`);
}

/** A counter per name, reported at the end of a file with `flush`. */
export class Tally {
  constructor(suite) {
    this.suite = suite;
    this.counts = {};
  }
  add(name, by = 1) {
    this.counts[name] = (this.counts[name] ?? 0) + by;
  }
  flush() {
    report(this.suite, this.counts);
    this.counts = {};
  }
}

/**
 * Asserts a stored state is `{ value, ts }` with two finite numbers.
 * @param {unknown} state
 * @param {string} where
 */
export function assertFiniteState(state, where) {
  assert.ok(state !== null && typeof state === "object", `${where}: wrote ${String(state)}`);
  assert.ok(Number.isFinite(state.value) && Number.isFinite(state.ts), `${where}: wrote a non-finite state ${JSON.stringify(state, (k, v) => (typeof v === "number" && !Number.isFinite(v) ? String(v) : v))}`);
}

/**
 * A store over a Map that checks every write: a state must be two finite
 * numbers (or null, a delete). It keeps its own copies.
 */
export class CheckedStore {
  constructor() {
    this.states = new Map();
    this.writes = 0;
  }
  static slot(ref) {
    return JSON.stringify([ref.name, ref.key ?? null, ref.key === undefined, ref.shard]);
  }
  read(ref) {
    const state = this.states.get(CheckedStore.slot(ref));
    return state === undefined ? null : { ...state };
  }
  write(ref, state) {
    this.writes += 1;
    if (state === null) {
      this.states.delete(CheckedStore.slot(ref));
      return;
    }
    assertFiniteState(state, `write to ${JSON.stringify(ref)}`);
    this.states.set(CheckedStore.slot(ref), { value: state.value, ts: state.ts });
  }
}

/** Every kind of fault a store can have, as its injector names them. */
export const FAULTS = ["read throws", "read rejects", "read answers late", "read answers corrupt", "write throws", "write rejects", "write answers late"];

/** States that are not two finite numbers: each must fail the call with CORRUPT_STATE. */
export const CORRUPT_STATES = [
  { value: NaN, ts: 0 },
  { value: 1, ts: Infinity },
  { value: -Infinity, ts: 0 },
  { value: "5", ts: 0 },
  { value: 5 },
  {},
  42,
  "full",
  true,
  [5, 0],
  { value: { valueOf: () => 5 }, ts: 0 },
  { value: 5n, ts: 0n },
];

/**
 * A store that injects faults at random (seeded) into the calls of many
 * limiters: it throws, rejects, answers late (after a macrotask or two) or
 * answers a corrupt state. Every injected fault is counted in `injected`.
 * Its states live in `inner` (any store).
 */
export class FaultyStore {
  /**
   * @param {{ read: Function, write: Function }} inner
   * @param {() => number} random seeded numbers in [0, 1)
   * @param {{ faultRate?: number, faults?: string[] }} options
   */
  constructor(inner, random, { faultRate = 0.1, faults = FAULTS } = {}) {
    this.inner = inner;
    this.random = random;
    this.faultRate = faultRate;
    this.faults = faults;
    this.injected = {};
  }
  #pick(method) {
    if (this.random() >= this.faultRate) return null;
    const mine = this.faults.filter((fault) => fault.startsWith(method));
    if (mine.length === 0) return null;
    const fault = mine[Math.floor(this.random() * mine.length)];
    this.injected[fault] = (this.injected[fault] ?? 0) + 1;
    return fault;
  }
  get faultCount() {
    return Object.values(this.injected).reduce((sum, count) => sum + count, 0);
  }
  read(ref) {
    const fault = this.#pick("read");
    if (fault === "read throws") throw new Error(`injected: read of shard ${ref.shard} failed`);
    if (fault === "read rejects") return Promise.reject(new Error(`injected: read of shard ${ref.shard} rejected`));
    if (fault === "read answers corrupt") return CORRUPT_STATES[Math.floor(this.random() * CORRUPT_STATES.length)];
    if (fault === "read answers late") {
      const turns = 1 + Math.floor(this.random() * 3);
      return (async () => {
        for (let turn = 0; turn < turns; turn++) await nextTurn();
        return this.inner.read(ref);
      })();
    }
    return this.inner.read(ref);
  }
  write(ref, state) {
    const fault = this.#pick("write");
    if (fault === "write throws") throw new Error(`injected: write of shard ${ref.shard} failed`);
    if (fault === "write rejects") return Promise.reject(new Error(`injected: write of shard ${ref.shard} rejected`));
    if (fault === "write answers late") {
      return (async () => {
        await nextTurn();
        return this.inner.write(ref, state);
      })();
    }
    return this.inner.write(ref, state);
  }
}

/**
 * A host that runs each call as a serializable transaction, the way Convex
 * mutations and Deno KV atomic commits do (optimistic concurrency): reads see
 * committed states; writes are buffered; at the end the transaction commits
 * only if nothing it read changed meanwhile, else it is retried. A call that
 * fails commits nothing. Commits are numbered, so the committed calls can be
 * replayed in commit order.
 */
export class TransactionalHost {
  constructor(inner = new CheckedStore()) {
    this.inner = inner;
    this.versions = new Map();
    this.commits = 0;
    this.conflicts = 0;
  }
  /**
   * Runs `body(store)` as a transaction; retries on conflict up to `attempts` times.
   * @template T
   * @param {(store: { read: Function, write: Function }) => Promise<T>} body
   * @returns {Promise<{ value: T, commit: number }>}
   */
  async run(body, attempts = 50) {
    for (let attempt = 0; attempt < attempts; attempt++) {
      const seen = new Map();
      const pending = new Map();
      const host = this;
      const tx = {
        read(ref) {
          const slot = CheckedStore.slot(ref);
          if (pending.has(slot)) return pending.get(slot).state;
          if (!seen.has(slot)) seen.set(slot, host.versions.get(slot) ?? 0);
          return host.inner.read(ref);
        },
        write(ref, state) {
          pending.set(CheckedStore.slot(ref), { ref, state });
        },
      };
      const value = await body(tx); // a rejection commits nothing
      const stale = [...seen].some(([slot, version]) => (this.versions.get(slot) ?? 0) !== version);
      if (stale) {
        this.conflicts += 1;
        continue;
      }
      for (const [slot, { ref, state }] of pending) {
        this.inner.write(ref, state);
        this.versions.set(slot, (this.versions.get(slot) ?? 0) + 1);
      }
      this.commits += 1;
      return { value, commit: this.commits };
    }
    throw new Error("too many conflicts");
  }
}
