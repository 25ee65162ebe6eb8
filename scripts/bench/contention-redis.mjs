// Contention on Redis, measured: one global limit through ratebound/redis on a real redis-server
// (started here on a free loopback port, no persistence, killed after), driven by many concurrent
// requests at a fixed offered load, for each shard count. Called by scripts/bench-contention.mjs
// with its options; also runs alone:
//
//   node scripts/bench/contention-redis.mjs [--rate 300,600 --seconds 5 --clients 4 --repeat 3 --shards 1,3,10,30 --limit 1000]
//
// Every request is one `limit("global")` on its own RedisStore (one optimistic transaction:
// GETs, then one commit script), retried on a lost race with jittered backoff up to 10 attempts,
// then refused closed ("gave up"). Requests share `clients` node-redis connections. Arrivals are
// open-loop and latency runs from a request's scheduled arrival to its answer.
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { createClient } from "redis";
import { startRedis } from "../../tests/redis/servers.mjs";

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const percentile = (sorted, p) => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]);
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};

/** One run: a flushed database, `shards` shards, the fixed offered load. */
async function measure({ RateLimiter, redisStore, RedisStoreError }, clients, { offeredPerSecond, durationMs, limitPerSecond, shards }) {
  await clients[0].flushDb();
  const limits = { global: { kind: "token bucket", rate: limitPerSecond, period: 1000, shards } };
  const counts = { offered: 0, admitted: 0, refused: 0, failed: 0, conflicts: 0 };
  const latencies = [];
  const pending = new Set();
  const total = Math.round((offeredPerSecond * durationMs) / 1000);
  const start = performance.now();
  const startMs = Date.now();
  let lastAdmittedMs = startMs;
  const onConflict = () => counts.conflicts++;
  while (counts.offered < total) {
    const due = Math.min(total, Math.floor(((performance.now() - start) * offeredPerSecond) / 1000) + 1);
    for (; counts.offered < due; counts.offered++) {
      const arrival = start + (counts.offered * 1000) / offeredPerSecond;
      const store = redisStore(clients[counts.offered % clients.length], { onConflict });
      const request = new RateLimiter(store, limits)
        .limit("global")
        .then(
          (status) => {
            if (!status.ok) return counts.refused++;
            counts.admitted++;
            lastAdmittedMs = Math.max(lastAdmittedMs, Date.now());
          },
          (error) => {
            if (!(error instanceof RedisStoreError && error.code === "REDIS_CONFLICT")) throw error;
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
    bound: Math.floor(limitPerSecond + (limitPerSecond * (lastAdmittedMs - startMs)) / 1000),
    conflictsPerAdmitted: counts.conflicts / Math.max(1, counts.admitted),
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  };
}

/**
 * Every shard count at every offered load on one redis-server, `repeat` times interleaved; each
 * row holds the medians.
 * @returns `{ clientCount, tables: [{ offeredPerSecond, rows }] }`.
 */
export async function redisContention({ offeredRates, durationMs, clientCount, shardCounts, limitPerSecond, repeat }) {
  const ratebound = await import("../../pkg/dist/node.js");
  const adapter = await import("../../pkg/dist/redis.js");
  const lib = { RateLimiter: ratebound.RateLimiter, redisStore: adapter.redisStore, RedisStoreError: adapter.RedisStoreError };
  const server = await startRedis();
  const clients = [];
  try {
    for (let index = 0; index < clientCount; index++) clients.push(await createClient({ url: server.url }).connect());
    const tables = [];
    for (const offeredPerSecond of offeredRates) {
      const runs = new Map(shardCounts.map((shards) => [shards, []]));
      for (let round = 0; round < repeat; round++) {
        for (const shards of shardCounts) runs.get(shards).push(await measure(lib, clients, { offeredPerSecond, durationMs, limitPerSecond, shards }));
      }
      const rows = shardCounts.map((shards) => {
        const all = runs.get(shards);
        const row = { shards, runs: all };
        for (const field of ["offered", "admitted", "bound", "refused", "failed", "conflictsPerAdmitted", "p50", "p99"]) row[field] = median(all.map((run) => run[field]));
        return row;
      });
      tables.push({ offeredPerSecond, rows });
    }
    return { clientCount, tables };
  } finally {
    await Promise.all(clients.map((client) => client.quit().catch(() => {})));
    server.stop();
  }
}

/** Prints the tables as markdown, as bench-contention.mjs prints Deno KV's. */
export function printRedisContention({ clientCount, tables }, { durationMs, limitPerSecond, repeat }) {
  console.log(
    `\nThe same limit on Redis (ratebound/redis through node-redis ${clientCount} connection(s), redis-server on loopback, Node ${process.version}). ` +
      `Each cell is the median of ${repeat} runs of ${durationMs / 1000} s; load average now ${loadavg()[0].toFixed(1)}; limit ${limitPerSecond} tokens/s.`,
  );
  for (const { offeredPerSecond, rows } of tables) {
    console.log(`\nRedis, ${offeredPerSecond} requests/s offered, ${(offeredPerSecond * durationMs) / 1000} per run:\n`);
    console.log("| shards | admitted (bound) | refused | gave up | commit conflicts per admitted | p50 latency | p99 latency |");
    console.log("|---:|---:|---:|---:|---:|---:|---:|");
    for (const row of rows) {
      console.log(`| ${row.shards} | ${row.admitted} (${row.bound}) | ${row.refused} | ${row.failed} | ${row.conflictsPerAdmitted.toFixed(2)} | ${row.p50.toFixed(1)} ms | ${row.p99.toFixed(1)} ms |`);
    }
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values: args } = parseArgs({
    options: {
      rate: { type: "string", default: "300,600" },
      seconds: { type: "string", default: "5" },
      clients: { type: "string", default: "4" },
      repeat: { type: "string", default: "3" },
      shards: { type: "string", default: "1,3,10,30" },
      limit: { type: "string", default: "1000" },
    },
  });
  const options = {
    offeredRates: args.rate.split(",").map(Number),
    durationMs: Number(args.seconds) * 1000,
    clientCount: Number(args.clients),
    shardCounts: args.shards.split(",").map(Number),
    limitPerSecond: Number(args.limit),
    repeat: Number(args.repeat),
  };
  printRedisContention(await redisContention(options), options);
}
