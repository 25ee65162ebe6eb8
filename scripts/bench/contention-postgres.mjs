// Contention on a real PostgreSQL server: one global limit driven by many concurrent requests at
// a fixed offered load, for shards = 1, 3, 10 and 30, as scripts/bench-contention.mjs does for
// Deno KV. Each request is one call of its own on postgresStore(pool): it takes a pooled
// connection and runs BEGIN, advisory lock + SELECT per state read, the upsert, COMMIT. A sharded
// decision that finds its second shard locked rolls back and runs again after a jittered backoff
// (at most 20 attempts, then it fails closed: "gave up").
//
//   node scripts/bench-contention.mjs --host postgres [-- --rate 300,600 --seconds 5 --connections 10 --repeat 3 --shards 1,3,10,30 --limit 1000 --json]
//
// The server is Debian's PostgreSQL, started by tests/sql/postgres-server.mjs in a temporary
// directory on a loopback port (fsync off: this measures locking, not the disk), and stopped
// after. Arrivals are open-loop; latency runs from a request's scheduled arrival to its answer.
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import pg from "pg";
import { startPostgres } from "../../tests/sql/postgres-server.mjs";
import { interleaved, offerLoad } from "./contention-load.mjs";

const { values: args } = parseArgs({
  options: {
    host: { type: "string", default: "postgres" }, // accepted so bench-contention.mjs can pass its argv on
    rate: { type: "string", default: "300,600" },
    seconds: { type: "string", default: "5" },
    connections: { type: "string", default: "10" }, // the pool's size
    repeat: { type: "string", default: "3" },
    shards: { type: "string", default: "1,3,10,30" },
    limit: { type: "string", default: "1000" },
    json: { type: "boolean", default: false },
  },
});
const offeredRates = args.rate.split(",").map(Number);
const durationMs = Number(args.seconds) * 1000;
const connections = Number(args.connections);
const shardCounts = args.shards.split(",").map(Number);
const limitPerSecond = Number(args.limit);
const repeat = Number(args.repeat);

const { RateLimiter } = await import("../../pkg/dist/node.js");
const { createTable, postgresStore } = await import("../../pkg/dist/postgres.js");


/** One run: `shards` shards, the fixed offered load, a fresh table. */
async function measure(pool, offeredPerSecond, shards) {
  await pool.query("TRUNCATE ratebound");
  const counts = { retries: 0 };
  const store = postgresStore(pool, { onRetry: () => counts.retries++ });
  const limiter = new RateLimiter(store, { global: { kind: "token bucket", rate: limitPerSecond, period: 1000, shards } });
  const run = await offerLoad({
    offeredPerSecond,
    durationMs,
    limitPerSecond,
    counts,
    launch: () => limiter.limit("global"),
    gaveUp: (error) => error.code === "SQL_LOCK_CONTENDED",
  });
  return { shards, ...run, retriesPerAdmitted: run.retries / Math.max(1, run.admitted) };
}

const server = await startPostgres();
const pool = new pg.Pool({ connectionString: server.connectionString, max: connections });
let tables;
try {
  await createTable(pool);
  tables = await interleaved({
    offeredRates,
    shardCounts,
    repeat,
    fields: ["offered", "admitted", "bound", "refused", "failed", "retriesPerAdmitted", "p50", "p99"],
    measure: (offeredPerSecond, shards) => measure(pool, offeredPerSecond, shards),
  });
} finally {
  await pool.end();
  server.stop();
}

if (args.json) {
  console.log(JSON.stringify({ durationMs, connections, limitPerSecond, repeat, tables }, null, 2));
} else {
  console.log(
    `One global token bucket, ${limitPerSecond} tokens/s with a capacity of ${limitPerSecond}, on PostgreSQL ` +
      `(a local server, pg in Node ${process.version}, a pool of ${connections} connections). ` +
      `Each cell is the median of ${repeat} runs of ${durationMs / 1000} s; load average at the start ${loadavg()[0].toFixed(1)}.`,
  );
  for (const { offeredPerSecond, rows } of tables) {
    console.log(`\n${offeredPerSecond} requests/s offered, ${(offeredPerSecond * durationMs) / 1000} per run:\n`);
    console.log("| shards | admitted (bound) | refused | gave up | lock retries per admitted | p50 latency | p99 latency |");
    console.log("|---:|---:|---:|---:|---:|---:|---:|");
    for (const row of rows) {
      console.log(
        `| ${row.shards} | ${row.admitted} (${row.bound}) | ${row.refused} | ${row.failed} | ${row.retriesPerAdmitted.toFixed(2)} | ${row.p50.toFixed(1)} ms | ${row.p99.toFixed(1)} ms |`,
      );
    }
  }
}
