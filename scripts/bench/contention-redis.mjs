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
import { interleaved, offerLoad } from "./contention-load.mjs";


/** One run: a flushed database, `shards` shards, the fixed offered load. */
async function measure({ RateLimiter, redisStore, RedisStoreError }, clients, { offeredPerSecond, durationMs, limitPerSecond, shards }) {
  await clients[0].flushDb();
  const limits = { global: { kind: "token bucket", rate: limitPerSecond, period: 1000, shards } };
  const counts = { conflicts: 0 };
  const onConflict = () => counts.conflicts++;
  const run = await offerLoad({
    offeredPerSecond,
    durationMs,
    limitPerSecond,
    counts,
    launch: (index) => new RateLimiter(redisStore(clients[index % clients.length], { onConflict }), limits).limit("global"),
    gaveUp: (error) => error instanceof RedisStoreError && error.code === "REDIS_CONFLICT",
  });
  return { shards, ...run, conflictsPerAdmitted: run.conflicts / Math.max(1, run.admitted) };
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
    const tables = await interleaved({
      offeredRates,
      shardCounts,
      repeat,
      fields: ["offered", "admitted", "bound", "refused", "failed", "conflictsPerAdmitted", "p50", "p99"],
      measure: (offeredPerSecond, shards) => measure(lib, clients, { offeredPerSecond, durationMs, limitPerSecond, shards }),
    });
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
