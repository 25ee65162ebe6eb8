// onDecision (issue 33 item 4): one event per decided call — allowed, refused, or error — with the
// time the store took, the failure policy that answered, the refusal cache, the batch a coalescing
// store ran the call in, and a limitAll's requests each. A hook that throws never breaks a call; a
// call that fails on bad input is not a decision and is not reported.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { MemoryStore, RateLimiter, isRateLimitError } from "../../pkg/dist/node.js";
import { switchableStore, transactionalStore, gate } from "../outage/stores.mjs";

const NOW = 1_700_000_000_000;
const clock = { now: () => NOW };
const API = { kind: "token bucket", rate: 2, period: 60_000 };

/** A limiter over `store` whose events are collected in `events`. */
function watched(store, limits, options = {}) {
  const events = [];
  const limiter = new RateLimiter(store, limits, { ...clock, ...options, onDecision: (event) => events.push(event) });
  return { limiter, events };
}

describe("onDecision", () => {
  test("limit and check report allowed and refused with key, retryAfter, write, batchSize 1 and the store's time", async () => {
    const { limiter, events } = watched(new MemoryStore(), { api: API });
    await limiter.limit("api", { key: "u1" });
    await limiter.limit("api", { key: "u1" });
    const refused = await limiter.limit("api", { key: "u1" });
    await limiter.check("api", { key: "u1" });
    await limiter.check("api");
    assert.equal(refused.ok, false);
    assert.deepEqual(
      events.map(({ storeMs, ...rest }) => rest),
      [
        { name: "api", key: "u1", outcome: "allowed", batchSize: 1, write: true },
        { name: "api", key: "u1", outcome: "allowed", batchSize: 1, write: true },
        { name: "api", key: "u1", outcome: "refused", retryAfter: 30_000, batchSize: 1, write: true },
        { name: "api", key: "u1", outcome: "refused", retryAfter: 30_000, batchSize: 1, write: false },
        { name: "api", outcome: "allowed", batchSize: 1, write: false },
      ],
    );
    for (const { storeMs } of events) assert.ok(storeMs >= 0 && storeMs < 1_000, `storeMs ${storeMs}`);
  });

  test("storeMs is the time the store took to answer", async () => {
    const store = switchableStore();
    const read = store.read;
    store.read = (ref) => new Promise((resolve) => setTimeout(() => resolve(read(ref)), 60));
    const { limiter, events } = watched(store, { api: API });
    await limiter.limit("api", { key: "slow" });
    assert.equal(events.length, 1);
    assert.ok(events[0].storeMs >= 55 && events[0].storeMs < 1_000, `storeMs ${events[0].storeMs}`);
  });

  test("throws: true still reports the refusal, before the caller's catch", async () => {
    const { limiter, events } = watched(new MemoryStore(), { api: { ...API, capacity: 1 } });
    await limiter.limit("api", { throws: true });
    const error = await limiter.limit("api", { throws: true }).catch((thrown) => thrown);
    assert.ok(isRateLimitError(error));
    assert.deepEqual(
      events.map((event) => event.outcome),
      ["allowed", "refused"],
    );
  });

  test("a store failure is an error under closed, and degraded with who answered under open and the memory fallback", async () => {
    const store = switchableStore();
    store.mode = "down";
    const closed = watched(store, { api: API });
    const open = watched(store, { api: { ...API, onStoreError: "open" } });
    const memory = watched(store, { api: API }, { onStoreError: { fallback: "memory" } });
    const error = await closed.limiter.limit("api", { key: "k" }).catch((thrown) => thrown);
    assert.equal(error.code, "ECONNREFUSED");
    await open.limiter.limit("api", { key: "k" });
    await memory.limiter.check("api", { key: "k" });
    assert.equal(closed.events.length, 1);
    assert.equal(closed.events[0].outcome, "error");
    assert.equal(closed.events[0].error, error);
    const { storeMs: _open, ...openEvent } = open.events[0];
    assert.deepEqual(openEvent, { name: "api", key: "k", outcome: "allowed", degraded: "store-error", fallback: "open", batchSize: 1, write: true });
    const { storeMs: _memory, ...memoryEvent } = memory.events[0];
    assert.deepEqual(memoryEvent, { name: "api", key: "k", outcome: "allowed", degraded: "store-error", fallback: "memory", batchSize: 1, write: false });
    assert.equal(memory.events.length, 1, "the fallback's own decision is not reported again");
  });

  test("a refusal repeated by the refusal cache is reported fromCache with storeMs 0", async () => {
    const { limiter, events } = watched(new MemoryStore(), { api: { ...API, capacity: 1 } }, { refusalCache: true });
    await limiter.limit("api", { key: "k" });
    await limiter.limit("api", { key: "k" });
    await limiter.limit("api", { key: "k" });
    assert.deepEqual(
      events.map((event) => [event.outcome, event.fromCache ?? false]),
      [
        ["allowed", false],
        ["refused", false],
        ["refused", true],
      ],
    );
    assert.equal(events[2].storeMs, 0);
  });

  test("limitAll reports one event per request, each with the batch's outcome and its size", async () => {
    const { limiter, events } = watched(new MemoryStore(), { a: API, b: { ...API, capacity: 1 } });
    await limiter.limitAll([{ name: "a", key: "x" }, { name: "b" }]);
    await limiter.limitAll([{ name: "a", key: "x" }, { name: "b" }]);
    assert.deepEqual(
      events.map((event) => [event.name, event.key, event.outcome, event.batchSize, event.write]),
      [
        ["a", "x", "allowed", 2, true],
        ["b", undefined, "allowed", 2, true],
        ["a", "x", "refused", 2, true],
        ["b", undefined, "refused", 2, true],
      ],
    );
  });

  test("calls coalesced on a transactional store report the batch they ran in", async () => {
    const store = transactionalStore();
    const held = gate();
    store.holdReads = held.promise;
    const { limiter, events } = watched(store, { api: { ...API, capacity: 10 } });
    // The first call takes the key's turn; the next three wait and run as one batch.
    const calls = [0, 1, 2, 3].map(() => limiter.limit("api", { key: "k" }));
    held.open();
    store.holdReads = undefined;
    await Promise.all(calls);
    assert.deepEqual(
      events.map((event) => event.batchSize).sort(),
      [1, 3, 3, 3],
    );
  });

  test("a hook that throws never breaks a call, and is reported once as a warning; bad input is not reported", async () => {
    const warnings = [];
    const onWarning = (warning) => warnings.push(warning);
    process.on("warning", onWarning);
    const limiter = new RateLimiter(new MemoryStore(), { api: API }, { ...clock, onDecision: () => { throw new Error("broken hook"); } });
    assert.equal((await limiter.limit("api")).ok, true);
    assert.equal((await limiter.check("api")).ok, true);
    await new Promise((resolve) => setImmediate(resolve));
    process.off("warning", onWarning);
    assert.equal(warnings.length, 1, "reported once");
    assert.equal(warnings[0].name, "RateboundWarning");
    assert.match(warnings[0].message, /onDecision hook threw \(broken hook\)/);
    const asyncHook = new RateLimiter(new MemoryStore(), { api: API }, { ...clock, onDecision: async () => { throw new Error("broken async hook"); } });
    assert.equal((await asyncHook.limit("api")).ok, true);
    const events = [];
    const counted = new RateLimiter(new MemoryStore(), { api: API }, { ...clock, onDecision: (event) => events.push(event) });
    await assert.rejects(counted.limit("api", { count: -1 }), { code: "INVALID_REQUEST" });
    await assert.rejects(counted.limit("nope"), { code: "UNKNOWN_LIMIT" });
    assert.equal(events.length, 0);
  });

  test("onDecision must be a function", () => {
    assert.throws(() => new RateLimiter(new MemoryStore(), {}, { onDecision: "log" }), { code: "INVALID_ARGUMENT", field: "onDecision" });
  });
});
