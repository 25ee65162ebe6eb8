// Coalescing under failure (issue 22 item 3): on a store with transaction() and no decide(), calls
// on one key take turns. A turn that hangs frees its key when its timeout ends it; a call waiting
// behind it answers by its own timeout, never reaching the store; each call of a failed batch
// answers by its own policy; bad input never waits for a turn.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { openKv } from "@deno/kv";
import { RateLimiter, StoreTimeoutError } from "../../pkg/dist/node.js";
import { kvStore, kvTransaction } from "../../pkg/dist/deno-kv.js";
import { createTable, sqliteStore } from "../../pkg/dist/sqlite.js";
import Database from "better-sqlite3";
import { scratch } from "../hosts/workerd.mjs";
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

// Issue 28 item 4: a batch took the least time left among its calls, so one limiter's tight timeout
// failed with STORE_TIMEOUT the calls of every limiter coalesced with it on the same store, its
// own timeout or none. Now each call keeps its own: on the real Deno KV engine (through @deno/kv),
// slowed to 100 ms a read.
describe("coalesced calls keep their own limiter's timeout (Deno KV, the real engine through @deno/kv)", () => {
  const READ_MS = 100;
  let work;
  let kv;
  before(async () => {
    work = scratch("coalesce-kv");
    kv = await openKv(join(work.dir, "kv.sqlite"));
  });
  after(() => {
    kv?.close();
    work?.remove();
  });

  /** The same database, each read answered after READ_MS: a slow transaction. */
  const slowKv = () => ({
    get: (key, options) => new Promise((resolve) => setTimeout(resolve, READ_MS)).then(() => kv.get(key, options)),
    atomic: () => kv.atomic(),
  });
  const stored = (key) => kvTransaction(kv, (tx) => tx.read({ name: "api", key, shard: 0 }));

  test("in one batch, a call with no timeout and one with a long one are answered by the store; the call whose tight timeout runs out mid-batch is STORE_TIMEOUT at its own deadline and writes nothing", async () => {
    const store = kvStore(slowKv());
    const lenient = new RateLimiter(store, { api: API }, clock);
    const hasty = new RateLimiter(store, { api: API }, { ...clock, timeout: 150 });
    const patient = new RateLimiter(store, { api: API }, { ...clock, timeout: 5_000 });
    const started = Date.now();
    const first = lenient.limit("api", { key: "mixed" }); // its own turn: the next three wait for it, then go as one batch
    const tight = hasty.limit("api", { key: "mixed" }).then(
      (result) => assert.fail(`expected STORE_TIMEOUT, got ${JSON.stringify(result)}`),
      (error) => [error, Date.now() - started],
    );
    const none = lenient.limit("api", { key: "mixed" });
    const long = patient.limit("api", { key: "mixed" });
    const [error, elapsed] = await tight;
    assert.ok(error instanceof StoreTimeoutError);
    assert.deepEqual([error.code, error.timeoutMs], ["STORE_TIMEOUT", 150], "its own limiter's timeout");
    assert.ok(elapsed >= 145 && elapsed < 150 + READ_MS, `answered at its own deadline (after ${elapsed} ms), while its batch still read`);
    assert.deepEqual(await first, { ok: true });
    assert.deepEqual(await none, { ok: true }, "no timeout: never failed by a batch-mate's");
    assert.deepEqual(await long, { ok: true }, "its own 5 s timeout, not the batch-mate's 150 ms");
    assert.deepEqual(await stored("mixed"), { value: 2, ts: NOW }, "three tokens taken: the timed-out call's charge was rolled back with its batch's first attempt");
  });

  test('under "open", the call whose timeout runs out mid-batch is admitted degraded and charges nothing; its batch-mate with no timeout is answered by the store', async () => {
    const store = kvStore(slowKv());
    const lenient = new RateLimiter(store, { api: API }, clock);
    const hasty = new RateLimiter(store, { api: API }, { ...clock, timeout: 150, onStoreError: "open" });
    const first = lenient.limit("api", { key: "pair" });
    const [tight, none] = await Promise.all([hasty.limit("api", { key: "pair", count: 2 }), lenient.limit("api", { key: "pair" })]);
    assert.deepEqual([tight.ok, tight.degraded, tight.cause.timeoutMs], [true, "store-timeout", 150], "admitted degraded at its own 150 ms");
    assert.deepEqual(await first, { ok: true });
    assert.deepEqual(none, { ok: true });
    assert.deepEqual(await stored("pair"), { value: 3, ts: NOW }, "the degraded call's two tokens were never taken");
  });
});

describe("coalesced calls keep their own limiter's timeout (better-sqlite3)", () => {
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  test("a batch waiting for the connection behind the app's slow transaction: the call with a tight timeout is STORE_TIMEOUT at its own deadline and writes nothing, its batch-mate with none is answered", async () => {
    const db = new Database(":memory:");
    try {
      await createTable(db);
      const store = sqliteStore(db);
      const lenient = new RateLimiter(store, { api: API }, clock);
      const hasty = new RateLimiter(store, { api: API }, { ...clock, timeout: 150 });
      await lenient.limit("api", { key: "warm" });
      // The app's own transactions hold the connection (one at a time): 100 ms, then 200 ms.
      const appFirst = store.transaction(() => sleep(100));
      const started = Date.now();
      const first = lenient.limit("api", { key: "k" }); // waits for the connection, holding k's turn
      await new Promise((resolve) => setImmediate(resolve));
      const appSecond = store.transaction(() => sleep(200));
      const tight = hasty.limit("api", { key: "k" }).then(
        (result) => assert.fail(`expected STORE_TIMEOUT, got ${JSON.stringify(result)}`),
        (error) => [error.code, error.timeoutMs, Date.now() - started],
      );
      const none = lenient.limit("api", { key: "k" }); // one batch with the hasty call, run once k's turn is free
      const [code, timeoutMs, elapsed] = await tight;
      assert.deepEqual([code, timeoutMs], ["STORE_TIMEOUT", 150]);
      assert.ok(elapsed >= 145 && elapsed < 250, `answered at its own deadline (after ${elapsed} ms), while its batch waited`);
      assert.deepEqual(await first, { ok: true });
      assert.deepEqual(await none, { ok: true }, "no timeout: never failed by a batch-mate's");
      await Promise.all([appFirst, appSecond]);
      assert.equal(db.prepare("SELECT value FROM ratebound WHERE name = 'api' AND key = 'k'").get().value, 3, "two tokens taken: the timed-out call wrote nothing");
    } finally {
      db.close();
    }
  });
});
