// Outages of Deno KV (issue 24, "Also"): the real engine through @deno/kv, under a handle whose
// reads or commits throw or hang, and a real handle already closed. Under "closed" (the default)
// a call rejects with KV_FAILED (a KvStoreError whose cause is the client's error) and nothing is
// written; "open" admits degraded; the memory fallback admits exactly the bound; with a timeout a
// hang is STORE_TIMEOUT (or degraded "store-timeout"), and once Deno KV answers again the next call
// is its own. Grants, getValue and reset fail closed whatever the policy. The app's own
// kvTransaction fails with the same code and commits none of its writes.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { openKv } from "@deno/kv";
import { RateLimiter, StoreTimeoutError } from "../../pkg/dist/node.js";
import { KvStoreError, kvStore, kvTransaction } from "../../pkg/dist/deno-kv.js";
import { scratch } from "../hosts/workerd.mjs";

const NOW = 1_700_000_000_000;
const clock = { now: () => NOW };
const API = { kind: "token bucket", rate: 5, period: 60_000 };
const FALLBACK = { fallback: "memory" };

/**
 * A handle on a real Deno KV database whose `get` and `commit` can be made to throw (as a lost
 * connection does) or hang; it counts what reached the database.
 */
function faultyKv(kv) {
  const faults = { get: "up", commit: "up", gets: 0, commits: 0 };
  const fail = (mode) => (mode === "throws" ? Promise.reject(new Error("error sending request: connection reset by peer")) : new Promise(() => {}));
  return {
    faults,
    kv: {
      get(key, options) {
        faults.gets++;
        return faults.get === "up" ? kv.get(key, options) : fail(faults.get);
      },
      atomic() {
        const atomic = kv.atomic();
        const commit = atomic.commit.bind(atomic);
        atomic.commit = () => {
          faults.commits++;
          return faults.commit === "up" ? commit() : fail(faults.commit);
        };
        return atomic;
      },
    },
  };
}

const codeOf = (promise) =>
  promise.then(
    (result) => assert.fail(`expected a rejection, got ${JSON.stringify(result)}`),
    (error) => error,
  );

describe("Deno KV (the real engine through @deno/kv) when it fails", () => {
  let work;
  let kv;
  let closed;
  before(async () => {
    work = scratch("outage-kv");
    kv = await openKv(join(work.dir, "kv.sqlite"));
    closed = await openKv(join(work.dir, "kv.sqlite"));
    closed.close();
  });
  after(() => {
    kv?.close();
    work?.remove();
  });

  let keys = 0;
  /** A fresh key with 2 of its 5 tokens taken through a healthy store, and what to check it by. */
  async function prepared() {
    const key = `k${++keys}`;
    await new RateLimiter(kvStore(kv), { api: API }, clock).limit("api", { key, count: 2 });
    const stored = () => kvTransaction(kv, (tx) => tx.read({ name: "api", key, shard: 0 }));
    assert.deepEqual(await stored(), { value: 3, ts: NOW });
    return { key, stored };
  }

  const FAILURES = {
    "reads throw": () => {
      const faulty = faultyKv(kv);
      faulty.faults.get = "throws";
      return faulty.kv;
    },
    "commits throw": () => {
      const faulty = faultyKv(kv);
      faulty.faults.commit = "throws";
      return faulty.kv;
    },
    "the handle is closed": () => closed,
  };

  for (const [failure, broken] of Object.entries(FAILURES)) {
    describe(failure, () => {
      test('"closed" (the default): limit, limitAll and a grant reject with KV_FAILED, its cause the client\'s error, and nothing is written', async () => {
        const { key, stored } = await prepared();
        const limiter = new RateLimiter(kvStore(broken()), { api: API }, clock);
        for (const call of [
          () => limiter.limit("api", { key }),
          () => limiter.limitAll([{ name: "api", key }]),
          () => limiter.limit("api", { key, grant: true }),
        ]) {
          const error = await codeOf(call());
          assert.ok(error instanceof KvStoreError, String(error));
          assert.equal(error.code, "KV_FAILED");
          assert.ok(error.cause instanceof Error);
        }
        assert.deepEqual(await stored(), { value: 3, ts: NOW });
      });

      test('"open" admits limit and limitAll degraded, with the KV_FAILED as cause; getValue and reset still fail closed', async () => {
        const { key, stored } = await prepared();
        const limiter = new RateLimiter(kvStore(broken()), { api: API }, { ...clock, onStoreError: "open" });
        for (const result of [await limiter.limit("api", { key }), await limiter.limitAll([{ name: "api", key }])]) {
          assert.deepEqual([result.ok, result.degraded, result.cause.code], [true, "store-error", "KV_FAILED"]);
        }
        // getValue only reads, reset only writes (it reads nothing): each fails where its half does.
        if (failure !== "commits throw") assert.equal((await codeOf(limiter.getValue("api", { key }))).code, "KV_FAILED");
        if (failure !== "reads throw") assert.equal((await codeOf(limiter.reset("api", { key }))).code, "KV_FAILED");
        assert.deepEqual(await stored(), { value: 3, ts: NOW });
      });

      test("the memory fallback admits exactly the limit's bound over 20 calls, and nothing is written", async () => {
        const { key, stored } = await prepared();
        const limiter = new RateLimiter(kvStore(broken()), { api: { ...API, onStoreError: FALLBACK } }, clock);
        const results = [];
        for (let index = 0; index < 20; index++) results.push(await limiter.limit("api", { key }));
        assert.ok(results.every((result) => result.degraded === "store-error"));
        assert.equal(results.filter((result) => result.ok).length, 5);
        assert.deepEqual(await stored(), { value: 3, ts: NOW });
      });
    });
  }

  test("a commit that throws leaves check answering from its reads (a check commits nothing)", async () => {
    const { key } = await prepared();
    const faulty = faultyKv(kv);
    faulty.faults.commit = "throws";
    assert.deepEqual(await new RateLimiter(kvStore(faulty.kv), { api: API }, clock).check("api", { key, count: 3 }), { ok: true });
    assert.equal(faulty.faults.commits, 0);
  });

  for (const hang of ["get", "commit"]) {
    test(`a ${hang} that hangs: with a timeout, closed rejects STORE_TIMEOUT, open and the fallback answer degraded "store-timeout", nothing is written, and once Deno KV answers the next call is its own`, async () => {
      const { key, stored } = await prepared();
      const faulty = faultyKv(kv);
      faulty.faults[hang] = "hangs";
      const store = kvStore(faulty.kv);
      const limiter = new RateLimiter(store, { api: API, loose: { ...API, onStoreError: "open" }, guarded: { ...API, onStoreError: FALLBACK } }, { ...clock, timeout: 60 });
      const error = await codeOf(limiter.limit("api", { key }));
      assert.ok(error instanceof StoreTimeoutError);
      assert.equal(error.code, "STORE_TIMEOUT");
      const loose = await limiter.limit("loose", { key });
      assert.deepEqual([loose.ok, loose.degraded], [true, "store-timeout"]);
      const guarded = await limiter.limit("guarded", { key });
      assert.deepEqual([guarded.ok, guarded.degraded], [true, "store-timeout"]);
      assert.equal((await codeOf(limiter.limit("api", { key, grant: true }))).code, "STORE_TIMEOUT");
      assert.deepEqual(await stored(), { value: 3, ts: NOW });
      faulty.faults[hang] = "up";
      assert.deepEqual(await limiter.limit("api", { key }), { ok: true }, "the hung calls no longer hold the key");
      assert.deepEqual(await stored(), { value: 2, ts: NOW });
    });
  }

  test("the app's own kvTransaction whose commit throws rejects with KV_FAILED and commits none of its writes", async () => {
    const { key, stored } = await prepared();
    const faulty = faultyKv(kv);
    faulty.faults.commit = "throws";
    const error = await codeOf(
      kvTransaction(faulty.kv, async (tx) => {
        await new RateLimiter(tx, { api: API }, clock).limit("api", { key });
        tx.set(["posts", key], "never");
      }),
    );
    assert.equal(error.code, "KV_FAILED");
    assert.equal(faulty.faults.commits, 1, "not retried: a failure is not a lost race");
    assert.deepEqual(await stored(), { value: 3, ts: NOW });
    assert.equal((await kv.get(["posts", key])).value, null);
  });
});
