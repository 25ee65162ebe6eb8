// The sliding window on the package's memory stores and the driver's general road: what it
// decides and stores, its figures and getValue, reset, check, limitAll with other kinds, and the
// fields and calls it refuses. Its decisions against @upstash/ratelimit's are
// tests/redis/upstash-sliding.test.mjs; its retryAfter's promise is src/sliding_window.rs's property.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { calculateRateLimit, MemoryStore, RateLimiter } from "../../pkg/dist/node.js";
import { SpyStore, seeded } from "./helpers.mjs";

const SECOND = 1000;
const slide = { kind: "sliding window", rate: 10, period: 60 * SECOND };
/** A limiter on `store` whose clock the test sets (`clock.now`). */
function limiterOn(store, clock, limits = { slide }) {
  return new RateLimiter(store, limits, { now: () => clock.now });
}

describe("a sliding window on a MemoryStore", () => {
  test("it stores one state per window, at shard (window mod 2), and counts the previous window by its weight, floored", async () => {
    const spy = new SpyStore();
    const clock = { now: 60 * SECOND };
    const limiter = limiterOn(spy, clock);
    for (let call = 0; call < 4; call++) assert.deepEqual(await limiter.limit("slide", { key: "ada" }), { ok: true });
    assert.deepEqual(spy.writes.at(-1), { ref: { name: "slide", key: "ada", shard: 1 }, state: { value: 4, ts: 60 * SECOND } });
    assert.deepEqual(spy.reads.slice(0, 2).map((ref) => ref.shard), [0, 1], "a decision reads both windows");
    // 15 s into the next window: floor(0.75 × 4) = 3 counted, 5 + 3 + 2 = 10 fit, 1 more does not.
    clock.now = 135 * SECOND;
    assert.deepEqual(await limiter.limit("slide", { key: "ada", count: 5, figures: true }), { ok: true, figures: { limit: 10, remaining: 2, reset: 45, window: 60, sampled: 1, effectiveWindow: 45 } });
    assert.deepEqual(await limiter.limit("slide", { key: "ada", count: 2 }), { ok: true });
    // Full: at 135 001 the weight is 0.74998, floor(2.9999) = 2 counted, so 1 ms.
    assert.deepEqual(await limiter.check("slide", { key: "ada" }), { ok: false, retryAfter: 1 });
    assert.deepEqual(spy.writes.at(-1), { ref: { name: "slide", key: "ada", shard: 0 }, state: { value: 7, ts: 120 * SECOND } });
    assert.deepEqual(await limiter.getValue("slide", { key: "ada" }), { value: 0, ts: 135 * SECOND, shard: 0, config: slide });
    clock.now += 1;
    assert.deepEqual(await limiter.limit("slide", { key: "ada" }), { ok: true });
    assert.equal((await limiter.limit("slide", { key: "ada" })).ok, false);
  });

  test("check answers as limit would and writes nothing; reset deletes both windows", async () => {
    const spy = new SpyStore();
    const clock = { now: 28_333_333 * 60 * SECOND }; // a window's start
    const limiter = limiterOn(spy, clock);
    await limiter.limit("slide", { key: "bo", count: 10 });
    clock.now += 60 * SECOND;
    await limiter.limit("slide", { key: "bo", count: 0 });
    spy.forget();
    assert.equal((await limiter.check("slide", { key: "bo" })).ok, false);
    assert.deepEqual(spy.writes, []);
    await limiter.reset("slide", { key: "bo" });
    assert.deepEqual(spy.writes.map(({ ref, state }) => [ref.shard, state]), [[0, null], [1, null]]);
    assert.deepEqual(await limiter.limit("slide", { key: "bo", count: 10 }), { ok: true });
  });

  test("limitAll with a token bucket is all or nothing whichever refuses", async () => {
    const clock = { now: 1_700_000_000_000 };
    const limiter = limiterOn(new MemoryStore(), clock, { slide, bucket: { kind: "token bucket", rate: 3, period: 86_400 * SECOND } });
    const both = (count) => [{ name: "slide", key: "cy", count }, { name: "bucket", key: "cy" }];
    assert.equal((await limiter.limitAll(both(9))).ok, true);
    assert.equal((await limiter.limitAll(both(2))).ok, false, "the sliding window refuses");
    assert.equal((await limiter.getValue("bucket", { key: "cy" })).value, 2, "and the bucket kept its token");
    await limiter.limitAll(both(0));
    await limiter.limitAll(both(0));
    assert.equal((await limiter.limitAll(both(1))).ok, false, "the bucket refuses");
    assert.equal((await limiter.getValue("slide", { key: "cy" })).value, 1, "and the window kept its room");
  });

  test("reserve: true is decided as a call that does not reserve (maxReserved 0): refused when full, never into debt, so acquire waits its turn", async () => {
    const clock = { now: 60 * SECOND };
    const limiter = limiterOn(new MemoryStore(), clock);
    assert.deepEqual(await limiter.limit("slide", { key: "dee", count: 10, reserve: true }), { ok: true });
    assert.deepEqual(await limiter.limit("slide", { key: "dee", reserve: true }), await limiter.check("slide", { key: "dee" }));
    assert.equal((await limiter.getValue("slide", { key: "dee" })).value, 0, "nothing went into debt");
    // Real time: 2 per 200 ms; the third call waits until the previous window weighs less.
    const quick = new RateLimiter(new MemoryStore(), { quick: { kind: "sliding window", rate: 2, period: 200 } });
    const waits = [];
    for (let call = 0; call < 3; call++) waits.push((await quick.acquire("quick", { key: "ed" })).waited);
    assert.ok(waits[2] > 0 && waits[2] < 600, waits.join(", "));
  });

  test("a MemoryStore decides every call as a plain store of read and write does, over random traffic", async () => {
    const random = seeded(32);
    const clock = { now: 1_700_000_000_000 };
    const limits = { slide, quick: { kind: "sliding window", rate: 3.5, period: 700 } };
    const memory = limiterOn(new MemoryStore(), clock, limits);
    const plain = new Map();
    const id = (ref) => `${ref.name}\u0000${ref.key}\u0000${ref.shard}`;
    const other = limiterOn({ read: (ref) => plain.get(id(ref)) ?? null, write: (ref, state) => (state === null ? plain.delete(id(ref)) : plain.set(id(ref), state)) }, clock, limits);
    let refused = 0;
    for (let call = 0; call < 5_000; call++) {
      clock.now += Math.floor(random() * 400);
      const name = random() < 0.5 ? "slide" : "quick";
      const options = { key: `k${Math.floor(random() * 3)}`, count: Math.floor(random() * 4) * (name === "quick" ? 0.5 : 1), figures: true };
      const op = random() < 0.2 ? "check" : "limit";
      const answers = [await memory[op](name, options), await other[op](name, options)];
      assert.deepEqual(answers[0], answers[1], `call ${call}`);
      if (!answers[0].ok) refused++;
    }
    assert.ok(refused > 500, `${refused} refused`);
  });
});

describe("what a sliding window refuses, by name", () => {
  for (const field of ["capacity", "maxReserved", "shards", "start"]) {
    test(`${field}: INVALID_CONFIG naming it`, () => {
      assert.throws(() => new RateLimiter(new MemoryStore(), { x: { ...slide, [field]: 1 } }), {
        code: "INVALID_CONFIG",
        message: `Rate limit "x": ${field} must be absent for a sliding window (got 1)`,
      });
    });
  }


  test("a count over its rate: COUNT_EXCEEDS_MAX", async () => {
    await assert.rejects(limiterOn(new MemoryStore(), { now: 0 }).limit("slide", { count: 11 }), { code: "COUNT_EXCEEDS_MAX" });
  });

  test("grants and calculateRateLimit: INVALID_CONFIG naming kind", async () => {
    const kind = /kind must be "token bucket" or "fixed window" for calculateRateLimit and grants .* \(got "sliding window"\)/;
    await assert.rejects(limiterOn(new MemoryStore(), { now: 0 }).limit("slide", { grant: true }), { code: "INVALID_CONFIG", message: kind });
    assert.throws(() => calculateRateLimit(null, slide, 0), { code: "INVALID_CONFIG", message: kind });
  });
});
