// What `onDecision` costs: limit() on a MemoryStore (the synchronous fast path), without a hook
// and with one, in one process, alternating rounds. Pass a built package's dist directory to
// compare with another build: `node scripts/bench-hook.mjs [pkg/dist]`.
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

const dist = resolve(process.argv[2] ?? "pkg/dist");
const { RateLimiter, MemoryStore } = await import(pathToFileURL(`${dist}/node.js`).href);
const LIMITS = { api: { kind: "token bucket", rate: 1e9, period: 1_000 } };
const CALLS = 200_000;
const KEYS = Array.from({ length: 1_000 }, (_, index) => `user-${index}`);

async function round(limiter) {
  const started = process.hrtime.bigint();
  for (let index = 0; index < CALLS; index++) await limiter.limit("api", { key: KEYS[index % KEYS.length] });
  return Number(process.hrtime.bigint() - started) / CALLS;
}

let events = 0;
const plain = new RateLimiter(new MemoryStore(), LIMITS);
let hooked; // a build before onDecision refuses the option
try {
  hooked = new RateLimiter(new MemoryStore(), LIMITS, { onDecision: () => events++ });
} catch {
  hooked = undefined;
}
const times = { plain: [], hooked: [] };
for (let index = 0; index < 7; index++) {
  times.plain.push(await round(plain));
  if (hooked !== undefined) times.hooked.push(await round(hooked));
}
const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
console.log(`${dist}: limit() on MemoryStore, median of 7 rounds of ${CALLS} calls: no hook ${median(times.plain).toFixed(0)} ns/call, ${hooked === undefined ? "(no onDecision option in this build)" : `with a hook ${median(times.hooked).toFixed(0)} ns/call (${events} events)`}`);
