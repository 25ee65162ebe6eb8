// What `onDecision` costs: limit() on a MemoryStore (the synchronous fast path), without a hook
// and with one, in one process, rounds alternating so that a busy machine slows all alike. Pass
// several built packages' dist directories to compare builds (a build before the option exists
// is measured without a hook only): `node scripts/bench-hook.mjs [pkg/dist] [other/dist…]`.
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

const LIMITS = { api: { kind: "token bucket", rate: 1e9, period: 1_000 } };
const CALLS = 200_000;
const ROUNDS = 9;
const KEYS = Array.from({ length: 1_000 }, (_, index) => `user-${index}`);

let events = 0;
const runs = [];
for (const dist of (process.argv.length > 2 ? process.argv.slice(2) : ["pkg/dist"]).map((path) => resolve(path))) {
  const { RateLimiter, MemoryStore } = await import(pathToFileURL(`${dist}/node.js`).href);
  runs.push({ label: `${dist} no hook`, limiter: new RateLimiter(new MemoryStore(), LIMITS), times: [] });
  try {
    runs.push({ label: `${dist} with a hook`, limiter: new RateLimiter(new MemoryStore(), LIMITS, { onDecision: () => events++ }), times: [] });
  } catch {
    // a build before onDecision refuses the option
  }
}

async function round(limiter) {
  const started = process.hrtime.bigint();
  for (let index = 0; index < CALLS; index++) await limiter.limit("api", { key: KEYS[index % KEYS.length] });
  return Number(process.hrtime.bigint() - started) / CALLS;
}

for (let index = 0; index < ROUNDS; index++) for (const run of runs) run.times.push(await round(run.limiter));
const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
console.log(`limit() on MemoryStore, median of ${ROUNDS} alternating rounds of ${CALLS} calls over ${KEYS.length} keys:`);
for (const run of runs) console.log(`  ${run.label}: ${median(run.times).toFixed(0)} ns/call`);
