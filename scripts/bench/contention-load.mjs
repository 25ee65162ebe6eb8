// The load loop every contention measurement shares (Deno KV, Redis, PostgreSQL): open-loop
// arrivals at a fixed offered rate, latency from each request's scheduled arrival to its answer,
// the most a limit could admit in the run (and whether it admitted more), every failed request by
// its reason; plus interleaved repeats summarised by medians.

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The `p`-th percentile of sorted numbers (NaN when there are none). */
export const percentile = (sorted, p) => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]);

/** The median of numbers. */
export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** A short name for why a request failed: its `code`, else its class. */
const reasonOf = (error) => String(error?.code ?? error?.name ?? typeof error);

/**
 * Offers `offeredPerSecond` requests for `durationMs`: request `index` is `launch(index)`, a
 * Promise of a limiter result. Every rejection is a request the limiter failed (it gave up, or
 * failed closed), counted by its reason (the error's `code`, else its class) in `failures`, with
 * one message per reason in `messages`. `counts` may carry the host's own counters (conflicts,
 * retries), which its callbacks increment.
 * @returns The counts, `failures`, `messages`, `bound` (a full bucket plus its refill up to the
 * last admission), `withinBound` (admitted ≤ bound), `p50`, `p99`.
 */
export async function offerLoad({ offeredPerSecond, durationMs, limitPerSecond, launch, counts = {} }) {
  Object.assign(counts, { offered: 0, admitted: 0, refused: 0, failed: 0 });
  const failures = {};
  const messages = {};
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
      const request = Promise.resolve()
        .then(() => launch(counts.offered))
        .then(
          (status) => {
            if (!status.ok) return counts.refused++;
            counts.admitted++;
            lastAdmittedMs = Math.max(lastAdmittedMs, Date.now());
          },
          (error) => {
            counts.failed++;
            const reason = reasonOf(error);
            failures[reason] = (failures[reason] ?? 0) + 1;
            messages[reason] ??= String(error?.message ?? error).slice(0, 200);
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
  const bound = Math.floor(limitPerSecond + (limitPerSecond * (lastAdmittedMs - startMs)) / 1000);
  return {
    ...counts,
    failures,
    messages,
    bound,
    withinBound: counts.admitted <= bound,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  };
}

/**
 * Every shard count at every offered load, `repeat` times, interleaved (1, 3, 10, 30, 1, 3, …) so
 * that a slow moment of the machine does not land on one row; each row holds the medians of
 * `fields`, every run's `failures` summed, and whether every run stayed within its bound.
 * @returns `[{ offeredPerSecond, rows: [{ shards, runs, withinBound, failures, messages, ...medians }] }]`.
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
      const row = { shards, runs: all, withinBound: all.every((run) => run.withinBound), failures: {}, messages: {} };
      for (const field of fields) row[field] = median(all.map((run) => run[field]));
      for (const run of all) {
        for (const [reason, count] of Object.entries(run.failures)) row.failures[reason] = (row.failures[reason] ?? 0) + count;
        Object.assign(row.messages, run.messages);
      }
      row.failedInAll = all.reduce((sum, run) => sum + run.failed, 0);
      return row;
    });
    tables.push({ offeredPerSecond, rows });
  }
  return tables;
}

/**
 * A store (or transaction) made with a counting option when the package takes it, else without:
 * a newer package may have dropped the option (a store that decides next to its data has no
 * conflicts to count). `make(true)` passes the option; it must throw synchronously when refused.
 * @returns {{ value: unknown, counted: boolean }}
 * @example
 * const { value: store, counted } = withCounter((count) => redisStore(client, count ? { onConflict } : {}));
 */
export function withCounter(make) {
  try {
    return { value: make(true), counted: true };
  } catch {
    return { value: make(false), counted: false };
  }
}
