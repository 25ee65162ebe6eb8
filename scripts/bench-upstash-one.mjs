// Where one call's time goes on the Upstash REST protocol with one call in flight (issue 29,
// item 5): ratebound's `limit()` over `redisStore(new Redis({ url, token }))` against
// @upstash/ratelimit's token bucket, both on @upstash/redis, 1,000 keys taken in turn, through
// the bench's REST bridge (scripts/bench/upstash-bridge.mjs) in a process of its own.
//
//   node scripts/bench-upstash-one.mjs [--pkg DIR] [--calls 2000] [--rounds 3] [--delay-ms 0]
//                                      [--variants defaults,raw,unpipelined] [--sides ratebound,peer]
//
// Each contender and client variant runs `--calls` calls one at a time (after as many again not
// counted), the contenders and variants taking turns for `--rounds` rounds; each figure is the
// median over the rounds. Per call it reports the latency (mean and p50), the CPU time of this
// process (`process.cpuUsage()` around the loop: the client library and, for ratebound, the
// wasm core), of the bridge process (the same, read by the bridge) and of redis-server (`INFO
// cpu`), the time inside the script (`INFO commandstats`, EVALSHA's usec per call), HTTP
// requests and body bytes each way per call, and one request and answer as sent. Variants of the
// @upstash/redis client, the same for both contenders: `defaults` (as its README makes it:
// auto-pipelining on, `responseEncoding: "base64"`), `raw` (`responseEncoding: false`: strings
// in answers as they are), `unpipelined` (`enableAutoPipelining: false`), `undeserialized`
// (`automaticDeserialization: false`: answers not passed through JSON.parse). A diagnostic, not
// a test; it writes nothing.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createClient } from "redis";
import { startRedis } from "../tests/redis/servers.mjs";
import { upstashContenders } from "./bench/hosts.mjs";
import { fresh } from "./bench/interleave.mjs";
import { installPackage, packageDir, withoutPkg } from "./bench/package.mjs";
import { startBridgeProcess } from "./bench/upstash-bridge.mjs";

const { values: args } = parseArgs({
  args: withoutPkg(process.argv.slice(2)),
  options: {
    calls: { type: "string", default: "2000" },
    rounds: { type: "string", default: "3" },
    "delay-ms": { type: "string", default: "0" },
    variants: { type: "string", default: "defaults,raw,unpipelined" },
    sides: { type: "string", default: "ratebound,peer" },
  },
});
const CALLS = Number(args.calls);
const ROUNDS = Number(args.rounds);
const KEYS = Array.from({ length: 1_000 }, (_, i) => `user:${i}`);
const VARIANTS = {
  defaults: {},
  raw: { responseEncoding: false },
  unpipelined: { enableAutoPipelining: false },
  undeserialized: { automaticDeserialization: false },
};

/** One call at a time; each contender and variant gets its own copy (its own type feedback). */
const LOOP = async (call, keys, calls, offset) => {
  const latencies = new Array(calls);
  for (let i = 0; i < calls; i++) {
    const sent = performance.now();
    await call(keys[(offset + i) % keys.length]);
    latencies[i] = performance.now() - sent;
  }
  return latencies;
};

/** redis-server's CPU time (µs, user + system) and EVALSHA's calls and µs inside, so far. */
async function serverCounters(admin) {
  const cpu = await admin.info("cpu");
  const seconds = (name) => Number(new RegExp(`^${name}:([\\d.]+)`, "m").exec(cpu)?.[1] ?? NaN);
  const stats = await admin.info("commandstats");
  const evalsha = /^cmdstat_evalsha:calls=(\d+),usec=(\d+)/m.exec(stats);
  return { cpuMicros: (seconds("used_cpu_user") + seconds("used_cpu_sys")) * 1e6, scriptCalls: Number(evalsha?.[1] ?? 0), scriptMicros: Number(evalsha?.[2] ?? 0) };
}

const median = (numbers) => [...numbers].sort((a, b) => a - b)[Math.floor((numbers.length - 1) / 2)];

async function measure(entry, bridge, admin, round) {
  const loop = entry.loop;
  await loop(entry.call, KEYS, CALLS, round * CALLS); // warm-up, not counted
  const [bridgeBefore, serverBefore] = [await bridge.counts(), await serverCounters(admin)];
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  const latencies = await loop(entry.call, KEYS, CALLS, round * CALLS + 500);
  const elapsed = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  const [bridgeAfter, serverAfter] = [await bridge.counts(), await serverCounters(admin)];
  latencies.sort((a, b) => a - b);
  const requests = bridgeAfter.requests - bridgeBefore.requests;
  return {
    meanMs: elapsed / CALLS,
    p50Ms: latencies[Math.floor(CALLS / 2)],
    clientCpuMicros: (cpu.user + cpu.system) / CALLS,
    bridgeCpuMicros: (bridgeAfter.cpuMicros - bridgeBefore.cpuMicros) / CALLS,
    serverCpuMicros: (serverAfter.cpuMicros - serverBefore.cpuMicros) / CALLS,
    scriptMicros: (serverAfter.scriptMicros - serverBefore.scriptMicros) / Math.max(1, serverAfter.scriptCalls - serverBefore.scriptCalls),
    requestsPerCall: requests / CALLS,
    bytesInPerRequest: (bridgeAfter.bytesIn - bridgeBefore.bytesIn) / requests,
    bytesOutPerRequest: (bridgeAfter.bytesOut - bridgeBefore.bytesOut) / requests,
    last: bridgeAfter.last,
  };
}

const FIGURES = [
  ["meanMs", "latency, mean (ms)", 3],
  ["p50Ms", "latency, p50 (ms)", 3],
  ["clientCpuMicros", "client CPU per call (µs)", 1],
  ["bridgeCpuMicros", "bridge CPU per call (µs)", 1],
  ["serverCpuMicros", "redis-server CPU per call (µs)", 1],
  ["scriptMicros", "inside EVALSHA per call (µs)", 1],
  ["requestsPerCall", "HTTP requests per call", 2],
  ["bytesInPerRequest", "request body bytes", 0],
  ["bytesOutPerRequest", "response body bytes", 0],
];

const work = mkdtempSync(join(tmpdir(), "ratebound-upstash-one-"));
const stops = [];
try {
  const { load } = installPackage(packageDir(), join(work, "project"));
  const { RateLimiter } = await load("ratebound");
  const { redisStore } = await load("ratebound/redis");
  const redis = await startRedis();
  stops.push(() => redis.stop());
  const admin = await createClient({ url: redis.url }).connect();
  stops.push(() => admin.quit().catch(() => {}));
  const bridge = await startBridgeProcess(redis.url, Number(args["delay-ms"]));
  stops.push(() => bridge.stop());
  const entries = [];
  for (const variant of args.variants.split(",")) {
    if (!(variant in VARIANTS)) throw new Error(`unknown variant ${variant}; one of ${Object.keys(VARIANTS).join(", ")}`);
    const contenders = upstashContenders({ RateLimiter, redisStore }, bridge.url, VARIANTS[variant]);
    for (const side of args.sides.split(",")) {
      const opened = await contenders[side].open();
      entries.push({ variant, side, call: opened.call, loop: fresh(LOOP, `${side} ${variant}`), runs: [] });
    }
  }
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? entries : [...entries].reverse();
    for (const entry of order) {
      await admin.flushDb();
      entry.runs.push(await measure(entry, bridge, admin, round));
      process.stderr.write(`round ${round + 1}: ${entry.side} ${entry.variant}: ${entry.runs.at(-1).meanMs.toFixed(3)} ms a call\n`);
    }
  }
  const columns = entries.map((entry) => `${entry.side === "peer" ? "@upstash/ratelimit" : "ratebound"}, ${entry.variant}`);
  const lines = [`| per call, 1 in flight, 1,000 keys, +${args["delay-ms"]} ms (median of ${ROUNDS} rounds of ${CALLS}) | ${columns.join(" | ")} |`, `|---|${columns.map(() => "---:").join("|")}|`];
  for (const [field, label, digits] of FIGURES) lines.push(`| ${label} | ${entries.map((entry) => median(entry.runs.map((run) => run[field])).toFixed(digits)).join(" | ")} |`);
  console.log(lines.join("\n"));
  console.log("\nOne exchange each, as the bridge saw it (the last of the last round):");
  for (const entry of entries) console.log(`- ${entry.side}, ${entry.variant}:\n  request  ${entry.runs.at(-1).last.request}\n  response ${entry.runs.at(-1).last.response}`);
} finally {
  for (const stop of stops.reverse()) await stop();
  rmSync(work, { recursive: true, force: true });
}
process.exit(0);
