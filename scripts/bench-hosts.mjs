// `npm run bench:hosts`: ratebound on the networked hosts against the peer a user of each would
// pick, as a serverless user meets them (issue 22): a closed loop with 32 calls in flight, 3 s per
// contender and row, one run, the same loopback servers for every contender.
//
//   node scripts/bench-hosts.mjs [--pkg DIR] [--seconds 3] [--in-flight 32] [--warmup-ms 500]
//                                [--hosts redis,upstash,postgres] [--json] [--no-write]
//
// Rows: Redis (node-redis and ioredis) against rate-limiter-flexible's RateLimiterRedis; the
// Upstash REST protocol (a bridge adding 0 and 5 ms per HTTP request) against @upstash/ratelimit's
// token bucket, both over @upstash/redis; PostgreSQL (a pg.Pool of 10 each) against
// RateLimiterPostgres. Each on one key (every call on the same key: a global limit, or one
// attacker on one user's key) and on 1,000 keys (taken in turn). Prints the table and writes it to
// its section of BENCHMARKS.md. A measurement, not a test: it asserts nothing about speed.
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
import { times } from "./bench/format.mjs";
import { postgresContenders, redisContenders, upstashContenders } from "./bench/hosts.mjs";
import { ROOT, installPackage, packageDir, withoutPkg } from "./bench/package.mjs";
import { writeSection } from "./bench/sections.mjs";
import { startBridgeProcess } from "./bench/upstash-bridge.mjs";

const { values: args } = parseArgs({
  args: withoutPkg(process.argv.slice(2)),
  options: {
    seconds: { type: "string", default: "3" },
    "in-flight": { type: "string", default: "32" },
    "warmup-ms": { type: "string", default: "500" },
    hosts: { type: "string", default: "redis,upstash,postgres" },
    json: { type: "boolean", default: false },
    "no-write": { type: "boolean", default: false },
  },
});
const DURATION_MS = Number(args.seconds) * 1000;
const IN_FLIGHT = Number(args["in-flight"]);
const WARMUP_MS = Number(args["warmup-ms"]);
const HOSTS = args.hosts.split(",");
const KEY_COUNTS = [1, 1_000];
const UPSTASH_DELAYS_MS = [0, 5];
const log = (line) => process.stderr.write(`bench:hosts: ${line}\n`);
const keysOf = (count) => Array.from({ length: count }, (_, i) => (count === 1 ? "hot" : `user:${i}`));
/** Calls made one at a time to count the HTTP requests one call needs on its own. */
const ALONE_CALLS = 50;

/**
 * HTTP requests per call with one call in flight: under load, auto-pipelining shares requests
 * between calls, so only calls made one at a time show how many requests (round trips) one call
 * waits for.
 */
async function requestsAlone(call, keys, counts) {
  const before = await counts();
  for (let i = 0; i < ALONE_CALLS; i++) await call(keys[i % keys.length]).catch(() => {});
  return ((await counts()).requests - before.requests) / ALONE_CALLS;
}

/** Every contender of a row in turn (which goes first alternates by row), each on empty state. */
async function measureRow(row, index, { reset, counts }) {
  const order = index % 2 === 0 ? ["ratebound", "peer"] : ["peer", "ratebound"];
  const results = {};
  for (const side of order) {
    await reset();
    const opened = await row.contenders[side].open();
    try {
      await closedLoop({ call: opened.call, keys: keysOf(row.keys), inFlight: IN_FLIGHT, durationMs: WARMUP_MS });
      const before = counts ? await counts() : undefined;
      const run = await closedLoop({ call: opened.call, keys: keysOf(row.keys), inFlight: IN_FLIGHT, durationMs: DURATION_MS });
      if (counts) {
        const after = await counts();
        run.httpRequestsPerCall = (after.requests - before.requests) / run.calls;
        run.commandsPerCall = Object.fromEntries(
          Object.entries(after.forwarded)
            .map(([name, total]) => [name, (total - (before.forwarded[name] ?? 0)) / run.calls])
            .filter(([, perCall]) => perCall > 0),
        );
        run.httpRequestsPerCallAlone = await requestsAlone(opened.call, keysOf(row.keys), counts);
      }
      results[side] = run;
      log(
        `  ${side}: ${Math.round(run.decisionsPerSecond)} decisions/s, ${run.failed} failed of ${run.calls}, p50 ${run.p50.toFixed(1)} ms, p99 ${run.p99.toFixed(1)} ms${run.httpRequestsPerCall === undefined ? "" : `, ${run.httpRequestsPerCallAlone.toFixed(2)} HTTP requests per call alone, ${run.httpRequestsPerCall.toFixed(2)} under load`}`,
      );
    } finally {
      await opened.close();
    }
  }
  return { ...row, order, results, ratio: results.ratebound.decisionsPerSecond / results.peer.decisionsPerSecond };
}

const percent = (share) => `${(share * 100).toFixed(share > 0 && share < 0.001 ? 3 : 1)} %`;
const perSecond = (value) => Math.round(value).toLocaleString("en-US");

function cell(run) {
  const failed =
    run.failed === 0 ? "0 failed" : `${percent(run.failedShare)} failed (${run.failed.toLocaleString("en-US")} of ${run.calls.toLocaleString("en-US")})`;
  const parts = [`${perSecond(run.decisionsPerSecond)} decisions/s`, failed, `p50 ${run.p50.toFixed(1)} ms, p99 ${run.p99.toFixed(1)} ms`];
  if (run.refused > 0) parts.push(`${percent(run.refused / run.calls)} refused`);
  if (run.httpRequestsPerCall !== undefined) {
    const commands = Object.entries(run.commandsPerCall)
      .map(([name, perCall]) => `${name} ${perCall.toFixed(2)}`)
      .join(", ");
    parts.push(
      `HTTP requests per call: ${run.httpRequestsPerCallAlone.toFixed(2)} alone, ${run.httpRequestsPerCall.toFixed(2)} under load; commands per call under load: ${commands || "none"}`,
    );
  }
  return parts.join("; ");
}

/** The row's goal (issue 22) and whether this run met it. */
function judge(row) {
  const ours = row.results.ratebound;
  const noFailures = ours.failed === 0;
  const upstash = row.host === "upstash";
  const oneRequest = !upstash || ours.httpRequestsPerCallAlone <= 1;
  return {
    goal: upstash ? "≥ 1.0×, 0 failed, one HTTP request per call" : "≥ 1.0×, 0 failed",
    met: row.ratio >= 1 && noFailures && oneRequest,
  };
}

function table(rows) {
  const lines = ["| workload | ratebound | the peer, same run | ratio | goal | met? |", "|---|---|---|---|---|---|"];
  for (const row of rows) {
    const { goal, met } = judge(row);
    lines.push(
      `| ${row.label} | ${cell(row.results.ratebound)} | ${row.contenders.peer.name}: ${cell(row.results.peer)} | ${times(row.ratio)} | ${goal} | ${met ? "met" : "**missed**"} |`,
    );
  }
  return lines.join("\n");
}

function failures(rows) {
  const lines = [];
  for (const row of rows) {
    for (const side of ["ratebound", "peer"]) {
      const entries = Object.entries(row.results[side].failures);
      if (entries.length)
        lines.push(
          `- ${row.label}, ${side === "peer" ? row.contenders.peer.name : "ratebound"}: ${entries.map(([name, count]) => `${count} × ${name}`).join("; ")}`,
        );
    }
  }
  return lines.length ? `Why calls failed:\n\n${lines.join("\n")}` : "No call failed.";
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
    const rows = [];
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
            rows.push({
              host: "redis",
              keys,
              reset,
              label: `Redis, ${keys === 1 ? "one key" : `${keys.toLocaleString("en-US")} keys`}, ${clientName}`,
              contenders: redisContenders(api, clientName, redis.url),
            });
          }
        }
      }
      if (HOSTS.includes("upstash")) {
        for (const delayMs of UPSTASH_DELAYS_MS) {
          log(`starting the Upstash REST bridge (+${delayMs} ms per request)`);
          const bridge = await startBridgeProcess(redis.url, delayMs);
          stops.push(() => bridge.stop());
          for (const keys of KEY_COUNTS) {
            rows.push({
              host: "upstash",
              keys,
              reset,
              counts: bridge.counts,
              label: `Upstash REST protocol, +${delayMs} ms per HTTP request, ${keys === 1 ? "one key" : `${keys.toLocaleString("en-US")} keys`}`,
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
        rows.push({
          host: "postgres",
          keys,
          reset,
          label: `PostgreSQL, \`pg.Pool\` (10), ${keys === 1 ? "one key" : `${keys.toLocaleString("en-US")} keys`}`,
          contenders: postgresContenders({ RateLimiter, createTable, postgresStore }, server.connectionString),
        });
      }
    }

    const measured = [];
    for (const [index, row] of rows.entries()) {
      log(`${row.label}`);
      measured.push(await measureRow(row, index, row));
    }
    const loadAtEnd = loadavg();
    const seconds = ((Date.now() - started) / 1000).toFixed(0);
    if (args.json) {
      console.log(
        JSON.stringify(
          { durationMs: DURATION_MS, inFlight: IN_FLIGHT, warmupMs: WARMUP_MS, rows: measured.map(({ contenders, reset, counts, ...row }) => row) },
          null,
          2,
        ),
      );
      return;
    }
    const cpu = cpus();
    const smoke = DURATION_MS !== 3000 || IN_FLIGHT !== 32 || HOSTS.length !== 3;
    const markdown = `## Hosts against their peers (\`npm run bench:hosts\`)

Generated by \`npm run bench:hosts\` (\`scripts/bench-hosts.mjs\`, \`scripts/bench/hosts.mjs\`, \`scripts/bench/closed-loop.mjs\`); do not edit by hand.

- **Date**: ${new Date(started).toISOString().replace(/\.\d+Z$/, "Z")}${smoke ? " (**a smoke run**: not the settings of record; not for comparison)" : ""}
- **Package**: ${pkg === join(ROOT, "pkg") ? "this checkout's \`pkg/\`" : `\`${pkg}\``}
- **Machine**: ${cpu[0]?.model ?? "unknown CPU"}, ${cpu.length} cores, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, ${platform()} ${release()}; Node ${process.version}
- **Load average** (1 min) at start ${loadAtStart[0].toFixed(2)}, at end ${loadAtEnd[0].toFixed(2)}; run time ${seconds} s

How it was measured: one Node process drives a closed loop (${IN_FLIGHT} calls in flight: each of ${IN_FLIGHT} workers sends
its next call as soon as its last one answered) for ${DURATION_MS / 1000} s per contender and row, one run, after ${WARMUP_MS} ms of the
same loop that is not counted. Every contender talks to the same servers on loopback: one redis-server 7.0 and one
PostgreSQL 15 (Debian's, started by the test suites' helpers, no persistence, \`fsync\` off), and for the Upstash rows
a bridge in a process of its own that speaks Upstash's REST protocol and forwards to that redis-server
(\`tests/redis/servers.mjs\`), waiting 0 or 5 ms before it handles each HTTP request. Before each contender the
database is emptied (\`FLUSHDB\`; \`TRUNCATE\` of every table); the two contenders of a row run one after the other,
the first alternating from row to row. "One key": every call on the same key; "1,000 keys": keys taken in turn.
The limits never run out (10⁹ tokens or points a minute), so every call is a decision that writes. A decision is a
call that answered granted or refused; a call that rejected failed (its reason is listed below the table);
decisions/s counts decisions over the time to the last answer; p50 and p99 are of every call's latency. The ratio is
ratebound's decisions/s over the peer's. Each contender is used as its README says, with its own client (or
\`pg.Pool\` of 10) made the same way for both sides: ${[...new Set(measured.map((row) => `${row.contenders.peer.name}: ${row.contenders.peer.how}`))].join("; ")}; ratebound: ${[...new Set(measured.map((row) => row.contenders.ratebound.how))].join("; ")}.
On the Upstash rows both contenders use \`@upstash/redis\` with its defaults (auto-pipelining on, so under load one HTTP
request may carry several calls' commands). The bridge counts HTTP requests and commands: "under load" is per call over
the timed run; "alone" is per call over ${ALONE_CALLS} calls made one at a time right after it (the round trips one call waits for,
which the goal's "one HTTP request per call" is judged on).
**The bridge rewrites @upstash/ratelimit's scripts:** they begin with \`#!lua flags=allow-key-locking\`, which Debian's
redis-server 7.0 refuses ("Unexpected flag in script shebang"), so the bridge strips that first line from every script
it forwards and maps the EVALSHA digest of the script as sent to the digest of the stripped one (the script's body
runs unchanged; on a Redis that accepts the flag it would lock only the keys it declares, as here).

${measured.length ? table(measured) : "(no rows: --hosts named none)"}

${failures(measured)}
`;
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
