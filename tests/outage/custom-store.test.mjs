// onStoreError and timeout on custom stores: one that throws, one that never answers, and a
// transactional one whose body can be held mid-call. Each policy for limit, check, limitAll and
// checkAll; bad input and corrupt state still throw under "open"; the fallback admits exactly
// the limit's bound over an outage (and "open" shows what an unbounded policy would admit); a
// timed-out transaction commits nothing, even when its body finishes later.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { MemoryStore, RateLimiter, isDegraded, isRateLimitError } from "../../pkg/dist/node.js";
import { eventually, gate, switchableStore, transactionalStore } from "./stores.mjs";

const NOW = 1_700_000_000_000;
const clock = { now: () => NOW };
const KINDS = {
  "token bucket": { kind: "token bucket", rate: 5, period: 60_000 },
  "fixed window": { kind: "fixed window", rate: 5, period: 60_000, start: 0 },
};
const FALLBACK = { fallback: "memory" };
const CALLS = {
  limit: (limiter, name, options) => limiter.limit(name, options),
  check: (limiter, name, options) => limiter.check(name, options),
  limitAll: (limiter, name, options) => limiter.limitAll([{ name, ...options }]),
  checkAll: (limiter, name, options) => limiter.checkAll([{ name, ...options }]),
};
const codeOf = (promise) => promise.then(
  (result) => assert.fail(`expected a rejection, got ${JSON.stringify(result)}`),
  (error) => error.code,
);

describe("a store that throws", () => {
  for (const [call, run] of Object.entries(CALLS)) {
    test(`${call}: "closed" (the default) rejects with the store's own error`, async () => {
      const store = switchableStore();
      store.mode = "down";
      const limiter = new RateLimiter(store, { api: KINDS["token bucket"] }, clock);
      assert.equal(await codeOf(run(limiter, "api", { key: "a" })), "ECONNREFUSED");
      const explicit = new RateLimiter(store, { api: { ...KINDS["token bucket"], onStoreError: "closed" } }, { ...clock, onStoreError: "open" });
      assert.equal(await codeOf(run(explicit, "api", { key: "a" })), "ECONNREFUSED", "a limit's own policy wins over the limiter's");
    });

    test(`${call}: "open" admits with degraded "store-error" and the store's error as cause`, async () => {
      const store = switchableStore();
      store.mode = "down";
      const limiter = new RateLimiter(store, { api: KINDS["token bucket"] }, { ...clock, onStoreError: "open" });
      const result = await run(limiter, "api", { key: "a", count: 5 });
      assert.equal(result.ok, true);
      assert.equal(result.degraded, "store-error");
      assert.equal(result.cause.code, "ECONNREFUSED");
      assert.equal("retryAfter" in result, false);
      assert.ok(isDegraded(result));
    });
  }

  for (const [kind, config] of Object.entries(KINDS)) {
    test(`${kind}: over an outage of 40 calls the memory fallback admits exactly the limit's bound (5), while "open" admits all 40`, async () => {
      const store = switchableStore();
      store.mode = "down";
      const limits = { api: { ...config, onStoreError: FALLBACK }, loose: { ...config, onStoreError: "open" } };
      const limiter = new RateLimiter(store, limits, clock);
      const admitted = { api: 0, loose: 0 };
      for (let i = 0; i < 40; i++) {
        for (const name of ["api", "loose"]) {
          const result = await limiter.limit(name, { key: "ip-1" });
          assert.equal(result.degraded, "store-error");
          if (result.ok) admitted[name]++;
          else assert.ok(result.retryAfter > 0, "a fallback refusal says when to retry");
        }
      }
      assert.deepEqual(admitted, { api: 5, loose: 40 });
      assert.equal((await limiter.check("api", { key: "ip-1" })).ok, false, "check reads the fallback's state");
      assert.equal((await limiter.limitAll([{ name: "api", key: "ip-1" }])).ok, false, "limitAll decides on the same fallback state");
      assert.equal((await limiter.limit("api", { key: "ip-2" })).ok, true, "another key has its own bound");
      assert.equal(store.writes, 0, "nothing reached the store's write");
    });
  }

  test("the fallback refuses with throws: true as any refusal does (a RateLimitError)", async () => {
    const store = switchableStore();
    store.mode = "down";
    const limiter = new RateLimiter(store, { api: { ...KINDS["token bucket"], onStoreError: FALLBACK } }, clock);
    await limiter.limit("api", { count: 5 });
    const error = await limiter.limit("api", { throws: true }).catch((caught) => caught);
    assert.ok(isRateLimitError(error), String(error));
  });

  test("when the store answers again, the next call goes to it: its state changes and nothing is degraded", async () => {
    const store = switchableStore();
    const limiter = new RateLimiter(store, { api: KINDS["token bucket"] }, { ...clock, onStoreError: FALLBACK });
    assert.deepEqual(await limiter.limit("api", { key: "a" }), { ok: true });
    assert.equal(store.get("api", "a").value, 4);
    store.mode = "down";
    for (let i = 0; i < 3; i++) assert.equal((await limiter.limit("api", { key: "a" })).degraded, "store-error");
    store.mode = "up";
    assert.deepEqual(await limiter.limit("api", { key: "a" }), { ok: true });
    assert.equal(store.get("api", "a").value, 3, "the store's state moved on from where it was before the outage");
    assert.deepEqual(await limiter.limitAll([{ name: "api", key: "a", count: 3 }]), { ok: true });
    assert.deepEqual(await limiter.limit("api", { key: "a" }), { ok: false, retryAfter: 12_000 });
  });

  test("limitAll takes the strictest policy of its limits: closed, then fallback, then open", async () => {
    const store = switchableStore();
    store.mode = "down";
    const base = KINDS["token bucket"];
    const limits = { open: { ...base, onStoreError: "open" }, fallback: { ...base, onStoreError: FALLBACK }, closed: base };
    const limiter = new RateLimiter(store, limits, clock);
    assert.equal(await codeOf(limiter.limitAll([{ name: "open" }, { name: "closed" }])), "ECONNREFUSED");
    assert.equal(await codeOf(limiter.checkAll([{ name: "fallback" }, { name: "closed" }])), "ECONNREFUSED");
    const mixed = await limiter.limitAll([{ name: "open", count: 5 }, { name: "fallback", count: 5 }]);
    assert.equal(mixed.ok, true);
    assert.equal(mixed.degraded, "store-error");
    const again = await limiter.limitAll([{ name: "open" }, { name: "fallback" }]);
    assert.equal(again.ok, false, "decided by the fallback, not admitted blindly");
    assert.equal((await limiter.limitAll([{ name: "open", count: 5 }])).ok, true, "open alone admits");
  });

  test("getValue and reset fail closed whatever the policy", async () => {
    const store = switchableStore();
    store.mode = "down";
    for (const onStoreError of ["open", FALLBACK]) {
      const limiter = new RateLimiter(store, { api: KINDS["token bucket"] }, { ...clock, onStoreError });
      assert.equal(await codeOf(limiter.getValue("api", { key: "a" })), "ECONNREFUSED");
      assert.equal(await codeOf(limiter.reset("api", { key: "a" })), "ECONNREFUSED");
    }
  });

  test("bad input throws under open and fallback, with the store down or up", async () => {
    for (const onStoreError of ["open", FALLBACK]) {
      for (const mode of ["down", "up"]) {
        const store = switchableStore();
        store.mode = mode;
        const limiter = new RateLimiter(store, { api: KINDS["token bucket"] }, { ...clock, onStoreError });
        assert.equal(await codeOf(limiter.limit("api", { count: -1 })), "INVALID_REQUEST");
        assert.equal(await codeOf(limiter.limit("nope")), "UNKNOWN_LIMIT");
        assert.equal(await codeOf(limiter.check("api", { count: 6 })), "COUNT_EXCEEDS_MAX");
        assert.equal(await codeOf(limiter.limit("x", { config: { kind: "token bucket", rate: -1, period: 1 } })), "INVALID_CONFIG");
        assert.equal(await codeOf(limiter.limitAll([{ name: "api", key: 7 }])), "INVALID_REQUEST");
        assert.equal(await codeOf(limiter.limit("api", { bogus: 1 })), "INVALID_REQUEST");
        const error = await limiter.limit(42).catch((caught) => caught);
        assert.ok(error instanceof Error && typeof error.code === "string", String(error));
      }
      const store = switchableStore();
      const limiter = new RateLimiter(store, { api: KINDS["token bucket"] }, { ...clock, onStoreError });
      assert.equal(await codeOf(limiter.limit("api", { count: 1e308, reserve: true })), "WAIT_UNBOUNDED");
    }
  });

  test("a corrupt stored state throws CORRUPT_STATE under open and fallback and stays as it was", async () => {
    for (const onStoreError of ["open", FALLBACK]) {
      const store = switchableStore();
      store.set("api", "a", { value: "lots", ts: 1 });
      const limiter = new RateLimiter(store, { api: KINDS["token bucket"] }, { ...clock, onStoreError });
      for (const run of Object.values(CALLS)) assert.equal(await codeOf(run(limiter, "api", { key: "a" })), "CORRUPT_STATE");
      assert.deepEqual(store.get("api", "a"), { value: "lots", ts: 1 });
      // An adapter that finds a corrupt row itself reports the same code: still not a store error.
      const adapter = { read: () => Promise.reject(Object.assign(new Error("bad row"), { code: "CORRUPT_STATE" })), write() {} };
      assert.equal(await codeOf(new RateLimiter(adapter, { api: KINDS["token bucket"] }, { onStoreError }).limit("api")), "CORRUPT_STATE");
    }
  });

  test("a full fallback fails closed with STORE_FULL, its cause the store's error", async () => {
    const store = switchableStore();
    store.mode = "down";
    const limiter = new RateLimiter(store, { api: KINDS["token bucket"] }, { ...clock, onStoreError: { fallback: "memory", maxKeys: 2 } });
    assert.equal((await limiter.limit("api", { key: "a" })).ok, true);
    assert.equal((await limiter.limit("api", { key: "b" })).ok, true);
    const error = await limiter.limit("api", { key: "c" }).catch((caught) => caught);
    assert.equal(error.code, "STORE_FULL");
    assert.equal(error.cause.code, "ECONNREFUSED");
  });
});

describe("a store that never answers, with a timeout", () => {
  const TIMEOUT = 60;
  for (const [call, run] of Object.entries(CALLS)) {
    test(`${call}: closed rejects STORE_TIMEOUT after the timeout; open and fallback resolve degraded "store-timeout"`, async () => {
      const store = switchableStore();
      store.mode = "hang";
      const limits = { api: KINDS["token bucket"] };
      const started = Date.now();
      const error = await run(new RateLimiter(store, limits, { ...clock, timeout: TIMEOUT }), "api", {}).catch((caught) => caught);
      const elapsed = Date.now() - started;
      assert.equal(error.code, "STORE_TIMEOUT");
      assert.ok(elapsed >= TIMEOUT - 5 && elapsed < TIMEOUT + 1_000, `rejected after ${elapsed} ms`);
      for (const onStoreError of ["open", FALLBACK]) {
        const result = await run(new RateLimiter(store, limits, { ...clock, timeout: TIMEOUT, onStoreError }), "api", { count: 2 });
        assert.equal(result.ok, true);
        assert.equal(result.degraded, "store-timeout");
        assert.equal(result.cause.code, "STORE_TIMEOUT");
      }
    });
  }

  test("without a timeout a hanging store hangs the call (the timeout is what ends it)", async () => {
    const store = switchableStore();
    store.mode = "hang";
    const pending = new RateLimiter(store, { api: KINDS["token bucket"] }, { onStoreError: "open" }).limit("api");
    const winner = await Promise.race([pending, new Promise((resolve) => setTimeout(() => resolve("still pending"), 200))]);
    assert.equal(winner, "still pending");
  });

  test("getValue and reset reject STORE_TIMEOUT whatever the policy", async () => {
    const store = switchableStore();
    store.mode = "hang";
    const limiter = new RateLimiter(store, { api: KINDS["token bucket"] }, { timeout: TIMEOUT, onStoreError: "open" });
    assert.equal(await codeOf(limiter.getValue("api")), "STORE_TIMEOUT");
    assert.equal(await codeOf(limiter.reset("api")), "STORE_TIMEOUT");
  });

  test("a fast store is never degraded by the timeout, and the limiter's options still refuse unknown fields", async () => {
    const limiter = new RateLimiter(switchableStore(), { api: KINDS["token bucket"] }, { ...clock, timeout: 1_000, onStoreError: "open" });
    for (let i = 0; i < 5; i++) assert.deepEqual(await limiter.limit("api"), { ok: true });
    assert.deepEqual(await limiter.limit("api"), { ok: false, retryAfter: 12_000 });
    assert.throws(() => new RateLimiter(switchableStore(), {}, { timeout: 5, nope: 1 }), { code: "INVALID_ARGUMENT" });
  });
});

describe("a transactional store", () => {
  const limits = { api: KINDS["token bucket"] };

  test("a body still reading when the call times out is refused its write, so nothing commits (and without the timeout the same call commits)", async () => {
    for (const onStoreError of ["closed", "open", FALLBACK]) {
      const store = transactionalStore();
      const held = gate();
      store.holdReads = held.promise;
      const limiter = new RateLimiter(store, limits, { ...clock, timeout: 50, onStoreError });
      const answer = await limiter.limit("api", { key: "a" }).then((result) => result, (error) => error);
      if (onStoreError === "closed") assert.equal(answer.code, "STORE_TIMEOUT");
      else assert.equal(answer.degraded, "store-timeout");
      held.open();
      await eventually(() => store.bodies.length === 1);
      assert.equal(store.bodies[0].ok, false);
      assert.equal(store.bodies[0].error.code, "STORE_TIMEOUT", "the body's late write was refused");
      assert.equal(store.writesSeen, 0, "the write never reached the host");
      assert.equal(store.get("api", "a"), null, "nothing committed");
    }
    const control = transactionalStore();
    const held = gate();
    control.holdReads = held.promise;
    const pending = new RateLimiter(control, limits, clock).limit("api", { key: "a" });
    setTimeout(held.open, 100);
    assert.deepEqual(await pending, { ok: true });
    assert.equal(control.get("api", "a").value, 4, "the same late call commits when nothing stops it");
  });

  test("a write already in flight when the call times out: the body still ends refused, so the host commits nothing", async () => {
    const store = transactionalStore();
    const held = gate();
    store.holdWrites = held.promise;
    const limiter = new RateLimiter(store, limits, { ...clock, timeout: 50, onStoreError: "open" });
    assert.equal((await limiter.limit("api", { key: "a" })).degraded, "store-timeout");
    assert.equal(store.writesSeen, 1, "the write reached the host before the timeout");
    held.open();
    await eventually(() => store.bodies.length === 1);
    assert.equal(store.bodies[0].error?.code, "STORE_TIMEOUT");
    assert.equal(store.get("api", "a"), null);
  });

  test("a commit that fails is a store error: open admits degraded, closed rejects with it", async () => {
    const store = transactionalStore();
    store.commitFails = true;
    const open = await new RateLimiter(store, limits, { ...clock, onStoreError: "open" }).limit("api");
    assert.equal(open.degraded, "store-error");
    assert.equal(open.cause.code, "ECONNRESET");
    assert.equal(await codeOf(new RateLimiter(store, limits, clock).limit("api")), "ECONNRESET");
  });

  test("the core's errors inside the body are not store errors: bad input and corrupt state throw under open", async () => {
    const store = transactionalStore();
    store.committed.set(JSON.stringify(["api", "a", 0]), { value: 1, ts: "yesterday" });
    const limiter = new RateLimiter(store, limits, { ...clock, onStoreError: "open" });
    assert.equal(await codeOf(limiter.limit("api", { key: "a" })), "CORRUPT_STATE");
    assert.equal(await codeOf(limiter.limitAll([{ name: "api", count: -2 }])), "INVALID_REQUEST");
  });
});

describe("policies are checked once, where they are given", () => {
  const store = new MemoryStore();
  const base = KINDS["token bucket"];

  test("a named limit's bad policy is INVALID_CONFIG naming the limit and the field", () => {
    assert.throws(() => new RateLimiter(store, { search: { ...base, onStoreError: "opne" } }), {
      code: "INVALID_CONFIG",
      field: "onStoreError",
      message: 'Rate limit "search": onStoreError must be "closed", "open" or { fallback: "memory", maxKeys?: number } (got "opne")',
    });
    assert.throws(() => new RateLimiter(store, { search: { ...base, onStoreError: { fallback: "redis" } } }), { code: "INVALID_CONFIG", field: "onStoreError.fallback" });
    assert.throws(() => new RateLimiter(store, { search: { ...base, onStoreError: { fallback: "memory", maxKeys: 1.5 } } }), { code: "INVALID_CONFIG", field: "onStoreError.maxKeys" });
    assert.throws(() => new RateLimiter(store, { search: { ...base, onStoreError: { fallback: "memory", ttl: 1 } } }), { code: "INVALID_CONFIG", field: "onStoreError.ttl" });
  });

  test("an inline config's bad policy rejects the call with INVALID_CONFIG; a good one is used", async () => {
    const down = switchableStore();
    down.mode = "down";
    const limiter = new RateLimiter(down, {});
    assert.equal(await codeOf(limiter.limit("inline", { config: { ...base, onStoreError: 1 } })), "INVALID_CONFIG");
    const result = await limiter.limit("inline", { config: { ...base, onStoreError: "open" } });
    assert.equal(result.degraded, "store-error");
    const batch = await limiter.checkAll([{ name: "inline", config: { ...base, onStoreError: FALLBACK } }]);
    assert.equal(batch.degraded, "store-error");
  });

  test("the limiter's own onStoreError and timeout are INVALID_ARGUMENT when wrong", () => {
    assert.throws(() => new RateLimiter(store, {}, { onStoreError: "sometimes" }), { code: "INVALID_ARGUMENT", name: "TypeError" });
    for (const timeout of [0, -1, NaN, Infinity, 2 ** 31, "100"]) {
      assert.throws(() => new RateLimiter(store, {}, { timeout }), { code: "INVALID_ARGUMENT", field: "timeout" }, String(timeout));
    }
  });

  test("inherited fields are never read: a polluted Object.prototype.onStoreError changes nothing", async () => {
    Object.prototype.onStoreError = "open";
    try {
      const down = switchableStore();
      down.mode = "down";
      const limiter = new RateLimiter(down, { api: { kind: "token bucket", rate: 1, period: 1000 } }, {});
      assert.equal(await codeOf(limiter.limit("api")), "ECONNREFUSED");
    } finally {
      delete Object.prototype.onStoreError;
    }
  });
});
