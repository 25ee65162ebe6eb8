// Where a decision's time goes on the networked hosts, ratebound beside its peer in the same run
// (issue 22): server time per call, measured on the server, and CPU per call on both sides of a
// closed loop. A measurement, not a test: it asserts nothing.
//
//   node scripts/bench-server-time.mjs [--pkg DIR] [--hosts redis,redis-ops,postgres] [--calls 20000]
//                                      [--seconds 3] [--in-flight 32] [--runs 3]
//
// Redis, per contender (the decision script through ratebound's store, node-redis and ioredis;
// rate-limiter-flexible's RateLimiterRedis; a bare GET+SET script as a floor):
// - sequential: `--calls` calls one at a time on one key, after `CONFIG RESETSTAT`; the script's
//   `usec_per_call` from `INFO commandstats` (time inside the command, as the server counts it);
// - closed loop: `--in-flight` calls in flight for `--seconds`, one key and 1,000 keys; per call,
//   the Node process's CPU (`process.cpuUsage`), redis-server's (`INFO cpu`), and the time inside
//   the contender's commands (`INFO commandstats`: with group commit, one EVALSHA decides many calls).
// PostgreSQL, per contender (ratebound's statement through its store; RateLimiterPostgres's
// upsert; a bare upsert as a floor):
// - sequential: `--calls` calls one at a time on one connection of their own (a `pg.Client`),
//   the backend's CPU per call (`/proc/PID/stat` of that connection's server process: parsing,
//   planning and running the statement, and the protocol), wall time per call minus that of
//   `SELECT 1` on the same connection (the round trip and the driver), and for ratebound's
//   functions their total time per call from `pg_stat_user_functions` (`track_functions = 'pl'`);
// - closed loop: a `pg.Pool` of 10, `--in-flight` calls in flight, one key and 1,000 keys; per
//   call, the Node process's CPU and every PostgreSQL process's (`/proc/PID/stat`).
// Redis Lua operations (`--hosts redis-ops`): what each operation the decision script does costs
// inside Redis's Lua, each timed in a loop of 200,000 inside one EVAL, minus the empty loop.
// Each figure is the median of `--runs` runs (contenders alternate within a run). On a loaded
// machine, read only ratios between contenders of the same run.
import { readdirSync, readFileSync, mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";
import { createClient } from "redis";
import IORedis from "ioredis";
import flexible from "rate-limiter-flexible";
import { startRedis } from "../tests/redis/servers.mjs";
import { startPostgres } from "../tests/sql/postgres-server.mjs";
import { closedLoop } from "./bench/closed-loop.mjs";
import { installPackage, packageDir, withoutPkg } from "./bench/package.mjs";

const { RateLimiterRedis, RateLimiterPostgres, RateLimiterRes } = flexible;
const { values: args } = parseArgs({
  args: withoutPkg(process.argv.slice(2)),
  options: {
    hosts: { type: "string", default: "redis,postgres" },
    calls: { type: "string", default: "20000" },
    seconds: { type: "string", default: "3" },
    "in-flight": { type: "string", default: "32" },
    runs: { type: "string", default: "3" },
    only: { type: "string", default: "" },
  },
});
const CALLS = Number(args.calls);
const DURATION_MS = Number(args.seconds) * 1000;
const IN_FLIGHT = Number(args["in-flight"]);
const RUNS = Number(args.runs);
const HOSTS = args.hosts.split(",");
const ONLY = args.only === "" ? null : args.only.split(",");
const PLENTY = 1e9;
const LIMITS = { bench: { kind: "token bucket", rate: PLENTY, period: 60_000 } };
const log = (line) => process.stderr.write(`${line}\n`);
const keysOf = (count) => Array.from({ length: count }, (_, i) => (count === 1 ? "hot" : `user:${i}`));
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const consumed = (promise) =>
  promise.then(
    () => true,
    (reason) => {
      if (reason instanceof RateLimiterRes) return false;
      throw reason;
    },
  );

/** Node's own CPU in µs. */
const nodeCpu = () => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

/** CPU in µs of processes (clock ticks of /proc/PID/stat: utime + stime). */
function processCpu(pids) {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // gone: its ticks went with it
    }
  }
  return ticks * 10_000; // USER_HZ 100
}

/** Every process whose command line names `needle`. */
function pidsOf(needle) {
  const pids = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8").includes(needle)) pids.push(Number(entry));
    } catch {
      // gone
    }
  }
  return pids;
}

/**
 * A closed loop with CPU per call on each side; `serverCpu()` reads the server's CPU in µs, and
 * `commandUs()` (optional) the server's time inside the contender's commands so far, in µs.
 */
async function loop(id, call, keys, serverCpu, commandUs = async () => NaN) {
  await closedLoop({ id, call, keys, inFlight: IN_FLIGHT, durationMs: 300 });
  const [node0, server0, command0] = [nodeCpu(), await serverCpu(), await commandUs()];
  const run = await closedLoop({ id, call, keys, inFlight: IN_FLIGHT, durationMs: DURATION_MS });
  const [node1, server1, command1] = [nodeCpu(), await serverCpu(), await commandUs()];
  return { perSecond: run.decisionsPerSecond, failed: run.failed, nodeUs: (node1 - node0) / run.calls, serverUs: (server1 - server0) / run.calls, commandUs: (command1 - command0) / run.calls };
}

function table(title, rows) {
  log(`\n${title}`);
  const columns = Object.keys(rows[0]);
  log(`| ${columns.join(" | ")} |`);
  log(`|${columns.map(() => "---").join("|")}|`);
  for (const row of rows) log(`| ${columns.map((column) => row[column]).join(" | ")} |`);
}

const f = (x, digits = 1) => (Number.isFinite(x) ? x.toFixed(digits) : "–");

// ---------------------------------------------------------------------------------------------
async function redisRows(api) {
  const server = await startRedis();
  const admin = await createClient({ url: server.url }).connect();
  const info = async (section) => admin.info(section);
  const serverCpu = async () => {
    const text = await info("cpu");
    const field = (name) => Number(new RegExp(`${name}:([\\d.]+)`).exec(text)[1]);
    return (field("used_cpu_user") + field("used_cpu_sys")) * 1e6;
  };
  const usecPerCall = async (commands) => {
    const text = await info("commandstats");
    let calls = 0;
    let usec = 0;
    for (const command of commands) {
      const match = new RegExp(`cmdstat_${command}:calls=(\\d+),usec=(\\d+)`).exec(text);
      if (match) {
        calls += Number(match[1]);
        usec += Number(match[2]);
      }
    }
    return calls === 0 ? NaN : usec / calls;
  };
  /** The server's time inside `commands` so far, in µs (`INFO commandstats`). */
  const usecIn = async (commands) => {
    const text = await info("commandstats");
    let usec = 0;
    for (const command of commands) usec += Number(new RegExp(`cmdstat_${command}:calls=\\d+,usec=(\\d+)`).exec(text)?.[1] ?? 0);
    return usec;
  };
  const FLOOR = `local v = redis.call('GET', KEYS[1]) redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return {v}`;
  const clients = {
    "node-redis": async () => {
      const client = createClient({ url: server.url });
      client.on("error", () => {});
      await client.connect();
      return { client, close: () => client.quit() };
    },
    ioredis: async () => {
      const client = new IORedis(server.url, { enableOfflineQueue: false, lazyConnect: true });
      client.on("error", () => {});
      await client.connect();
      return { client, close: () => client.quit() };
    },
  };
  const contenders = [];
  for (const name of ["node-redis", "ioredis"]) {
    contenders.push({
      name: `ratebound, ${name}`,
      commands: ["evalsha", "eval"],
      open: async () => {
        const { client, close } = await clients[name]();
        const limiter = new api.RateLimiter(api.redisStore(client), LIMITS);
        return { call: (key) => limiter.limit("bench", { key }).then((r) => r.ok), close };
      },
    });
    contenders.push({
      name: `RateLimiterRedis, ${name}`,
      commands: ["evalsha", "eval"],
      open: async () => {
        const { client, close } = await clients[name]();
        const limiter = new RateLimiterRedis({ storeClient: client, useRedisPackage: name === "node-redis", points: PLENTY, duration: 60, keyPrefix: "rlflx" });
        return { call: (key) => consumed(limiter.consume(key)), close };
      },
    });
  }
  contenders.push({
    name: "GET+SET script (floor), ioredis",
    commands: ["evalsha", "eval"],
    open: async () => {
      const { client, close } = await clients.ioredis();
      client.defineCommand("floor", { numberOfKeys: 1, lua: FLOOR });
      return { call: (key) => client.floor(`floor:${key}`, "1,2", "60000").then(() => true), close };
    },
  });
  const selected = contenders.filter((c) => ONLY === null || ONLY.some((word) => c.name.includes(word)));
  const results = new Map(selected.map((c) => [c.name, []]));
  try {
    for (let run = 0; run < RUNS; run++) {
      const order = run % 2 === 0 ? selected : [...selected].reverse();
      for (const contender of order) {
        await admin.flushDb();
        const opened = await contender.open();
        try {
          // Sequential: server time inside the command.
          for (let i = 0; i < 200; i++) await opened.call("hot");
          await admin.configResetStat();
          for (let i = 0; i < CALLS; i++) await opened.call("hot");
          const usec = await usecPerCall(contender.commands);
          const inCommands = () => usecIn(contender.commands);
          const one = await loop(contender.name, opened.call, keysOf(1), serverCpu, inCommands);
          await admin.flushDb();
          const many = await loop(contender.name, opened.call, keysOf(1000), serverCpu, inCommands);
          results.get(contender.name).push({ usec, one, many });
          log(`run ${run + 1}, ${contender.name}: ${f(usec)} µs/call in the command; one key ${Math.round(one.perSecond)}/s, 1,000 keys ${Math.round(many.perSecond)}/s`);
        } finally {
          await opened.close();
        }
      }
    }
  } finally {
    await admin.quit();
    server.stop();
  }
  table(
    `Redis (medians of ${RUNS} runs; ${CALLS} sequential calls for usec_per_call; closed loop ${IN_FLIGHT} in flight, ${DURATION_MS / 1000} s)`,
    [...results].map(([name, runs]) => ({
      contender: name,
      "usec_per_call (server, in the command)": f(median(runs.map((r) => r.usec))),
      "one key: decisions/s": Math.round(median(runs.map((r) => r.one.perSecond))),
      "one key: Node CPU µs/call": f(median(runs.map((r) => r.one.nodeUs))),
      "one key: redis-server CPU µs/call": f(median(runs.map((r) => r.one.serverUs))),
      "one key: µs/call in the command": f(median(runs.map((r) => r.one.commandUs))),
      "1,000 keys: decisions/s": Math.round(median(runs.map((r) => r.many.perSecond))),
      "1,000 keys: Node CPU µs/call": f(median(runs.map((r) => r.many.nodeUs))),
      "1,000 keys: redis-server CPU µs/call": f(median(runs.map((r) => r.many.serverUs))),
      "1,000 keys: µs/call in the command": f(median(runs.map((r) => r.many.commandUs))),
      failed: runs.reduce((sum, r) => sum + r.one.failed + r.many.failed, 0),
    })),
  );
}

// ---------------------------------------------------------------------------------------------
/** What each Lua operation of the decision script costs inside Redis. */
async function redisOps() {
  const server = await startRedis();
  const admin = await createClient({ url: server.url }).connect();
  const loops = 200_000;
  const state = "999999983.33333337,1795664988075";
  const ops = {
    "an empty loop (subtracted)": "",
    "tonumber of a 13-digit argument": "local x = tonumber(ARGV[1])",
    "string.match of VALUE,TS with two captures": `local a, b = string.match(R, '^(%-?%d+%.?%d*),(%-?%d+%.?%d*)$')`,
    "string.format('%.17g,%.17g')": "local x = string.format('%.17g,%.17g', 999999983.33333337, 1795664988075)",
    "string.format('%.17g,%d')": "local x = string.format('%.17g,%d', 999999983.33333337, 1795664988075)",
    "string.format('%d') of a TTL": "local x = string.format('%d', 60000)",
    "a table of three": "local t = { 1, 2, 3 }",
    "redis.call GET": "local x = redis.call('GET', KEYS[1])",
    "redis.call SET (no TTL)": `redis.call('SET', KEYS[1], '${state}')`,
    "redis.call SET … PX": `redis.call('SET', KEYS[1], '${state}', 'PX', '60000')`,
  };
  const results = Object.fromEntries(Object.keys(ops).map((name) => [name, []]));
  try {
    for (let run = 0; run < RUNS; run++) {
      for (const [name, body] of Object.entries(ops)) {
        const script = `local R = '${state}' redis.call('SET', KEYS[1], R) for i = 1, ${loops} do ${body} end return 1`;
        const start = performance.now();
        await admin.sendCommand(["EVAL", script, "1", "ratebound:ops", "1795664988075"]);
        results[name].push(((performance.now() - start) * 1e6) / loops);
      }
    }
  } finally {
    await admin.quit();
    server.stop();
  }
  const empty = median(results["an empty loop (subtracted)"]);
  table(
    `Redis Lua operations (ns per operation, median of ${RUNS} runs of ${loops.toLocaleString("en-US")} in one EVAL, minus the empty loop)`,
    Object.entries(results)
      .filter(([name]) => !name.startsWith("an empty loop"))
      .map(([name, runs]) => ({ operation: name, "ns per operation": Math.round(median(runs) - empty) })),
  );
}

// ---------------------------------------------------------------------------------------------
async function postgresRows(api) {
  const server = await startPostgres();
  const admin = new pg.Client({ connectionString: server.connectionString });
  await admin.connect();
  const dataDir = (await admin.query("SHOW data_directory")).rows[0].data_directory;
  const serverCpu = async () => processCpu(pidsOf(dataDir).concat(pidsOf("postgres: ")));
  const reset = async () => {
    const { rows } = await admin.query("SELECT quote_ident(tablename) AS name FROM pg_tables WHERE schemaname = 'public'");
    if (rows.length) await admin.query(`TRUNCATE ${rows.map((row) => row.name).join(", ")}`);
  };
  await api.createTable(admin);
  await admin.query("CREATE TABLE IF NOT EXISTS floor_bench (key text PRIMARY KEY, points integer NOT NULL, expire bigint)");
  await admin.query("ALTER SYSTEM SET track_functions = 'pl'");
  await admin.query("SELECT pg_reload_conf()");
  const functionTime = async () => {
    const { rows } = await admin.query("SELECT coalesce(sum(calls), 0)::float8 AS calls, coalesce(sum(total_time), 0)::float8 AS ms FROM pg_stat_user_functions WHERE funcname IN ('ratebound_decide_v2', 'ratebound_decide_one_v2', 'ratebound_decide_many_v2')");
    return rows[0];
  };
  const contenders = [
    {
      name: "ratebound",
      open: async (db) => {
        const limiter = new api.RateLimiter(api.postgresStore(db), LIMITS);
        return (key) => limiter.limit("bench", { key }).then((r) => r.ok);
      },
    },
    {
      name: "RateLimiterPostgres",
      open: async (db) => {
        const limiter = await new Promise((resolve, reject) => {
          const created = new RateLimiterPostgres({ storeClient: db, storeType: db instanceof pg.Pool ? undefined : "client", points: PLENTY, duration: 60, tableName: "rlflx_bench" }, (error) =>
            error ? reject(error) : resolve(created),
          );
        });
        return (key) => consumed(limiter.consume(key));
      },
    },
    {
      name: "bare upsert (floor)",
      open: async (db) => (key) =>
        db
          .query(
            "INSERT INTO floor_bench (key, points, expire) VALUES ($1, $2, $3) ON CONFLICT (key) DO UPDATE SET points = floor_bench.points + excluded.points, expire = excluded.expire RETURNING points, expire",
            [key, 1, Date.now() + 60_000],
          )
          .then(() => true),
    },
  ];
  const selected = contenders.filter((c) => ONLY === null || ONLY.some((word) => c.name.includes(word)));
  const results = new Map(selected.map((c) => [c.name, []]));
  try {
    for (let run = 0; run < RUNS; run++) {
      const order = run % 2 === 0 ? selected : [...selected].reverse();
      for (const contender of order) {
        await reset();
        // Sequential, on one connection of its own.
        const client = new pg.Client({ connectionString: server.connectionString });
        await client.connect();
        const backend = [(await client.query("SELECT pg_backend_pid() AS pid")).rows[0].pid];
        let sequential;
        let fn = { calls: 0, ms: 0 };
        try {
          const call = await contender.open(client);
          for (let i = 0; i < 200; i++) await call("hot");
          for (let i = 0; i < 200; i++) await client.query("SELECT 1");
          let start = performance.now();
          for (let i = 0; i < CALLS; i++) await client.query("SELECT 1");
          const select1 = ((performance.now() - start) * 1000) / CALLS;
          const before = await functionTime();
          const cpu0 = processCpu(backend);
          start = performance.now();
          for (let i = 0; i < CALLS; i++) await call("hot");
          const wall = ((performance.now() - start) * 1000) / CALLS;
          const backendUs = (processCpu(backend) - cpu0) / CALLS;
          // A backend reports its function stats when idle, at most once a second: ask for it now.
          await client.query("SELECT pg_stat_force_next_flush()");
          await client.query("SELECT 1");
          const after = await functionTime();
          fn = { calls: after.calls - before.calls, ms: after.ms - before.ms };
          sequential = { wall, select1, backendUs };
        } finally {
          await client.end();
        }
        // Closed loop on a pool of 10.
        const pool = new pg.Pool({ connectionString: server.connectionString, max: 10 });
        pool.on("error", () => {});
        try {
          const call = await contender.open(pool);
          await reset();
          const one = await loop(contender.name, call, keysOf(1), serverCpu);
          await reset();
          const many = await loop(contender.name, call, keysOf(1000), serverCpu);
          results.get(contender.name).push({ ...sequential, fnUs: fn.calls > 0 ? (fn.ms * 1000) / fn.calls : NaN, one, many });
          log(
            `run ${run + 1}, ${contender.name}: ${f(sequential.wall)} µs/call sequential (SELECT 1: ${f(sequential.select1)}); one key ${Math.round(one.perSecond)}/s, 1,000 keys ${Math.round(many.perSecond)}/s`,
          );
        } finally {
          await pool.end();
        }
      }
    }
  } finally {
    await admin.end();
    server.stop();
  }
  table(
    `PostgreSQL (medians of ${RUNS} runs; ${CALLS} sequential calls on one connection; closed loop on a pg.Pool of 10, ${IN_FLIGHT} in flight, ${DURATION_MS / 1000} s)`,
    [...results].map(([name, runs]) => ({
      contender: name,
      "sequential: backend CPU µs/call": f(median(runs.map((r) => r.backendUs))),
      "sequential µs/call": f(median(runs.map((r) => r.wall))),
      "minus SELECT 1": f(median(runs.map((r) => r.wall - r.select1))),
      "function total µs/call": f(median(runs.map((r) => r.fnUs))),
      "one key: decisions/s": Math.round(median(runs.map((r) => r.one.perSecond))),
      "one key: Node CPU µs/call": f(median(runs.map((r) => r.one.nodeUs))),
      "one key: PostgreSQL CPU µs/call": f(median(runs.map((r) => r.one.serverUs))),
      "1,000 keys: decisions/s": Math.round(median(runs.map((r) => r.many.perSecond))),
      "1,000 keys: Node CPU µs/call": f(median(runs.map((r) => r.many.nodeUs))),
      "1,000 keys: PostgreSQL CPU µs/call": f(median(runs.map((r) => r.many.serverUs))),
      failed: runs.reduce((sum, r) => sum + r.one.failed + r.many.failed, 0),
    })),
  );
}

const work = mkdtempSync(join(tmpdir(), "ratebound-server-time-"));
try {
  const { load } = installPackage(packageDir(), join(work, "project"));
  const { RateLimiter } = await load("ratebound");
  log(`load average at start: ${loadavg().map((x) => x.toFixed(2)).join(", ")}`);
  if (HOSTS.includes("redis")) {
    const { redisStore } = await load("ratebound/redis");
    await redisRows({ RateLimiter, redisStore });
  }
  if (HOSTS.includes("redis-ops")) await redisOps();
  if (HOSTS.includes("postgres")) {
    const { createTable, postgresStore } = await load("ratebound/postgres");
    await postgresRows({ RateLimiter, createTable, postgresStore });
  }
  log(`load average at end: ${loadavg().map((x) => x.toFixed(2)).join(", ")}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
process.exit(0);
