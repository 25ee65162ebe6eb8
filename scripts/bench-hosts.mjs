// `npm run bench:hosts`: ratebound on the networked hosts against the peer a user of each would
// pick (issues 22 and 29): closed loops at 1, 32 and 256 calls in flight (one request at a time,
// a busy server, a very busy one), each contender's decisions/s, p50 and p99 latency and failed
// calls, and the ratio against the peer in the same run, on the same loopback servers.
//
//   node scripts/bench-hosts.mjs [--pkg DIR] [--seconds 3] [--warmup-ms 500] [--levels 1,32,256]
//                                [--slow-levels 1,16,256] [--keys 1,1000]
//                                [--hosts redis,upstash,postgres] [--json] [--no-write]
//
// Rows: Redis (node-redis and ioredis) against rate-limiter-flexible's RateLimiterRedis; the
// Upstash REST protocol (a bridge adding 0 and 5 ms per HTTP request) against @upstash/ratelimit's
// token bucket, both over @upstash/redis; PostgreSQL (a pg.Pool of 10 each) against
// RateLimiterPostgres. Each on one key (every call on the same key: a global limit, or one
// attacker on one user's key) and on 1,000 keys (taken in turn), each at every level of
// `--levels`; the +5 ms Upstash rows at `--slow-levels` instead (16 in the middle: with 5 ms a
// request, 32 in flight measures the bridge's delay more than the contenders).
//
// Run time, decided for a 2-core machine: 3 s a contender and level after 500 ms not counted,
// every workload (1,000 keys too) at all three levels: 10 workloads × 3 levels × 2 contenders ×
// 3.5 s ≈ 3.5 minutes, about 4 with the servers' start-up (under the ~8 minutes allowed).
// `--levels`, `--keys` and `--hosts` pick a subset; any setting other than the defaults marks
// the section written as a smoke run.
//
// Prints the table and writes it to its section of BENCHMARKS.md. A measurement, not a test: it
// asserts nothing about speed.
//
// Needs redis-server and PostgreSQL (`npm test`'s setup installs both) and a built package
// (`npm run bench:hosts` builds pkg/ when stale; --pkg / RATEBOUND_PKG measure another).
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, platform, release, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";
import { createClient } from "redis";
import { startRedis } from "../tests/redis/servers.mjs";
import { startPostgres } from "../tests/sql/postgres-server.mjs";
import { closedLoop } from "./bench/closed-loop.mjs";
import { postgresContenders, redisContenders, upstashContenders } from "./bench/hosts.mjs";
import { failures, table, upstashTraffic } from "./bench/hosts-table.mjs";
import { ROOT, installPackage, packageDir, withoutPkg } from "./bench/package.mjs";
import { writeSection } from "./bench/sections.mjs";
import { startBridgeProcess } from "./bench/upstash-bridge.mjs";

const DEFAULTS = { seconds: "3", "warmup-ms": "500", levels: "1,32,256", "slow-levels": "1,16,256", keys: "1,1000", hosts: "redis,upstash,postgres" };
const { values: args } = parseArgs({
  args: withoutPkg(process.argv.slice(2)),
  options: {
    ...Object.fromEntries(Object.entries(DEFAULTS).map(([name, value]) => [name, { type: "string", default: value }])),
    json: { type: "boolean", default: false },
    "no-write": { type: "boolean", default: false },
  },
});
const numbers = (text) => text.split(",").map(Number);
const DURATION_MS = Number(args.seconds) * 1000;
const WARMUP_MS = Number(args["warmup-ms"]);
const LEVELS = numbers(args.levels);
const SLOW_LEVELS = numbers(args["slow-levels"]);
const KEY_COUNTS = numbers(args.keys);
const HOSTS = args.hosts.split(",");
const UPSTASH_DELAYS_MS = [0, 5];
const log = (line) => process.stderr.write(`bench:hosts: ${line}\n`);
const keysOf = (count) => Array.from({ length: count }, (_, i) => (count === 1 ? "hot" : `user:${i}`));
const keysLabel = (keys) => (keys === 1 ? "one key" : `${keys.toLocaleString("en-US")} keys`);

/** The bridge's counters over a run, per call and per HTTP request. */
function traffic(before, after, calls) {
  const requests = after.requests - before.requests;
  return {
    httpRequestsPerCall: requests / calls,
    commandsPerCall: Object.fromEntries(
      Object.entries(after.forwarded)
        .map(([name, total]) => [name, (total - (before.forwarded[name] ?? 0)) / calls])
        .filter(([, perCall]) => perCall > 0),
    ),
    bytesInPerRequest: (after.bytesIn - before.bytesIn) / requests,
    bytesOutPerRequest: (after.bytesOut - before.bytesOut) / requests,
  };
}

/**
 * A workload at each of its levels: both contenders open for the whole workload; at each level
 * each in turn (which goes first alternates from line to line) on empty state, warmed up, then
 * timed. Each contender's loop is its own copy (closed-loop.mjs), named by workload and side.
 */
async function measureWorkload(workload, lineIndex) {
  const opened = {};
  const lines = [];
  try {
    for (const side of ["ratebound", "peer"]) opened[side] = await workload.contenders[side].open();
    for (const inFlight of workload.levels) {
      const order = lineIndex++ % 2 === 0 ? ["ratebound", "peer"] : ["peer", "ratebound"];
      const results = {};
      for (const side of order) {
        await workload.reset();
        const loop = { id: `${workload.label}, ${side}`, call: opened[side].call, keys: keysOf(workload.keys), inFlight };
        await closedLoop({ ...loop, durationMs: WARMUP_MS });
        const before = workload.counts ? await workload.counts() : undefined;
        const run = await closedLoop({ ...loop, durationMs: DURATION_MS });
        if (workload.counts) Object.assign(run, traffic(before, await workload.counts(), run.calls));
        results[side] = run;
        log(
          `  ${inFlight} in flight, ${side}: ${Math.round(run.decisionsPerSecond)}/s, p50 ${run.p50.toFixed(2)} ms, p99 ${run.p99.toFixed(2)} ms, ${run.failed} failed of ${run.calls}${run.httpRequestsPerCall === undefined ? "" : `, ${run.httpRequestsPerCall.toFixed(2)} HTTP requests per call`}`,
        );
      }
      const { contenders, reset, counts, ...described } = workload;
      lines.push({ ...described, peerName: contenders.peer.name, inFlight, order, results, ratio: results.ratebound.decisionsPerSecond / results.peer.decisionsPerSecond });
    }
  } finally {
    for (const side of Object.keys(opened)) await opened[side].close();
  }
  return lines;
}

async function main() {
  const started = Date.now();
  const loadAtStart = loadavg();
  const pkg = packageDir();
  const work = mkdtempSync(join(tmpdir(), "ratebound-bench-hosts-"));
  const stops = [];
  try {
    const { load } = installPackage(pkg, join(work, "project"));
    const { RateLimiter } = await load("ratebound");
    const workloads = [];
    if (HOSTS.includes("redis") || HOSTS.includes("upstash")) {
      log("starting redis-server");
      const redis = await startRedis();
      stops.push(() => redis.stop());
      const admin = await createClient({ url: redis.url }).connect();
      stops.push(() => admin.quit().catch(() => {}));
      const reset = () => admin.flushDb();
      const { redisStore } = await load("ratebound/redis");
      const api = { RateLimiter, redisStore };
      if (HOSTS.includes("redis")) {
        for (const clientName of ["node-redis", "ioredis"]) {
          for (const keys of KEY_COUNTS) {
            const label = `Redis, ${keysLabel(keys)}, ${clientName}`;
            workloads.push({ host: "redis", keys, levels: LEVELS, reset, label, contenders: redisContenders(api, clientName, redis.url) });
          }
        }
      }
      if (HOSTS.includes("upstash")) {
        for (const delayMs of UPSTASH_DELAYS_MS) {
          log(`starting the Upstash REST bridge (+${delayMs} ms per request)`);
          const bridge = await startBridgeProcess(redis.url, delayMs);
          stops.push(() => bridge.stop());
          for (const keys of KEY_COUNTS) {
            workloads.push({
              host: "upstash",
              keys,
              levels: delayMs === 0 ? LEVELS : SLOW_LEVELS,
              reset,
              counts: bridge.counts,
              label: `Upstash REST, +${delayMs} ms per HTTP request, ${keysLabel(keys)}`,
              contenders: upstashContenders(api, bridge.url),
            });
          }
        }
      }
    }
    if (HOSTS.includes("postgres")) {
      log("starting PostgreSQL");
      const server = await startPostgres();
      stops.push(() => server.stop());
      const admin = new pg.Client({ connectionString: server.connectionString });
      await admin.connect();
      stops.push(() => admin.end().catch(() => {}));
      // Empty every table the contenders made (ratebound's and the peer's) before each contender.
      const reset = async () => {
        const { rows: tables } = await admin.query("SELECT quote_ident(tablename) AS name FROM pg_tables WHERE schemaname = 'public'");
        if (tables.length) await admin.query(`TRUNCATE ${tables.map((table) => table.name).join(", ")}`);
      };
      const { createTable, postgresStore } = await load("ratebound/postgres");
      for (const keys of KEY_COUNTS) {
        workloads.push({
          host: "postgres",
          keys,
          levels: LEVELS,
          reset,
          label: `PostgreSQL, \`pg.Pool\` (10), ${keysLabel(keys)}`,
          contenders: postgresContenders({ RateLimiter, createTable, postgresStore }, server.connectionString),
        });
      }
    }

    const measured = [];
    for (const workload of workloads) {
      log(workload.label);
      measured.push(...(await measureWorkload(workload, measured.length)));
    }
    const loadAtEnd = loadavg();
    const seconds = ((Date.now() - started) / 1000).toFixed(0);
    if (args.json) {
      console.log(JSON.stringify({ durationMs: DURATION_MS, warmupMs: WARMUP_MS, lines: measured }, null, 2));
      return;
    }
    const cpu = cpus();
    const smoke = Object.entries(DEFAULTS).some(([name, value]) => args[name] !== value);
    const peers = [...new Set(workloads.map((workload) => `${workload.contenders.peer.name}: ${workload.contenders.peer.how}`))];
    const ours = [...new Set(workloads.map((workload) => workload.contenders.ratebound.how))];
    const traffic = upstashTraffic(measured);
    const markdown = `## Hosts against their peers (\`npm run bench:hosts\`)

Generated by \`npm run bench:hosts\` (\`scripts/bench-hosts.mjs\`, \`scripts/bench/hosts.mjs\`, \`scripts/bench/closed-loop.mjs\`, \`scripts/bench/hosts-table.mjs\`); do not edit by hand.

- **Date**: ${new Date(started).toISOString().replace(/\.\d+Z$/, "Z")}${smoke ? " (**a smoke run**: not the settings of record; not for comparison)" : ""}
- **Package**: ${pkg === join(ROOT, "pkg") ? "this checkout's \`pkg/\`" : `\`${pkg}\``}
- **Machine**: ${cpu[0]?.model ?? "unknown CPU"}, ${cpu.length} cores, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, ${platform()} ${release()}; Node ${process.version}
- **Load average** (1 min) at start ${loadAtStart[0].toFixed(2)}, at end ${loadAtEnd[0].toFixed(2)}; run time ${seconds} s

How it was measured: one Node process drives closed loops (N calls in flight: each of N workers sends its next
call as soon as its last one answered) at ${LEVELS.join(", ")} in flight (the Upstash rows with 5 ms added per
request at ${SLOW_LEVELS.join(", ")}): one call at a time, a busy server, a very busy one. Each contender runs
${DURATION_MS / 1000} s per workload and level, one run, after ${WARMUP_MS} ms of the same loop that is not counted; its
workers run a copy of the loop compiled for it alone, so V8 never shares the loop's type feedback between
contenders. Every contender talks to the same servers on loopback: one redis-server 7.0 and one PostgreSQL 15
(Debian's, started by the test suites' helpers, no persistence, \`fsync\` off), and for the Upstash rows a bridge in
a process of its own that speaks Upstash's REST protocol and forwards to that redis-server
(\`tests/redis/servers.mjs\`), waiting 0 or 5 ms before it handles each HTTP request. Before each contender and level
the database is emptied (\`FLUSHDB\`; \`TRUNCATE\` of every table); the two contenders of a line run one after the
other, the first alternating from line to line. "One key": every call on the same key; "1,000 keys": keys taken in
turn. The limits never run out (10⁹ tokens or points a minute), so every call is a decision that writes. A decision is
a call that answered granted or refused; a call that rejected failed (the count is in each cell, its reasons below
the table); decisions/s counts decisions over the time to the last answer; p50 and p99 are of every call's latency.
The ratio is ratebound's decisions/s over the peer's. Each contender is used as its README says, with its own client
(or \`pg.Pool\` of 10) made the same way for both sides: ${peers.join("; ")}; ratebound: ${ours.join("; ")}.
On the Upstash rows both contenders use \`@upstash/redis\` with its defaults (auto-pipelining on, so under load one HTTP
request may carry several calls' commands; at 1 in flight, the HTTP requests per call are the round trips one call
waits for, which the goal's "1 HTTP request per call" is judged on).
**The bridge rewrites @upstash/ratelimit's scripts:** they begin with \`#!lua flags=allow-key-locking\`, which Debian's
redis-server 7.0 refuses ("Unexpected flag in script shebang"), so the bridge strips that first line from every script
it forwards and maps the EVALSHA digest of the script as sent to the digest of the stripped one (the script's body
runs unchanged; on a Redis that accepts the flag it would lock only the keys it declares, as here).

${measured.length ? table(measured) : "(no lines: --hosts named none)"}

${failures(measured)}
${traffic ? `\nWhat went over HTTP on the Upstash rows (counted by the bridge over each timed run):\n\n${traffic}\n` : ""}`;
    process.stdout.write(`${markdown}\n`);
    if (!args["no-write"]) {
      writeSection(join(ROOT, "BENCHMARKS.md"), "bench:hosts", markdown);
      log("wrote its section of BENCHMARKS.md");
    }
  } finally {
    for (const stop of stops.reverse()) await stop();
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
process.exit(0);
