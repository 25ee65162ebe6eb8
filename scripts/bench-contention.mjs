// Contention, measured: one global limit on Deno KV, driven by many concurrent clients at a fixed
// offered load, for shards = 1, 3, 10 and 30. Prints, per shard count, how many requests were
// admitted, how many commits lost the race per admitted request, and the latency percentiles.
// Every request is a client with its own transaction; the clients share `--clients` database
// connections (default 1: one process serving many concurrent requests, as a Deno server does).
//
//   npm run bench:contention [-- --rate 300,600 --seconds 5 --clients 1 --repeat 3 --shards 1,3,10,30 --limit 1000 --json]
//
// The database is the Deno KV engine itself (denokv's SQLite backend, through @deno/kv in Node)
// on a scratch file. Each request is one `kvTransaction` around `limit("global")`; it retries a
// lost commit with jittered backoff up to 10 attempts, then fails closed. Arrivals are open-loop
// (a fixed schedule, whatever the latency), and latency runs from a request's scheduled arrival
// to its answer, so queueing behind slow commits is counted. The limit is generous by default
// (1000/s) so that every request is admitted and writes: contention comes from writers, since a
// refused request writes nothing and so commits nothing.
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { openKv } from "@deno/kv";

const { values: args } = parseArgs({
  options: {
    rate: { type: "string", default: "300,600" }, // offered requests per second: one table per rate
    seconds: { type: "string", default: "5" },
    clients: { type: "string", default: "1" }, // database connections the requests are spread over
    repeat: { type: "string", default: "3" }, // runs per shard count, interleaved; the table shows medians
    shards: { type: "string", default: "1,3,10,30" },
    limit: { type: "string", default: "1000" }, // the limit's rate, tokens per second (capacity: one second's worth)
    json: { type: "boolean", default: false },
  },
});
const offeredRates = args.rate.split(",").map(Number);
const durationMs = Number(args.seconds) * 1000;
const clientCount = Number(args.clients);
const shardCounts = args.shards.split(",").map(Number);
const limitPerSecond = Number(args.limit);
const repeat = Number(args.repeat);

// The built package, as the tests use it (run `npm run build` first; the npm script does).
const { RateLimiter } = await import("../pkg/dist/node.js");
const { kvTransaction, KvConflictError } = await import("../pkg/dist/deno-kv.js");

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const percentile = (sorted, p) => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]);

/** One run: `shards` shards, the fixed offered load, a fresh database. */
async function measure(offeredPerSecond, shards) {
  const dir = mkdtempSync(join(tmpdir(), "ratebound-bench-"));
  const clients = await Promise.all(Array.from({ length: clientCount }, () => openKv(join(dir, "kv.sqlite"))));
  const limits = { global: { kind: "token bucket", rate: limitPerSecond, period: 1000, shards } };
  const counts = { offered: 0, admitted: 0, refused: 0, failed: 0, conflicts: 0, locked: 0 };
  const latencies = [];
  const pending = new Set();
  try {
    const total = Math.round((offeredPerSecond * durationMs) / 1000);
    const start = performance.now();
    const startMs = Date.now();
    let lastAdmittedMs = startMs;
    while (counts.offered < total) {
      // Launch every request whose scheduled arrival has come.
      const due = Math.min(total, Math.floor(((performance.now() - start) * offeredPerSecond) / 1000) + 1);
      for (; counts.offered < due; counts.offered++) {
        const arrival = start + (counts.offered * 1000) / offeredPerSecond;
        const kv = clients[counts.offered % clientCount];
        const request = kvTransaction(kv, (tx) => new RateLimiter(tx, limits).limit("global"), {
          onConflict: (_attempt, reason) => (reason === "locked" ? counts.locked++ : counts.conflicts++),
        })
          .then(
            (status) => {
              if (!status.ok) return counts.refused++;
              counts.admitted++;
              lastAdmittedMs = Math.max(lastAdmittedMs, Date.now());
            },
            (error) => {
              if (!(error instanceof KvConflictError)) throw error;
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
      shards,
      ...counts,
      // The most the limit can admit from the first request to the last admission: a full bucket plus its refill.
      bound: Math.floor(limitPerSecond + (limitPerSecond * (lastAdmittedMs - startMs)) / 1000),
      conflictsPerAdmitted: counts.conflicts / Math.max(1, counts.admitted),
      lockedPerAdmitted: counts.locked / Math.max(1, counts.admitted),
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
    };
  } finally {
    for (const kv of clients) kv.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Every shard count at one offered load, `repeat` times, interleaved (1, 3, 10, 30, 1, 3, …) so that a slow moment of the machine does not land on one row; each row holds the medians. */
async function table(offeredPerSecond) {
  const runs = new Map(shardCounts.map((shards) => [shards, []]));
  for (let round = 0; round < repeat; round++) {
    for (const shards of shardCounts) runs.get(shards).push(await measure(offeredPerSecond, shards));
  }
  const median = (values) => {
    const sorted = [...values].sort((a, b) => a - b);
    const middle = Math.floor(sorted.length / 2);
    return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
  };
  return shardCounts.map((shards) => {
    const all = runs.get(shards);
    const row = { shards, runs: all };
    for (const field of ["offered", "admitted", "bound", "refused", "failed", "conflictsPerAdmitted", "lockedPerAdmitted", "p50", "p99"]) {
      row[field] = median(all.map((run) => run[field]));
    }
    return row;
  });
}

const tables = [];
for (const offeredPerSecond of offeredRates) tables.push({ offeredPerSecond, rows: await table(offeredPerSecond) });
// The same load on Redis (ratebound/redis on a real redis-server it starts): see scripts/bench/contention-redis.mjs.
const { redisContention, printRedisContention } = await import("./bench/contention-redis.mjs");
const redisOptions = { offeredRates, durationMs, clientCount, shardCounts, limitPerSecond, repeat };
const redis = await redisContention(redisOptions);

if (args.json) {
  console.log(JSON.stringify({ durationMs, clientCount, limitPerSecond, repeat, tables, redis }, null, 2));
} else {
  console.log(
    `One global token bucket, ${limitPerSecond} tokens/s with a capacity of ${limitPerSecond}, on Deno KV ` +
      `(@deno/kv in Node ${process.version}, a local SQLite file, ${clientCount} connection(s)). ` +
      `Each cell is the median of ${repeat} runs of ${durationMs / 1000} s; load average at the start ${loadavg()[0].toFixed(1)}.`,
  );
  for (const { offeredPerSecond, rows } of tables) {
    console.log(`\n${offeredPerSecond} requests/s offered, ${(offeredPerSecond * durationMs) / 1000} per run:\n`);
    console.log("| shards | admitted (bound) | refused | gave up | commit conflicts per admitted | file locked per admitted | p50 latency | p99 latency |");
    console.log("|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (const row of rows) {
      console.log(
        `| ${row.shards} | ${row.admitted} (${row.bound}) | ${row.refused} | ${row.failed} | ${row.conflictsPerAdmitted.toFixed(2)} | ${row.lockedPerAdmitted.toFixed(2)} | ${row.p50.toFixed(1)} ms | ${row.p99.toFixed(1)} ms |`,
      );
    }
  }
  printRedisContention(redis, redisOptions);
}
