// A closed loop, as a busy server drives its limiter: `inFlight` workers, each sending its next
// call as soon as its last one answered, for `durationMs`; keys taken in turn from `keys`.
//
// Each contender's workers run a copy of the worker compiled from a source text of its own
// (./interleave.mjs `fresh`, named by the contender's `id`): with one worker for every
// contender, V8 would share the worker's type feedback (its `await call(key)` site sees every
// contender's promises) and charge each contender for the others' shapes.
import { fresh } from "./interleave.mjs";

/** The `p`-th percentile of sorted numbers (NaN when there are none). */
export const percentile = (sorted, p) => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]);

/** A short name for why a call failed: its `code`, else its class, with the start of its message. */
const failureName = (error) => `${error?.code ?? error?.name ?? typeof error}${error?.message ? `: ${String(error.message).slice(0, 80)}` : ""}`;

/**
 * One worker: closes over nothing (it is compiled anew per contender), reads and counts through
 * `loop`, the run's shared state.
 */
const WORKER = async (loop) => {
  while (performance.now() < loop.end) {
    const key = loop.keys[loop.next++ % loop.keys.length];
    const sent = performance.now();
    try {
      if (await loop.call(key)) loop.granted++;
      else loop.refused++;
    } catch (error) {
      loop.failed++;
      loop.fail(error);
    }
    loop.latencies.push(performance.now() - sent);
  }
};

/** Each contender's worker, compiled once for its id. */
const workers = new Map();
const workerOf = (id) => {
  if (!workers.has(id)) workers.set(id, fresh(WORKER, id));
  return workers.get(id);
};

/**
 * Runs the loop. `call(key)` resolves `true` (granted) or `false` (refused): both are decisions;
 * a rejection is a failed call (counted by its reason), never a decision.
 *
 * @param {{ id: string, call: (key: string) => Promise<boolean>, keys: string[], inFlight: number, durationMs: number }} options
 *   `id` names the contender: its workers run a copy of the worker of their own.
 * @returns {Promise<{ calls: number, granted: number, refused: number, failed: number, failures: Record<string, number>, elapsedMs: number, decisionsPerSecond: number, failedShare: number, p50: number, p99: number }>}
 * Latencies (ms, `p50`, `p99`) are of every call, failed ones included; `elapsedMs` runs to the
 * last answer, so calls still in flight at the end are counted whole.
 * @example
 * const run = await closedLoop({ id: "ratebound redis", call: (key) => limiter.limit("api", { key }).then((r) => r.ok), keys: ["a"], inFlight: 32, durationMs: 3000 });
 */
export async function closedLoop({ id, call, keys, inFlight, durationMs }) {
  const worker = workerOf(id);
  const failures = {};
  const start = performance.now();
  const loop = {
    call,
    keys,
    end: start + durationMs,
    next: 0,
    granted: 0,
    refused: 0,
    failed: 0,
    latencies: [],
    fail: (error) => {
      const name = failureName(error);
      failures[name] = (failures[name] ?? 0) + 1;
    },
  };
  await Promise.all(Array.from({ length: inFlight }, () => worker(loop)));
  const elapsedMs = performance.now() - start;
  const latencies = loop.latencies.sort((a, b) => a - b);
  const { granted, refused, failed } = loop;
  const calls = granted + refused + failed;
  return {
    calls,
    granted,
    refused,
    failed,
    failures,
    elapsedMs,
    decisionsPerSecond: ((granted + refused) * 1000) / elapsedMs,
    failedShare: calls === 0 ? 0 : failed / calls,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  };
}
