// Concurrency limits with leases on a MemoryStore (tests/concurrency/scenarios.mjs), with a
// hand-moved clock: a MemoryStore decides synchronously, so each take is atomic without a
// transaction; the same traffic through an asynchronous store over the same MemoryStore (reads
// that wait) over-admits.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { MemoryStore, RateLimiter } from "../../pkg/dist/node.js";
import { manualClock } from "./helpers.mjs";
import { SCENARIOS, checkAndReset, overAdmitsWithoutTransaction } from "../concurrency/scenarios.mjs";
import { bareStore } from "../settle/scenarios.mjs";

describe("concurrency limits on a MemoryStore", () => {
  const harness = () => {
    const store = new MemoryStore();
    const clock = manualClock(1_700_000_000_000);
    const options = { now: clock.read };
    return { clock, connect: (limits) => new RateLimiter(store, limits, options), bare: (limits) => new RateLimiter(bareStore(store), limits, options) };
  };
  for (const [name, scenario] of Object.entries({ ...SCENARIOS, checkAndReset })) test(name, () => scenario(harness()));
  test("the same concurrent calls through a store whose reads wait, without a transaction, over-admit (so the test above can fail)", () =>
    overAdmitsWithoutTransaction(harness()));
});

test("what does not take a concurrency limit says so with a coded error: limitAll, acquireAll", async () => {
  const limiter = new RateLimiter(new MemoryStore(), { jobs: { kind: "concurrency", max: 2, lease: 1_000 } });
  for (const [what, call] of [
    ["limitAll", () => limiter.limitAll([{ name: "jobs" }])],
    ["acquireAll", () => limiter.acquireAll([{ name: "jobs" }])],
  ]) {
    await assert.rejects(call(), (error) => error.code === "INVALID_ARGUMENT" && /concurrency limit/.test(error.message), what);
  }
  assert.deepEqual(limiter.limitNames, ["jobs"]);
});
