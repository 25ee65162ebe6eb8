// The floor contender of `npm run bench`: the core's own arithmetic behind the fewest numbers a
// call can pass, with the least JavaScript around it (scripts/bench/floor/, a crate of its own
// that calls ratebound's `advance` and `decide`). What ratebound's `calculateRateLimit` and
// `limit()` cost beyond it is what the package's checks, its config cache, its store and its
// answer objects cost; what the floor costs beyond the peers is the crossing itself.
//
// The floor checks nothing, knows one limit (set once) and keeps its states in its own memory,
// one slot a key: it is a measure, not a limiter.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

/**
 * Builds the floor's `.wasm` (cargo, release, wasm32) under `target/bench-floor/`.
 *
 * @param {string} root The repository root.
 * @param {(line: string) => void} log
 * @returns {{ wasm?: string, error?: string }} The module's path, or why there is none.
 * @example
 * const { wasm } = buildFloor(root, console.error);
 */
export function buildFloor(root, log) {
  log("the floor contender: cargo build scripts/bench/floor (wasm32, release)");
  const targetDir = join(root, "target", "bench-floor");
  const built = spawnSync(
    "cargo",
    ["build", "--release", "--quiet", "--target", "wasm32-unknown-unknown", "--manifest-path", join(root, "scripts", "bench", "floor", "Cargo.toml"), "--target-dir", targetDir],
    { cwd: root, stdio: ["ignore", "inherit", "inherit"] },
  );
  if (built.error) return { error: built.error.message };
  if (built.status !== 0) return { error: `cargo build of scripts/bench/floor exited with ${built.status}` };
  const wasm = join(targetDir, "wasm32-unknown-unknown", "release", "ratebound_bench_floor.wasm");
  return existsSync(wasm) ? { wasm } : { error: `cargo built no ${wasm}` };
}

/**
 * A fresh instance of the floor module, set to `config` (token bucket or fixed window, no shards,
 * no `maxReserved`): its exports and a view of its answer.
 *
 * @param {string} wasmPath From {@link buildFloor}.
 * @param {{ kind: string, rate: number, period: number, capacity?: number, start?: number }} config
 * @returns {{ exports: object, out: Float64Array }}
 * @example
 * const floor = floorInstance(wasm, { kind: "token bucket", rate: 10, period: 60_000 });
 */
export function floorInstance(wasmPath, config) {
  const { exports } = new WebAssembly.Instance(new WebAssembly.Module(readFileSync(wasmPath)), {});
  exports.floor_config(config.kind === "fixed window" ? 1 : 0, config.rate, config.period, config.capacity ?? config.rate, config.start ?? Number.NaN);
  return { exports, out: new Float64Array(exports.memory.buffer, exports.floor_out(), 2) };
}

/**
 * The floor of `calculateRateLimit`: one call with four numbers, the answer as the reference
 * shapes it (`retryAfter` only when short). Self-contained, so that each contender compiles a copy
 * of its own (./timing.mjs `ownCopy`): `makeFloorCalculate(instance)` returns the function.
 *
 * @param {{ exports: object, out: Float64Array }} instance From {@link floorInstance}.
 * @returns {(state: { value: number, ts: number }, config: unknown, now: number, count: number) => object}
 */
export const makeFloorCalculate = ({ exports, out }) => {
  const next = exports.floor_calculate;
  return (state, config, now, count) => {
    const value = next(state.value, state.ts, now, count);
    const retryAfter = out[1];
    return retryAfter !== retryAfter ? { value, ts: out[0] } : { value, ts: out[0], retryAfter };
  };
};

/**
 * The floor of an awaited `limit()` on in-memory states: a `Map` from key to slot, `Date.now()`,
 * one call with three numbers, and a settled Promise of the answer. Self-contained (one copy per
 * contender).
 */
export const FLOOR_LIMITER = class FloorLimiter {
  constructor({ exports, out }) {
    this.decide = exports.floor_limit;
    this.out = out;
    this.slots = new Map();
    this.granted = Object.freeze({ ok: true });
  }
  limitSync(key) {
    let slot = this.slots.get(key);
    if (slot === undefined) {
      slot = this.slots.size;
      this.slots.set(key, slot);
    }
    return this.decide(slot, Date.now(), 1) === 1 ? this.granted : { ok: false, retryAfter: this.out[1] };
  }
  limit(key) {
    return Promise.resolve(this.limitSync(key));
  }
};
