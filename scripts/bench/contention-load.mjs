// The load loop every contention measurement shares (Deno KV, Redis, PostgreSQL): open-loop
// arrivals at a fixed offered rate, latency from each request's scheduled arrival to its answer,
// and the most a limit could admit in the run; plus interleaved repeats summarised by medians.

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The `p`-th percentile of sorted numbers (NaN when there are none). */
export const percentile = (sorted, p) => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]);

/** The median of numbers. */
export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/**
 * Offers `offeredPerSecond` requests for `durationMs`: request `index` is `launch(index)`, a
 * Promise of a limiter result; a rejection for which `gaveUp(error)` holds counts as a request
 * the host gave up on (failed closed), any other rejection ends the run. `counts` may carry the
 * host's own counters (conflicts, retries), which its callbacks increment.
 * @returns The counts, `bound` (a full bucket plus its refill up to the last admission), `p50`, `p99`.
 */
export async function offerLoad({ offeredPerSecond, durationMs, limitPerSecond, launch, gaveUp, counts = {} }) {
  Object.assign(counts, { offered: 0, admitted: 0, refused: 0, failed: 0 });
  const latencies = [];
  const pending = new Set();
  const total = Math.round((offeredPerSecond * durationMs) / 1000);
  const start = performance.now();
  const startMs = Date.now();
  let lastAdmittedMs = startMs;
  while (counts.offered < total) {
    // Launch every request whose scheduled arrival has come.
    const due = Math.min(total, Math.floor(((performance.now() - start) * offeredPerSecond) / 1000) + 1);
    for (; counts.offered < due; counts.offered++) {
      const arrival = start + (counts.offered * 1000) / offeredPerSecond;
      const request = launch(counts.offered)
        .then(
          (status) => {
            if (!status.ok) return counts.refused++;
            counts.admitted++;
            lastAdmittedMs = Math.max(lastAdmittedMs, Date.now());
          },
          (error) => {
            if (!gaveUp(error)) throw error;
            counts.failed++;
          },
        )
        .finally(() => {
          latencies.push(performance.now() - arrival);
          pending.delete(request);
        });
      pending.add(request);
    }
    await sleep(2);
  }
  await Promise.all(pending);
  latencies.sort((a, b) => a - b);
  return {
    ...counts,
    bound: Math.floor(limitPerSecond + (limitPerSecond * (lastAdmittedMs - startMs)) / 1000),
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  };
}

/**
 * Every shard count at every offered load, `repeat` times, interleaved (1, 3, 10, 30, 1, 3, …) so
 * that a slow moment of the machine does not land on one row; each row holds the medians of `fields`.
 * @returns `[{ offeredPerSecond, rows: [{ shards, runs, ...medians }] }]`.
 */
export async function interleaved({ offeredRates, shardCounts, repeat, fields, measure }) {
  const tables = [];
  for (const offeredPerSecond of offeredRates) {
    const runs = new Map(shardCounts.map((shards) => [shards, []]));
    for (let round = 0; round < repeat; round++) {
      for (const shards of shardCounts) runs.get(shards).push(await measure(offeredPerSecond, shards));
    }
    const rows = shardCounts.map((shards) => {
      const all = runs.get(shards);
      const row = { shards, runs: all };
      for (const field of fields) row[field] = median(all.map((run) => run[field]));
      return row;
    });
    tables.push({ offeredPerSecond, rows });
  }
  return tables;
}
