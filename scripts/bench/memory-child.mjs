// Heap per key, in a fresh process started with --expose-gc and ./wasm-probe.mjs (by
// scripts/bench.mjs), which sees every WebAssembly instance the package makes:
//
//   node --expose-gc --import ./wasm-probe.mjs scripts/bench/memory-child.mjs <project> ratebound|map <keys>
//
// ratebound: a RateLimiter on a MemoryStore, one token bucket; after <keys> distinct keys were
//   granted once each, (JS heap used + every wasm memory's size) minus the same with 0 keys.
// map: the same keys in a plain Map<string, number>, for comparison: what the MemoryStore's
//   key → slot map alone costs.
// Prints one JSON line.
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [project, mode, keyCountText] = process.argv.slice(2);
const keyCount = Number(keyCountText);
const settle = () => {
  for (let i = 0; i < 4; i++) globalThis.gc();
};
const key = (i) => `user:${i}`;

const probe = globalThis.__rateboundWasmProbe;
if (!probe) throw new Error("run with --import ./wasm-probe.mjs");
const { load } = await import(pathToFileURL(join(project, "load.mjs")).href);
const { RateLimiter, MemoryStore } = await load("ratebound");
const config = { kind: "token bucket", rate: 10, period: 60_000 };

// Warm up on a limiter of its own (compiled code, lazily made objects), then drop it.
{
  const warm = new RateLimiter(new MemoryStore(), { perUser: config });
  for (let i = 0; i < 20_000; i++) await warm.limit("perUser", { key: `warm:${i}` });
  const warmMap = new Map();
  for (let i = 0; i < 20_000; i++) warmMap.set(`warm:${i}`, i);
}

const snapshot = () => {
  settle();
  return { heap: process.memoryUsage().heapUsed, wasm: probe.memoryBytes() };
};

let result;
if (mode === "ratebound") {
  const store = new MemoryStore();
  const limiter = new RateLimiter(store, { perUser: config });
  const before = snapshot();
  for (let i = 0; i < keyCount; i++) {
    const { ok } = await limiter.limit("perUser", { key: key(i) });
    if (!ok) throw new Error(`key ${i} was refused`);
  }
  const after = snapshot();
  if (typeof store.size === "number" && store.size !== keyCount) throw new Error(`the store holds ${store.size} states, not ${keyCount}`);
  result = { heapBytes: after.heap - before.heap, wasmBytes: after.wasm - before.wasm };
} else {
  const map = new Map();
  const before = snapshot();
  for (let i = 0; i < keyCount; i++) map.set(key(i), i);
  const after = snapshot();
  if (map.size !== keyCount) throw new Error("lost keys");
  result = { heapBytes: after.heap - before.heap, wasmBytes: 0 };
}
console.log(JSON.stringify({ keyCount, ...result, perKey: (result.heapBytes + result.wasmBytes) / keyCount }));
