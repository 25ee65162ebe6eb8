// Coalescing under failure (issue 22 item 3): on a store with transaction() and no decide(), calls
// on one key take turns. A turn that hangs frees its key when its timeout ends it; a call waiting
// behind it answers by its own timeout, never reaching the store; each call of a failed batch
// answers by its own policy; bad input never waits for a turn.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { RateLimiter, StoreTimeoutError } from "../../pkg/dist/node.js";
import { gate, transactionalStore } from "./stores.mjs";

const NOW = 1_700_000_000_000;
const clock = { now: () => NOW };
const API = { kind: "token bucket", rate: 5, period: 60_000 };

/** A transactional store that counts the transactions begun and the most in flight at once. */
function countedStore() {
  const store = transactionalStore();
  const transaction = store.transaction;
  store.begun = 0;
  store.inFlight = 0;
  store.mostInFlight = 0;
  store.transaction = (body) => {
    store.begun++;
    store.mostInFlight = Math.max(store.mostInFlight, ++store.inFlight);
    const done = transaction(body);
    done.then(
      () => store.inFlight--,
      () => store.inFlight--,
    );
    return done;
  };
  return store;
}

const codeOf = (promise) =>
  promise.then(
    (result) => assert.fail(`expected a rejection, got ${JSON.stringify(result)}`),
    (error) => error.code,
  );

describe("coalesced calls when the store fails", () => {
  test("a call waiting behind a hung turn answers STORE_TIMEOUT at its own timeout without reaching the store, and the key is free again once the hung turn times out", async () => {
    const store = countedStore();
    store.holdReads = gate().promise; // never opened: the first transaction hangs for good
    const patient = new RateLimiter(store, { api: API }, { ...clock, timeout: 150 });
    const hasty = new RateLimiter(store, { api: API }, { ...clock, timeout: 30, onStoreError: "open" });
    const first = codeOf(patient.limit("api", { key: "k" }));
    const started = Date.now();
    const waiting = await hasty.limit("api", { key: "k" });
    assert.equal(waiting.degraded, "store-timeout");
    assert.ok(waiting.cause instanceof StoreTimeoutError);
    assert.ok(Date.now() - started < 140, "answered at its own timeout, not the hung turn's");
    assert.equal(store.begun, 1, "the waiting call never began a transaction");
    assert.equal(await first, "STORE_TIMEOUT");
    store.holdReads = undefined;
    assert.deepEqual(await patient.limit("api", { key: "k" }), { ok: true }, "the hung turn no longer holds the key");
    assert.equal(store.get("api", "k").value, 4);
  });

  test("each call of a batch whose commit fails answers by its own policy: closed rejects, open admits degraded, the fallback decides", async () => {
    const store = countedStore();
    const held = gate();
    store.holdReads = held.promise;
    store.commitFails = true;
    const limiter = new RateLimiter(store, {}, clock);
    const call = (onStoreError) => limiter.limit("api", { key: "k", config: onStoreError === undefined ? API : { ...API, onStoreError } });
    const first = codeOf(call(undefined));
    const batch = [codeOf(call(undefined)), call("open"), call({ fallback: "memory" }), codeOf(call("closed"))];
    held.open();
    assert.equal(await first, "ECONNRESET");
    const [closed, open, fallback, explicit] = await Promise.all(batch);
    assert.equal(closed, "ECONNRESET");
    assert.deepEqual([open.ok, open.degraded, open.cause.code], [true, "store-error", "ECONNRESET"]);
    assert.deepEqual([fallback.ok, fallback.degraded], [true, "store-error"]);
    assert.equal(explicit, "ECONNRESET");
    assert.equal(store.begun, 2, "the first call alone, then the four that waited in one transaction");
    assert.equal(store.get("api", "k"), null, "nothing committed");
  });

  test("bad input fails at once, while the key's turn is still held", async () => {
    const store = countedStore();
    const held = gate();
    store.holdReads = held.promise;
    const limiter = new RateLimiter(store, { api: API }, { ...clock, onStoreError: "open" });
    const first = limiter.limit("api", { key: "k" });
    assert.equal(await codeOf(limiter.limit("api", { key: "k", count: 6 })), "COUNT_EXCEEDS_MAX");
    assert.equal(await codeOf(limiter.limit("api", { key: "k", count: -1 })), "INVALID_REQUEST");
    held.open();
    assert.deepEqual(await first, { ok: true });
    assert.equal(store.begun, 1);
  });
});

describe("coalesced calls take turns", () => {
  test("limits, checks, a grant, a settle, a limitAll and a reset on one key never run two transactions at once; another key runs beside them", async () => {
    const store = countedStore();
    const held = gate();
    store.holdReads = held.promise;
    const limiter = new RateLimiter(store, { api: API, other: API }, clock);
    const calls = [
      limiter.limit("api", { key: "k" }),
      limiter.check("api", { key: "k" }),
      limiter.limit("api", { key: "k", grant: true }),
      limiter.limit("api", { key: "k" }),
      limiter.limitAll([{ name: "api", key: "k" }, { name: "other", key: "k" }]),
      limiter.limit("api", { key: "k" }),
    ];
    await new Promise((resolve) => setTimeout(resolve, 10));
    assert.equal(store.begun, 1, "the rest wait for the first turn");
    held.open();
    const [first, checked, granted, fourth, both, sixth] = await Promise.all(calls);
    assert.deepEqual([first, checked, fourth, both, sixth].map((answer) => answer.ok), [true, true, true, true, true]);
    assert.equal(granted.ok, true);
    assert.deepEqual(await granted.grant.cancel(), { refunded: 1, charged: 0, unpaid: 0 });
    await limiter.reset("api", { key: "k" });
    assert.equal(store.mostInFlight, 1);
    // Transactions: the first limit; the check (batched with nothing before the grant); the grant;
    // the fourth limit; the limitAll; the sixth limit; the cancel; the reset.
    assert.equal(store.begun, 8);
    await Promise.all([limiter.limit("api", { key: "k" }), limiter.limit("other", { key: "k" })]);
    assert.equal(store.mostInFlight, 2, "two keys' turns run at once");
  });

  test("calls that arrive during a turn go together, in arrival order, as one transaction", async () => {
    const store = countedStore();
    const held = gate();
    store.holdReads = held.promise;
    const limiter = new RateLimiter(store, { api: API }, clock);
    const answers = Promise.all(Array.from({ length: 8 }, () => limiter.limit("api", { key: "k" })));
    held.open();
    const seen = await answers;
    assert.deepEqual(
      seen.map((answer) => answer.ok),
      [true, true, true, true, true, false, false, false],
    );
    assert.equal(store.begun, 2);
    assert.equal(store.get("api", "k").value, 0);
  });
});
