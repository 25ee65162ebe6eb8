// MemoryStore's slab: blocks shared by both paths, and maxKeys eviction.
import { test } from "node:test";
import assert from "node:assert/strict";
import { RateLimiter, MemoryStore, SECOND } from "../../pkg/dist/node.js";
import { seeded } from "./helpers.mjs";

test("a sharded limit keeps every shard's write when its block was first made by a batch (found by the stores test)", async () => {
  // limitAll writes through the store's callbacks and makes a block as long as
  // the shards it wrote; the slab path used to drop writes past its end.
  const store = new MemoryStore();
  const limits = { wide: { kind: "token bucket", rate: 50, period: SECOND, shards: 5 } };
  const draws = [0.0, 0.99, 0.99, 0.5]; // batch: shard 0; then shard 4 and another
  const limiter = new RateLimiter(store, limits, { now: () => 0, random: () => draws.shift() ?? 0.99 });
  await limiter.limitAll([{ name: "wide", count: 1 }]);
  assert.equal((await limiter.limit("wide", { count: 1 })).ok, true);
  const shards = [0, 1, 2, 3, 4].map((shard) => store.read({ name: "wide", shard }));
  assert.deepEqual(shards.filter(Boolean).length, 2, JSON.stringify(shards));
  assert.equal(shards[4]?.value, 9);
});

const LIMITS = {
  bucket: { kind: "token bucket", rate: 5, period: SECOND, capacity: 8 },
  sharded: { kind: "token bucket", rate: 40, period: SECOND, shards: 4 },
  aligned: { kind: "fixed window", rate: 3, period: SECOND, start: 0 },
};

/** Seeded traffic over many keys; every answer, in order. */
async function run(store, seed) {
  let now = 1_700_000_000_000;
  const limiter = new RateLimiter(store, LIMITS, { now: () => now, random: seeded(seed) });
  const traffic = seeded(seed + 1);
  const answers = [];
  for (let step = 0; step < 3000; step++) {
    now += Math.floor(traffic() * 120);
    const name = Object.keys(LIMITS)[Math.floor(traffic() * 3)];
    const key = `k${Math.floor(traffic() * 40)}`;
    const count = 1 + Math.floor(traffic() * 3);
    try {
      answers.push(await limiter.limit(name, { key, count }));
    } catch (error) {
      answers.push({ error: error.code });
    }
  }
  return answers;
}

for (const seed of [1, 2, 3]) {
  test(`maxKeys evicts only fully refilled keys: the same traffic decides the same with and without it (seed ${seed})`, async () => {
    const unbounded = new MemoryStore();
    const bounded = new MemoryStore({ maxKeys: 60 });
    const expected = await run(unbounded, seed);
    const actual = await run(bounded, seed);
    assert.ok(unbounded.keyCount > 60, `the traffic needs more than 60 keys (${unbounded.keyCount})`);
    assert.ok(bounded.keyCount <= 60);
    const firstDifference = expected.findIndex((answer, step) => JSON.stringify(answer) !== JSON.stringify(actual[step]));
    assert.equal(firstDifference, -1, `step ${firstDifference}: ${JSON.stringify(expected[firstDifference])} vs ${JSON.stringify(actual[firstDifference])}`);
  });
}

test("a full MemoryStore whose keys are all still refilling refuses new keys with STORE_FULL and admits nothing", async () => {
  const store = new MemoryStore({ maxKeys: 2 });
  const limiter = new RateLimiter(store, { slow: { kind: "token bucket", rate: 1, period: 60 * SECOND } }, { now: () => 0 });
  assert.equal((await limiter.limit("slow", { key: "a" })).ok, true);
  assert.equal((await limiter.limit("slow", { key: "b" })).ok, true);
  await assert.rejects(limiter.limit("slow", { key: "c" }), { code: "STORE_FULL" });
  assert.equal(store.keyCount, 2);
  // Existing keys still decide, and checks of new keys cost nothing.
  assert.equal((await limiter.limit("slow", { key: "a" })).ok, false);
  assert.equal((await limiter.check("slow", { key: "c" })).ok, true);
});

test("fixed windows without start are never evicted: a fresh state would get new windows", async () => {
  const store = new MemoryStore({ maxKeys: 1 });
  let now = 0;
  const limiter = new RateLimiter(store, { win: { kind: "fixed window", rate: 1, period: SECOND } }, { now: () => now });
  await limiter.limit("win", { key: "a" });
  now = 10 * 60 * SECOND;
  await assert.rejects(limiter.limit("win", { key: "b" }), { code: "STORE_FULL" });
});

test("maxKeys must be a positive integer", () => {
  for (const bad of [0, -1, 2.5, "10", NaN, Infinity, null]) {
    assert.throws(() => new MemoryStore({ maxKeys: bad }), { code: "INVALID_REQUEST", field: "maxKeys" }, String(bad));
  }
});
