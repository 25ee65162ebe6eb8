// refusalCache (issue 22 item 4): once the store refuses a key with retryAfter, the limiter refuses
// the same call (the same count, reserving or not) locally until then, with the wait that remains, and the store
// is not asked (its reads counted). It never admits more: on one instance its answers equal the
// store's, call for call. What it can refuse wrongly is what changed the store without it (another
// instance's reset); a settle or reset through it lifts the block. Bounded, the oldest dropped.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { MemoryStore, RateLimiter, isRateLimitError } from "../../pkg/dist/node.js";
import { KINDS, seeded } from "./helpers.mjs";

const NOW = 1_700_000_000_000;

/** A MemoryStore that counts what reaches it. */
class CountedStore extends MemoryStore {
  reads = 0;
  writes = 0;
  read(ref, info) {
    this.reads++;
    return super.read(ref, info);
  }
  write(ref, state, info) {
    this.writes++;
    return super.write(ref, state, info);
  }
}

/** Two tokens a minute: the third call in an instant waits 30 s. */
const LIMITS = {
  "token bucket": { api: { kind: "token bucket", rate: 2, period: 60_000 } },
  "fixed window": { api: { kind: "fixed window", rate: 2, period: 60_000, start: NOW } },
};

const codeOf = (promise) =>
  promise.then(
    (result) => assert.fail(`expected a rejection, got ${JSON.stringify(result)}`),
    (error) => error.code,
  );

for (const kind of ["token bucket", "fixed window"]) {
  describe(`refusalCache, ${kind}`, () => {
    const setup = (options = {}) => {
      const clock = { now: NOW };
      const store = new CountedStore();
      const limiter = new RateLimiter(store, LIMITS[kind], { now: () => clock.now, refusalCache: true, ...options });
      return { clock, store, limiter };
    };
    const wait = kind === "token bucket" ? 30_000 : 60_000;

    test("a refused key is refused locally, with the wait that remains, until the wait is over; then the store admits", async () => {
      const { clock, store, limiter } = setup();
      await limiter.limit("api", { key: "a", count: 2 });
      assert.deepEqual(await limiter.limit("api", { key: "a" }), { ok: false, retryAfter: wait });
      const reads = store.reads;
      for (const [after, op] of [[1, "limit"], [10_000, "check"], [wait - 1, "limit"]]) {
        clock.now = NOW + after;
        assert.deepEqual(await limiter[op]("api", { key: "a" }), { ok: false, retryAfter: wait - after });
      }
      assert.equal(store.reads, reads, "the store was not asked");
      clock.now = NOW + wait;
      assert.deepEqual(await limiter.limit("api", { key: "a" }), { ok: true });
      assert.equal(store.reads, reads + 1);
    });

    test("another count, reserving after a plain refusal, another key or another limit go to the store", async () => {
      const { store, limiter } = setup();
      await limiter.limit("api", { key: "a", count: 1 });
      assert.equal((await limiter.limit("api", { key: "a", count: 2 })).ok, false);
      const reads = store.reads;
      assert.deepEqual(await limiter.check("api", { key: "a", count: 1 }), { ok: true }, "one token is left");
      assert.equal((await limiter.limit("api", { key: "a", count: 2, reserve: true })).ok, true);
      assert.equal((await limiter.limit("api", { key: "b" })).ok, true);
      const inline = { kind: "token bucket", rate: 9, period: 60_000 };
      await limiter.limit("api", { key: "a", count: 2, config: inline }); // an inline config of the same name is another limit
      assert.equal(store.reads, reads + 4);
    });

    test("throws: true throws a RateLimitError; bad input throws its own error, not a remembered refusal", async () => {
      const { limiter } = setup();
      await limiter.limit("api", { key: "a", count: 2 });
      await limiter.limit("api", { key: "a" });
      const error = await limiter.limit("api", { key: "a", throws: true }).catch((caught) => caught);
      assert.ok(isRateLimitError(error));
      assert.equal(error.data.retryAfter, wait);
      assert.equal(await codeOf(limiter.limit("api", { key: "a", count: 3 })), "COUNT_EXCEEDS_MAX");
      assert.equal(await codeOf(limiter.limit("api", { key: "a", count: Number.NaN })), "INVALID_REQUEST");
    });

    test("a grant call is refused locally too, and a settle through this limiter lifts the block", async () => {
      const { clock, store, limiter } = setup();
      const { grant } = await limiter.limit("api", { key: "a", count: 2, grant: true });
      assert.equal((await limiter.limit("api", { key: "a", grant: true })).ok, false);
      const reads = store.reads;
      clock.now = NOW + 5;
      assert.deepEqual(await limiter.limit("api", { key: "a", grant: true }), { ok: false, retryAfter: wait - 5 });
      assert.equal(store.reads, reads);
      await grant.cancel();
      assert.equal((await limiter.limit("api", { key: "a" })).ok, true, "the refund is seen: the store is asked again");
    });

    test("figures asked: the refusal's own figures, with the Retry-After that remains", async () => {
      const { clock, store, limiter } = setup();
      await limiter.limit("api", { key: "a", count: 2 });
      const first = await limiter.limit("api", { key: "a", figures: true });
      assert.equal(first.figures.retryAfter, wait / 1000);
      const reads = store.reads;
      clock.now = NOW + 12_500;
      const again = await limiter.limit("api", { key: "a", figures: true });
      assert.deepEqual(again, { ok: false, retryAfter: wait - 12_500, figures: { ...first.figures, retryAfter: Math.ceil((wait - 12_500) / 1000) } });
      assert.equal(store.reads, reads);
    });

    test("what it cannot see: another instance's reset leaves this one refusing until the wait ends; its own reset lifts it", async () => {
      const { clock, store, limiter } = setup();
      const other = new RateLimiter(store, LIMITS[kind], { now: () => clock.now });
      await limiter.limit("api", { key: "a", count: 2 });
      await limiter.limit("api", { key: "a" });
      await other.reset("api", { key: "a" });
      assert.equal((await other.check("api", { key: "a" })).ok, true, "the store would admit");
      assert.equal((await limiter.limit("api", { key: "a" })).ok, false, "the cache refuses what the store would have admitted");
      await limiter.reset("api", { key: "a" });
      assert.equal((await limiter.limit("api", { key: "a" })).ok, true);
    });
  });
}

test("refusalCache: on one instance it answers exactly as the store, call for call, over 21,000 random calls (limits and checks, reserving or not, on 3 keys)", async () => {
  const random = seeded(22);
  let checked = 0;
  for (const config of [...KINDS.map((kind) => ({ kind, rate: 3, period: 1000, capacity: 5, maxReserved: 2, ...(kind === "fixed window" ? { start: 0 } : {}) })), { kind: "token bucket", rate: 2, period: 100 }]) {
    const clock = { now: NOW };
    const plain = new RateLimiter(new MemoryStore(), { api: config }, { now: () => clock.now });
    const store = new CountedStore();
    const cached = new RateLimiter(store, { api: config }, { now: () => clock.now, refusalCache: { maxKeys: 2 } });
    let local = 0;
    for (let index = 0; index < 7000; index++) {
      clock.now += Math.floor(random() * 40);
      const key = `k${Math.floor(random() * 3)}`;
      const op = random() < 0.2 ? "check" : "limit";
      const options = { key, count: 1 + Math.floor(random() * 2), ...(random() < 0.2 ? { reserve: true } : {}) };
      const reads = store.reads;
      const [expected, got] = [await plain[op]("api", options), await cached[op]("api", options)];
      if (store.reads === reads) local++;
      assert.equal(got.ok, expected.ok, `call ${index}: ${op} ${JSON.stringify(options)} at ${clock.now}`);
      // Equal but for rounding: waits are whole ms rounded up (src/result.rs caller_wait), so the
      // remembered wait's remainder and the store's fresh wait may differ by the 1 ms a float's noise
      // at either end rounds into.
      if (!got.ok) assert.ok(Math.abs(got.retryAfter - expected.retryAfter) <= 1, `call ${index}: waits ${got.retryAfter} and ${expected.retryAfter}`);
      checked++;
    }
    assert.ok(local > 300, `${local} calls answered locally`);
  }
  assert.equal(checked, 21_000);
});

test("refusalCache: bounded by maxKeys, the oldest refusal dropped first", async () => {
  const clock = { now: NOW };
  const store = new CountedStore();
  const limiter = new RateLimiter(store, LIMITS["token bucket"], { now: () => clock.now, refusalCache: { maxKeys: 3 } });
  for (const key of ["a", "b", "c", "d", "e"]) {
    await limiter.limit("api", { key, count: 2 });
    assert.equal((await limiter.limit("api", { key })).ok, false);
  }
  const asked = [];
  for (const key of ["e", "d", "c", "b", "a"]) {
    const reads = store.reads;
    assert.equal((await limiter.limit("api", { key })).ok, false);
    asked.push(store.reads > reads);
  }
  assert.deepEqual(asked, [false, false, false, true, true], "the three newest refusals answer locally; a's and b's were dropped");
});

test("refusalCache: sharded limits and degraded refusals are never remembered", async () => {
  const clock = { now: NOW };
  const store = new CountedStore();
  const limiter = new RateLimiter(store, { wide: { kind: "token bucket", rate: 4, period: 60_000, shards: 4 } }, { now: () => clock.now, refusalCache: true });
  for (let index = 0; index < 8; index++) await limiter.limit("wide", { key: "a" });
  const reads = store.reads;
  for (let index = 0; index < 4; index++) await limiter.limit("wide", { key: "a" });
  assert.equal(store.reads, reads + 8, "every call read its two shards");

  let down = true;
  const flaky = { read: (ref, info) => (down ? Promise.reject(Object.assign(new Error("down"), { code: "ECONNREFUSED" })) : store.read(ref, info)), write: (ref, state, info) => store.write(ref, state, info) };
  const api = { kind: "token bucket", rate: 1, period: 60_000, onStoreError: { fallback: "memory" } };
  const guarded = new RateLimiter(flaky, { api }, { now: () => clock.now, refusalCache: true });
  await guarded.limit("api", { key: "z" });
  const refused = await guarded.limit("api", { key: "z" });
  assert.deepEqual([refused.ok, refused.degraded], [false, "store-error"], "the fallback refused");
  down = false;
  assert.deepEqual(await guarded.limit("api", { key: "z" }), { ok: true }, "the store was asked, not the fallback's refusal");
});

test("refusalCache: an option that is not true, false or { maxKeys } is INVALID_ARGUMENT", () => {
  for (const refusalCache of [1, "yes", null, [], { maxKeys: 0 }, { maxKeys: 1.5 }, { max: 3 }]) {
    assert.throws(() => new RateLimiter(new MemoryStore(), {}, { refusalCache }), { code: "INVALID_ARGUMENT" }, JSON.stringify(refusalCache));
  }
  for (const refusalCache of [true, false, undefined, {}, { maxKeys: 1 }]) new RateLimiter(new MemoryStore(), {}, { refusalCache });
});

test("refusalCache: a refusal of one limit and key never answers another pair whose name and key join the same (issue 28 item 5)", async () => {
  // Keyed by key + "\0" + name, limit "b\0c" key "a" and limit "c" key "a\0b" were one entry:
  // the second pair was refused for an hour (retryAfter 3,600,001) where the store admits it.
  const clock = { now: NOW };
  const store = new CountedStore();
  const hourly = { kind: "token bucket", rate: 1, period: 3_600_000 };
  const limiter = new RateLimiter(store, { "b\u0000c": hourly, c: hourly, "": hourly }, { now: () => clock.now, refusalCache: true });
  assert.deepEqual(await limiter.limit("b\u0000c", { key: "a" }), { ok: true });
  assert.equal((await limiter.limit("b\u0000c", { key: "a" })).ok, false);
  clock.now = NOW + 1;
  assert.deepEqual(await limiter.limit("c", { key: "a\u0000b" }), { ok: true }, "another pair: the store admits it");
  // No key and a key that reads like the marker of none are two pairs as well.
  await limiter.limit("c", {});
  assert.equal((await limiter.limit("c", {})).ok, false);
  assert.deepEqual(await limiter.limit("", { key: "1:c" }), { ok: true });
  assert.deepEqual(await limiter.limit("c", { key: "-" }), { ok: true });
});
