// Limits stored in the host, on a MemoryStore (the general road: a limiter that reads stored
// limits never takes the one-crossing slab road) and on a plain store of read and write, whose
// reads are counted: the records come in the same batch as the states.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { MemoryStore, RateLimiter } from "../../pkg/dist/node.js";
import { KEY_LIMIT_SHARD, LIMITS, NOW, NAME_LIMIT_SHARD, storedLimitScenarios } from "../hosts/stored-limits-scenarios.mjs";

describe("MemoryStore", () => storedLimitScenarios(test, () => ({ store: new MemoryStore() })));

/** A store of read, readMany and write over a Map, counting its batches. */
function countingStore() {
  const states = new Map();
  const id = (ref) => JSON.stringify([ref.name, ref.key ?? null, ref.shard]);
  const counts = { readMany: 0, read: 0, refs: [] };
  return {
    counts,
    read(ref) {
      counts.read++;
      return states.get(id(ref)) ?? null;
    },
    readMany(refs) {
      counts.readMany++;
      counts.refs.push(refs.map((ref) => ref.shard));
      return refs.map((ref) => states.get(id(ref)) ?? null);
    },
    write(ref, state) {
      if (state === null) states.delete(id(ref));
      else states.set(id(ref), state);
    },
  };
}

describe("a store of read and write", () => {
  storedLimitScenarios(test, () => ({ store: countingStore() }));

  test("a call reads its state and the records of the key's and the name's limits in one batch", async () => {
    const store = countingStore();
    const limiter = new RateLimiter(store, LIMITS, { now: () => NOW, storedLimits: true });
    await limiter.limit("api", { key: "acme" });
    assert.deepEqual(store.counts.refs, [[0, KEY_LIMIT_SHARD, KEY_LIMIT_SHARD + 1, NAME_LIMIT_SHARD, NAME_LIMIT_SHARD + 1]]);
    assert.equal(store.counts.read, 0);
    // Without a key, the name's records only; without storedLimits, the state alone.
    await limiter.check("api");
    assert.deepEqual(store.counts.refs[1], [0, NAME_LIMIT_SHARD, NAME_LIMIT_SHARD + 1]);
    const plain = new RateLimiter(store, LIMITS, { now: () => NOW });
    await plain.limit("api", { key: "acme" });
    assert.equal(store.counts.readMany, 2);
    assert.equal(store.counts.read, 1);
  });
});

test("a MemoryStore limiter that reads no stored limits ignores them (and keeps its one-crossing road)", async () => {
  const store = new MemoryStore();
  const stored = new RateLimiter(store, LIMITS, { now: () => NOW, storedLimits: true });
  const plain = new RateLimiter(store, LIMITS, { now: () => NOW });
  await stored.setLimit("api", { kind: "token bucket", rate: 1, period: 60_000 }, { key: "x" });
  assert.equal((await plain.limit("api", { key: "x", count: 5 })).ok, true);
  // 5 tokens left in the state, capped at the stored capacity of 1.
  assert.deepEqual([(await stored.limit("api", { key: "x" })).ok, (await stored.limit("api", { key: "x" })).ok], [true, false]);
  assert.throws(() => new RateLimiter(store, LIMITS, { storedLimits: "yes" }), { code: "INVALID_ARGUMENT" });
});
