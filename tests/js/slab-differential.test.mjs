// The one-crossing road against the general one: the same random traffic through a limiter on a
// MemoryStore (an unsharded limit/check is one call into the core, rb_slab_limit, on states in
// the core's memory) and through a limiter on the same kind of store behind a wrapper that hides
// it (planned, read, decided and written through read/write like any store). Every answer, every
// error and every stored number must be equal (Object.is), and each road must be the one taken:
// the core's exports are counted.
import { test } from "node:test";
import assert from "node:assert/strict";

// Count the calls into the core: the package instantiates it through WebAssembly.Instance.
const calls = new Map();
const Instance = WebAssembly.Instance;
WebAssembly.Instance = function CountedInstance(module, imports) {
  const instance = new Instance(module, imports);
  const counted = {};
  for (const [name, value] of Object.entries(instance.exports)) {
    counted[name] =
      typeof value === "function"
        ? (...args) => {
            calls.set(name, (calls.get(name) ?? 0) + 1);
            return value(...args);
          }
        : value;
  }
  return { exports: counted };
};
// helpers.mjs imports the package too: both only after the patch.
const { RateLimiter, MemoryStore, SECOND } = await import("../../pkg/dist/node.js");
const { seeded } = await import("./helpers.mjs");

const LIMITS = {
  bucket: { kind: "token bucket", rate: 5, period: SECOND, capacity: 8 },
  paced: { kind: "token bucket", rate: 3, period: SECOND, maxReserved: 4 },
  aligned: { kind: "fixed window", rate: 4, period: SECOND, start: 0, maxReserved: 2 },
  wandering: { kind: "fixed window", rate: 3, period: 700 },
  // Calendar quotas whose windows roll during the traffic (it starts at 1_700_000_000_000).
  daily: { kind: "fixed window", rate: 4, period: "day", start: 1_700_000_030_000, maxReserved: 3 },
  weekly: { kind: "fixed window", rate: 6, period: "week", start: 1_700_000_060_000 - 7 * 86_400_000, capacity: 9 },
  monthly: { kind: "fixed window", rate: 3, period: "month" },
  wide: { kind: "token bucket", rate: 40, period: SECOND, shards: 4 },
};
/** Inline configs: one object reused (compiled once), and one made anew per call. */
const INLINE = { kind: "fixed window", rate: 2, period: 300, start: 50 };
const inlineFresh = () => ({ kind: "token bucket", rate: 7, period: 900, capacity: 3, maxReserved: 5 });
const NAMES = [...Object.keys(LIMITS), "inline", "inlineFresh"];
const KEYS = [undefined, "", "a", "b", "a:b", "k5", "k6", "k7"];

/** A store that hides the MemoryStore it wraps: the limiter takes the general path on it. */
function hidden(inner) {
  return { read: (ref, info) => inner.read(ref, info), write: (ref, state, info) => inner.write(ref, state, info) };
}

/** An answer as data: the result, or the error's code and message. */
async function answer(promise) {
  try {
    return { result: await promise };
  } catch (error) {
    return { error: [error.code, error.message] };
  }
}

/** Every state either store holds for the names and keys of the traffic, read without a clock. */
function states(store) {
  const seen = [];
  for (const name of NAMES) for (const key of KEYS) for (let shard = 0; shard < 4; shard++) seen.push(store.read({ name, key, shard }));
  return seen;
}

for (const [maxKeys, refusalCache] of [[undefined, false], [5, false], [undefined, true]]) {
  const named = `${maxKeys === undefined ? "no maxKeys" : `maxKeys ${maxKeys}`}${refusalCache ? ", a refusal cache" : ""}`;
  test(`limit and check decide alike on both roads, with ${named}: every answer and every stored number`, async () => {
    const direct = new MemoryStore(maxKeys === undefined ? {} : { maxKeys });
    const inner = new MemoryStore(maxKeys === undefined ? {} : { maxKeys });
    let now = 1_700_000_000_000;
    const options = (seed) => ({ now: () => now, random: seeded(seed), ...(refusalCache ? { refusalCache } : {}) });
    const fast = new RateLimiter(direct, LIMITS, options(7));
    const general = new RateLimiter(hidden(inner), LIMITS, options(7));
    const traffic = seeded((maxKeys ?? 11) + (refusalCache ? 100 : 0));
    const pick = (list) => list[Math.floor(traffic() * list.length)];
    calls.clear();
    let unsharded = 0;
    let full = 0;
    for (let step = 0; step < 6000; step++) {
      // Mostly forward, now and then back (a clock that steps back), now and then a long pause.
      const move = traffic();
      now += move < 0.1 ? -Math.floor(traffic() * 2000) : move < 0.15 ? Math.floor(traffic() * 5000) : Math.floor(traffic() * 90);
      const name = pick(NAMES);
      const request = {
        key: pick(KEYS),
        ...(traffic() < 0.7 ? {} : { count: pick([0, 1, 2, 2.5, 3, 5, 9, -1, Number.NaN, Number.POSITIVE_INFINITY, 1e308]) }),
        ...(traffic() < 0.8 ? {} : { reserve: true }),
        ...(traffic() < 0.8 ? {} : { figures: true }),
        ...(name === "inline" ? { config: INLINE } : name === "inlineFresh" ? { config: inlineFresh() } : {}),
      };
      const write = traffic() < 0.75;
      const run = (limiter) => answer(write ? limiter.limit(name, request) : limiter.check(name, request));
      const [ours, theirs] = [await run(fast), await run(general)];
      assert.deepStrictEqual(ours, theirs, `step ${step}: ${write ? "limit" : "check"} ${name} ${JSON.stringify(request)} at ${now}`);
      if (name !== "wide") unsharded++;
      if (ours.error?.[0] === "STORE_FULL") full++;
      assert.deepStrictEqual(states(direct), states(inner), `step ${step}: the stored states`);
      assert.equal(direct.keyCount, inner.keyCount, `step ${step}: keyCount`);
      assert.equal(direct.size, inner.size, `step ${step}: size`);
    }
    // Each road was the one taken: every unsharded call on the MemoryStore crossed once, planned nothing.
    if (refusalCache) assert.ok(calls.get("rb_slab_limit") > unsharded / 2, `${calls.get("rb_slab_limit")} of ${unsharded} crossed once`);
    else assert.equal(calls.get("rb_slab_limit"), unsharded);
    if (maxKeys !== undefined) assert.ok(full > 10, `STORE_FULL came ${full} times`);
  });
}

test("a MemoryStore keeps every state when the core's memory grows under it (many keys, several stores)", async () => {
  const stores = [new MemoryStore(), new MemoryStore()];
  const limiters = stores.map((store) => new RateLimiter(store, LIMITS, { now: () => 0 }));
  for (let index = 0; index < 20_000; index++) await limiters[index % 2].limit("bucket", { key: `k${index}`, count: 1 + (index % 7) });
  for (let index = 0; index < 20_000; index++) {
    assert.equal(stores[index % 2].read({ name: "bucket", key: `k${index}`, shard: 0 })?.value, 8 - 1 - (index % 7), `k${index}`);
  }
});
