// A closed loop, as a busy server drives its limiter: `inFlight` workers, each sending its next
// call as soon as its last one answered, for `durationMs`; keys taken in turn from `keys`.

/** The `p`-th percentile of sorted numbers (NaN when there are none). */
export const percentile = (sorted, p) => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]);

/** A short name for why a call failed: its `code`, else its class, with the start of its message. */
const failureName = (error) => `${error?.code ?? error?.name ?? typeof error}${error?.message ? `: ${String(error.message).slice(0, 80)}` : ""}`;

/**
 * Runs the loop. `call(key)` resolves `true` (granted) or `false` (refused): both are decisions;
 * a rejection is a failed call (counted by its reason), never a decision.
 *
 * @param {{ call: (key: string) => Promise<boolean>, keys: string[], inFlight: number, durationMs: number }} options
 * @returns {Promise<{ calls: number, granted: number, refused: number, failed: number, failures: Record<string, number>, elapsedMs: number, decisionsPerSecond: number, failedShare: number, p50: number, p99: number }>}
 * Latencies (ms, `p50`, `p99`) are of every call, failed ones included; `elapsedMs` runs to the
 * last answer, so calls still in flight at the end are counted whole.
 * @example
 * const run = await closedLoop({ call: (key) => limiter.limit("api", { key }).then((r) => r.ok), keys: ["a"], inFlight: 32, durationMs: 3000 });
 */
export async function closedLoop({ call, keys, inFlight, durationMs }) {
  const latencies = [];
  const failures = {};
  const counts = { granted: 0, refused: 0, failed: 0 };
  let next = 0;
  const start = performance.now();
  const end = start + durationMs;
  const worker = async () => {
    while (performance.now() < end) {
      const key = keys[next++ % keys.length];
      const sent = performance.now();
      try {
        if (await call(key)) counts.granted++;
        else counts.refused++;
      } catch (error) {
        counts.failed++;
        const name = failureName(error);
        failures[name] = (failures[name] ?? 0) + 1;
      }
      latencies.push(performance.now() - sent);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  const elapsedMs = performance.now() - start;
  latencies.sort((a, b) => a - b);
  const calls = counts.granted + counts.refused + counts.failed;
  return {
    calls,
    ...counts,
    failures,
    elapsedMs,
    decisionsPerSecond: ((counts.granted + counts.refused) * 1000) / elapsedMs,
    failedShare: calls === 0 ? 0 : counts.failed / calls,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  };
}
