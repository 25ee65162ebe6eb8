// `npm run bench:contention`: contention, measured. One global token bucket, driven by many
// concurrent requests at a fixed offered load, for shards = 1, 3, 10 and 30, on every host that
// persists through transactions or scripts: Deno KV, Redis and PostgreSQL (each a real engine or
// server on this machine). Prints, per host, offered load and shard count, how many requests were
// admitted against the most the limit could admit (and whether it stayed within it), how many
// the limiter gave up on (failed closed), the host's own retry counters, and the latency
// percentiles; writes the tables to its section of BENCHMARKS.md.
//
//   npm run bench:contention [-- --hosts kv,redis,postgres --rate 300,600,1500 --seconds 5 --repeat 3
//                               --shards 1,3,10,30 --limit 1000 --clients 1 --connections 10
//                               --pkg DIR --json --no-write]
//
// Arrivals are open-loop (a fixed schedule, whatever the latency), and latency runs from a
// request's scheduled arrival to its answer, so queueing behind slow commits is counted. The limit
// (1000/s by default, a capacity of one second's worth) admits every request at 300 and 600
// offered per second, so every request writes: contention comes from writers, since a refused
// request writes nothing. At 1500/s the load is over the limit, and "admitted ≤ bound" is put to
// the test (under the limit it cannot fail). Every rejected request counts as given up, by its
// reason (listed under each table).
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { kvContention } from "./bench/contention-kv.mjs";
import { postgresContention } from "./bench/contention-postgres.mjs";
import { redisContention } from "./bench/contention-redis.mjs";
import { ROOT, installPackage, packageDir, withoutPkg } from "./bench/package.mjs";
import { writeSection } from "./bench/sections.mjs";

const { values: args } = parseArgs({
  args: withoutPkg(process.argv.slice(2)).filter((arg, index, all) => !(arg === "--host" || all[index - 1] === "--host")),
  options: {
    hosts: { type: "string", default: "kv,redis,postgres" },
    rate: { type: "string", default: "300,600,1500" }, // offered requests per second: one table per rate (1500: over the limit, where the bound is tested)
    seconds: { type: "string", default: "5" },
    clients: { type: "string", default: "1" }, // Deno KV and Redis connections the requests are spread over
    connections: { type: "string", default: "10" }, // the PostgreSQL pool's size
    repeat: { type: "string", default: "3" }, // runs per shard count, interleaved; the table shows medians
    shards: { type: "string", default: "1,3,10,30" },
    limit: { type: "string", default: "1000" }, // the limit's rate, tokens per second (capacity: one second's worth)
    json: { type: "boolean", default: false },
    "no-write": { type: "boolean", default: false },
  },
});
// `--host postgres` (the old way to pick one host) still works.
const hostAt = process.argv.indexOf("--host");
const hosts = (hostAt > 0 ? process.argv[hostAt + 1].replace("deno-kv", "kv") : args.hosts).split(",");
const options = {
  offeredRates: args.rate.split(",").map(Number),
  durationMs: Number(args.seconds) * 1000,
  clientCount: Number(args.clients),
  connections: Number(args.connections),
  shardCounts: args.shards.split(",").map(Number),
  limitPerSecond: Number(args.limit),
  repeat: Number(args.repeat),
};
const MEASURE = { kv: kvContention, redis: redisContention, postgres: postgresContention };
for (const host of hosts) if (!MEASURE[host]) throw new Error(`unknown host ${host}: --hosts takes kv, redis, postgres`);

const started = Date.now();
const loadAtStart = loadavg()[0];
const pkg = packageDir();
const work = mkdtempSync(join(tmpdir(), "ratebound-bench-contention-"));
const results = [];
try {
  const { load } = installPackage(pkg, join(work, "project"));
  for (const host of hosts) {
    process.stderr.write(`bench:contention: ${host}\n`);
    results.push(await MEASURE[host](load, options));
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}

if (args.json) {
  console.log(JSON.stringify({ ...options, results }, null, 2));
  process.exit(0);
}

/** One host's tables as markdown. */
function hostTables({ host, description, counters, tables }) {
  const lines = [`### ${host}`, "", `${description}.`];
  for (const { offeredPerSecond, rows } of tables) {
    const counted = rows.every((row) => row.runs.every((run) => run.counted !== false));
    lines.push(
      "",
      `${host}, ${offeredPerSecond} requests/s offered, ${(offeredPerSecond * options.durationMs) / 1000} per run:`,
      "",
      `| shards | admitted (bound) | admitted ≤ bound | refused | gave up | ${counters.map((counter) => counter.label).join(" | ")} | p50 latency | p99 latency |`,
      `|---:|---:|:---:|---:|---:|${counters.map(() => "---:").join("|")}|---:|---:|`,
    );
    for (const row of rows) {
      const counterCells = counters.map((counter) => (counted ? row[counter.field].toFixed(2) : "—"));
      lines.push(
        `| ${row.shards} | ${row.admitted} (${row.bound}) | ${row.withinBound ? "yes" : "**no**"} | ${row.refused} | ${row.failed} | ${counterCells.join(" | ")} | ${row.p50.toFixed(1)} ms | ${row.p99.toFixed(1)} ms |`,
      );
    }
    const failed = rows.filter((row) => row.failedInAll > 0);
    if (failed.length) {
      lines.push("", "Given up, in all runs of the row, by reason:");
      for (const row of failed) lines.push(`- ${row.shards} shard(s): ${Object.entries(row.failures).map(([reason, count]) => `${count} × \`${reason}\` (${row.messages[reason]})`).join("; ")}`);
    }
    if (!counted) lines.push("", "(—: this package takes no option to count retries on this host.)");
  }
  return lines.join("\n");
}

const markdown = `## Contention (\`npm run bench:contention\`)

Generated by \`npm run bench:contention\` (\`scripts/bench-contention.mjs\`, \`scripts/bench/contention-*.mjs\`); do not edit by hand.

- **Date**: ${new Date(started).toISOString().replace(/\.\d+Z$/, "Z")}; ${cpus()[0]?.model ?? "unknown CPU"}, ${cpus().length} cores; Node ${process.version}
- **Package**: ${pkg === join(ROOT, "pkg") ? "this checkout's \`pkg/\`" : `\`${pkg}\``}
- **Load average** (1 min) at start ${loadAtStart.toFixed(2)}, at end ${loadavg()[0].toFixed(2)}; run time ${((Date.now() - started) / 1000).toFixed(0)} s

One global token bucket, ${options.limitPerSecond} tokens/s with a capacity of ${options.limitPerSecond}, driven at a fixed offered load
(open loop: requests arrive on schedule whatever the latency; latency runs from a request's scheduled
arrival to its answer). Each cell is the median of ${options.repeat} runs of ${options.durationMs / 1000} s, the shard counts taking turns.
"bound" is the most the limit could admit in the run (a full bucket plus its refill up to the last
admission); "admitted ≤ bound" holds only if it held in every run of the row, and can only fail where the
offered load is over the limit (${options.offeredRates.filter((rate) => rate > options.limitPerSecond).map((rate) => `${rate}/s`).join(", ") || "no table of this run"}). Under the limit every request could be admitted, so
each one writes: that is where writers contend. "gave up" counts requests the limiter rejected (it failed
closed: nothing admitted), by median per run; their reasons are listed under each table.

${results.map(hostTables).join("\n\n")}
`;
process.stdout.write(`${markdown}\n`);
if (!args["no-write"]) {
  writeSection(join(ROOT, "BENCHMARKS.md"), "bench:contention", markdown);
  process.stderr.write("bench:contention: wrote its section of BENCHMARKS.md\n");
}
process.exit(0);
