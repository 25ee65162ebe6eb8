// Contention, measured: one global limit on Deno KV, driven by many concurrent clients at a fixed
// offered load, for shards = 1, 3, 10 and 30. Prints, per shard count, how many requests were
// admitted, how many commits lost the race per admitted request, and the latency percentiles.
// Every request is a client with its own transaction; the clients share `--clients` database
// connections (default 1: one process serving many concurrent requests, as a Deno server does).
//
//   npm run bench:contention [-- --rate 300,600 --seconds 5 --clients 1 --repeat 3 --shards 1,3,10,30 --limit 1000 --json]
//   npm run bench:contention -- --host postgres [--connections 10 …]   (a real PostgreSQL server)
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
import { interleaved, offerLoad } from "./bench/contention-load.mjs";

// `--host postgres`: the same measurement on a real PostgreSQL server (scripts/bench/contention-postgres.mjs).
if (process.argv.includes("--host")) {
  if (process.argv[process.argv.indexOf("--host") + 1] === "postgres") await import("./bench/contention-postgres.mjs");
  else throw new Error("--host takes postgres (Deno KV is the default)");
  process.exit(0);
}

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


/** One run: `shards` shards, the fixed offered load, a fresh database. */
async function measure(offeredPerSecond, shards) {
  const dir = mkdtempSync(join(tmpdir(), "ratebound-bench-"));
  const clients = await Promise.all(Array.from({ length: clientCount }, () => openKv(join(dir, "kv.sqlite"))));
  const limits = { global: { kind: "token bucket", rate: limitPerSecond, period: 1000, shards } };
  const counts = { conflicts: 0, locked: 0 };
  const onConflict = (_attempt, reason) => (reason === "locked" ? counts.locked++ : counts.conflicts++);
  try {
    const run = await offerLoad({
      offeredPerSecond,
      durationMs,
      limitPerSecond,
      counts,
      launch: (index) => kvTransaction(clients[index % clientCount], (tx) => new RateLimiter(tx, limits).limit("global"), { onConflict }),
      gaveUp: (error) => error instanceof KvConflictError,
    });
    return {
      shards,
      ...run,
      conflictsPerAdmitted: run.conflicts / Math.max(1, run.admitted),
      lockedPerAdmitted: run.locked / Math.max(1, run.admitted),
    };
  } finally {
    for (const kv of clients) kv.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const tables = await interleaved({
  offeredRates,
  shardCounts,
  repeat,
  fields: ["offered", "admitted", "bound", "refused", "failed", "conflictsPerAdmitted", "lockedPerAdmitted", "p50", "p99"],
  measure,
});
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
