// Runs PROCESSES copies of llm-client.mjs (WORKERS calls in flight each) against one Redis for
// ROUNDS periods, then measures, from the admitted calls' timestamps and token counts, the most
// requests and tokens in any window of one period, and the Redis round trips per call.
//
//   REDIS_URL=redis://127.0.0.1:6379 node llm-measure.mjs              # the provider's minute: 3 minutes
//   REDIS_URL=… PERIOD_MS=2000 ROUNDS=3 node llm-measure.mjs           # the same in 6 seconds
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { createClient } from "redis";
import { PROVIDER } from "./llm-limits.mjs";

const PERIOD = Number(process.env.PERIOD_MS ?? 60_000);
const PROCESSES = Number(process.env.PROCESSES ?? 10);
const WORKERS = Number(process.env.WORKERS ?? 4);
const ROUNDS = Number(process.env.ROUNDS ?? 3);

const redis = createClient({ url: process.env.REDIS_URL });
await redis.connect();
/**
 * Scripts Redis has run so far (EVALSHA and EVAL, what ratebound sends): one per round trip, and a
 * group commit is one EVALSHA for many calls. (The GETs and SETs that commandstats also lists are
 * the scripts' own, inside Redis.)
 */
const commands = async () => {
  const stats = await redis.info("commandstats");
  return [...stats.matchAll(/^cmdstat_(evalsha|eval):calls=(\d+)/gm)].reduce((sum, match) => sum + Number(match[2]), 0);
};
const before = await commands();

// Every process starts on the same instant, a little ahead, once all are loaded.
const start = Date.now() + 1_500;
const until = start + ROUNDS * PERIOD;
const client = fileURLToPath(new URL("./llm-client.mjs", import.meta.url));
const calls = [];
await Promise.all(
  Array.from({ length: PROCESSES }, () => {
    const child = spawn(process.execPath, [client], { env: { ...process.env, PERIOD_MS: String(PERIOD), WORKERS: String(WORKERS), UNTIL: String(until) }, stdio: ["ignore", "pipe", "inherit"] });
    createInterface({ input: child.stdout }).on("line", (line) => calls.push(JSON.parse(line)));
    return new Promise((resolve, reject) => child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`a client exited with ${code}`)))));
  }),
);
const trips = (await commands()) - before;
await redis.quit();

/** The most of `weigh(call)` over the calls admitted in any window [t, t + PERIOD). */
function mostInAnyPeriod(weigh) {
  const sorted = [...calls].sort((a, b) => a.at - b.at);
  let most = 0;
  for (let first = 0, last = 0, sum = 0; last < sorted.length; last++) {
    sum += weigh(sorted[last]);
    while (sorted[last].at - sorted[first].at >= PERIOD) sum -= weigh(sorted[first++]);
    most = Math.max(most, sum);
  }
  return most;
}

const requests = mostInAnyPeriod(() => 1);
const tokens = mostInAnyPeriod((call) => call.tokens);
const report = { calls: calls.length, period: PERIOD, requests, requestsLimit: PROVIDER.requests, tokens, tokensLimit: PROVIDER.tokens, roundTrips: trips, roundTripsPerCall: trips / calls.length };
console.log(`${calls.length} calls from ${PROCESSES} processes × ${WORKERS} workers over ${ROUNDS} periods of ${PERIOD} ms`);
console.log(`most requests in any ${PERIOD} ms: ${requests} (limit ${PROVIDER.requests})`);
console.log(`most tokens in any ${PERIOD} ms: ${tokens} (limit ${PROVIDER.tokens})`);
console.log(`Redis round trips: ${trips}, ${(trips / calls.length).toFixed(2)} per call (a wait and a settle: at most 2)`);
console.log(JSON.stringify(report));
if (requests > PROVIDER.requests || tokens > PROVIDER.tokens) process.exitCode = 1;
