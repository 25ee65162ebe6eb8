// The limiter's behaviour as SPEC.md describes it, through the built npm package.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ConvexError } from "convex/values";
import {
  RateLimiter,
  MemoryStore,
  calculateRateLimit,
  withJitter,
  RateLimitError,
  isRateLimitError,
  SECOND,
  MINUTE,
  HOUR,
  DAY,
  WEEK,
} from "../../pkg/dist/node.js";
import { KINDS, SpyStore, config, manualClock, seeded, snapshot } from "./helpers.mjs";

/** A limiter over a SpyStore with a hand-moved clock and a fixed random number. */
function setup(limits, { now = 0, random = () => 0.5 } = {}) {
  const store = new SpyStore();
  const clock = manualClock(now);
  const limiter = new RateLimiter(store, limits, { now: clock.read, random });
  return { store, clock, limiter };
}

/** Asserts that `promise` rejects with a real Error carrying `code` (and, when given, `message`/`field`). */
async function rejectsWith(promise, { code, message, field, includes = [] }) {
  await assert.rejects(promise, (error) => {
    assert.ok(error instanceof Error, `expected an Error, got ${typeof error}: ${String(error)}`);
    assert.equal(error.code, code, error.message);
    if (message !== undefined) assert.equal(error.message, message);
    if (field !== undefined) assert.equal(error.field, field);
    for (const part of includes) assert.ok(error.message.includes(part), `${JSON.stringify(error.message)} should mention ${part}`);
    return true;
  });
}

// How long a limit of rate 10 per second waits for one missing token.
const ONE_TOKEN_WAIT = { "token bucket": 100, "fixed window": 1000 };

describe("token bucket", () => {
  it("grants a burst of capacity at once, then refuses with the time one token takes to refill", async () => {
    const { limiter } = setup({ send: { kind: "token bucket", rate: 10, period: SECOND, capacity: 3 } });
    for (let i = 0; i < 3; i++) assert.deepEqual(await limiter.limit("send"), { ok: true });
    assert.deepEqual(await limiter.limit("send"), { ok: false, retryAfter: 100 });
  });

  it("refills continuously: 250 ms after draining, two and a half tokens are back", async () => {
    const { limiter, clock } = setup({ send: { kind: "token bucket", rate: 10, period: SECOND } });
    assert.deepEqual(await limiter.limit("send", { count: 10 }), { ok: true });
    clock.now = 250;
    assert.deepEqual(await limiter.check("send", { count: 3 }), { ok: false, retryAfter: 50 });
    assert.deepEqual(await limiter.limit("send", { count: 2.5 }), { ok: true });
    assert.deepEqual(await limiter.limit("send", { count: 1 }), { ok: false, retryAfter: 100 });
  });

  it("never refills above capacity, however long it waits", async () => {
    const { limiter, clock } = setup({ send: { kind: "token bucket", rate: 10, period: SECOND } });
    await limiter.limit("send", { count: 10 });
    clock.now = HOUR;
    assert.deepEqual(await limiter.limit("send", { count: 10 }), { ok: true });
    assert.deepEqual(await limiter.limit("send"), { ok: false, retryAfter: 100 });
  });

  it("reserving past empty grants, leaves debt and says when the work may run", async () => {
    const { limiter, clock } = setup({ send: { kind: "token bucket", rate: 10, period: SECOND } });
    await limiter.limit("send", { count: 10 });
    assert.deepEqual(await limiter.limit("send", { count: 5, reserve: true }), { ok: true, retryAfter: 500 });
    assert.deepEqual(await limiter.limit("send", { count: 5, reserve: true }), { ok: true, retryAfter: 1000 });
    const { value, ts } = await limiter.getValue("send");
    assert.deepEqual({ value, ts }, { value: -10, ts: 0 });
    clock.now = 1000;
    assert.deepEqual(await limiter.limit("send"), { ok: false, retryAfter: 100 });
  });
});

describe("fixed window", () => {
  it("grants rate tokens per window and refuses until the next window starts", async () => {
    const { limiter, clock } = setup({ api: { kind: "fixed window", rate: 5, period: SECOND, start: 0 } });
    clock.now = 250;
    for (let i = 0; i < 5; i++) assert.deepEqual(await limiter.limit("api"), { ok: true });
    assert.deepEqual(await limiter.limit("api"), { ok: false, retryAfter: 750 });
    clock.now = 999;
    assert.deepEqual(await limiter.limit("api"), { ok: false, retryAfter: 1 });
    clock.now = 1000;
    assert.deepEqual(await limiter.limit("api", { count: 5 }), { ok: true });
  });

  it("carries unused windows over, but never above capacity", async () => {
    const { limiter, clock } = setup({ api: { kind: "fixed window", rate: 2, period: SECOND, capacity: 5, start: 0 } });
    assert.deepEqual(await limiter.limit("api", { count: 5 }), { ok: true });
    clock.now = 3500;
    assert.deepEqual(await limiter.limit("api", { count: 5 }), { ok: true });
    assert.deepEqual(await limiter.limit("api"), { ok: false, retryAfter: 500 });
  });

  it("aligns windows to an explicit start", async () => {
    const { limiter, clock } = setup({ api: { kind: "fixed window", rate: 1, period: SECOND, start: 300 } });
    clock.now = 1200;
    assert.deepEqual(await limiter.limit("api"), { ok: true });
    assert.deepEqual(await limiter.limit("api"), { ok: false, retryAfter: 100 });
    const value = await limiter.getValue("api");
    assert.equal(value.ts, 300);
    assert.equal(value.config.start, 300);
  });

  it("without a start, a key's first window begins a random time within the last period", async () => {
    for (const [random, expectedStart] of [[0.25, 9750], [0.75, 9250], [0, 10_000]]) {
      const { limiter } = setup({ api: { kind: "fixed window", rate: 1, period: SECOND } }, { now: 10_000, random: () => random });
      assert.deepEqual(await limiter.limit("api", { key: "k" }), { ok: true });
      assert.deepEqual(await limiter.limit("api", { key: "k" }), { ok: false, retryAfter: expectedStart + 1000 - 10_000 });
      const value = await limiter.getValue("api", { key: "k" });
      assert.equal(value.ts, expectedStart);
      assert.equal(value.config.start, expectedStart, "getValue's config carries the window start");
    }
  });

  it("without a start, different keys get their own window starts", async () => {
    const { limiter, store } = setup({ api: { kind: "fixed window", rate: 1, period: MINUTE } }, { now: 1e12, random: seeded(7) });
    for (let user = 0; user < 20; user++) await limiter.limit("api", { key: `user${user}` });
    const starts = new Set();
    for (let user = 0; user < 20; user++) {
      const { ts } = store.inner.read({ name: "api", key: `user${user}`, shard: 0 });
      assert.ok(ts > 1e12 - MINUTE && ts <= 1e12, `start ${ts} lies within the last period`);
      starts.add(ts);
    }
    assert.ok(starts.size > 10, `20 keys got only ${starts.size} distinct window starts`);
  });

  it("reserving past empty owes whole windows", async () => {
    const { limiter, clock } = setup({ api: { kind: "fixed window", rate: 10, period: SECOND, start: 0 } });
    await limiter.limit("api", { count: 10 });
    assert.deepEqual(await limiter.limit("api", { count: 5, reserve: true }), { ok: true, retryAfter: 1000 });
    assert.deepEqual(await limiter.limit("api", { count: 10, reserve: true }), { ok: true, retryAfter: 2000 });
    assert.equal((await limiter.getValue("api")).value, -15);
    clock.now = 1000;
    assert.deepEqual(await limiter.limit("api"), { ok: false, retryAfter: 1000 });
  });

  it("getValue of a sharded window without start reports a start its windows align to", async () => {
    const { limiter } = setup({ api: { kind: "fixed window", rate: 40, period: SECOND, shards: 4 } }, { now: 1_000_000, random: seeded(12) });
    let taken = 0;
    for (let i = 0; i < 8; i++) if ((await limiter.limit("api", { count: 3 })).ok) taken += 3;
    assert.ok(taken > 0);
    const report = await limiter.getValue("api", { sampleShards: 4 });
    assert.ok(Number.isFinite(report.config.start), `start ${report.config.start}`);
    assert.ok(report.config.start > 1_000_000 - SECOND && report.config.start <= 1_000_000);
    assert.ok(Number.isInteger((report.ts - report.config.start) / SECOND), `ts ${report.ts} is a window start`);
    assert.equal(report.value, 40 - taken, "the four shards together hold what was not taken");
  });

  it("uses the default random source when none is injected, inside the last period", async () => {
    const limiter = new RateLimiter(new MemoryStore(), { api: { kind: "fixed window", rate: 1, period: SECOND } }, { now: () => 50_000 });
    await limiter.limit("api");
    const { ts } = await limiter.getValue("api");
    assert.ok(Number.isInteger(ts) && ts > 49_000 && ts <= 50_000, `window start ${ts}`);
  });
});

for (const kind of KINDS) {
  describe(`${kind}: defaults`, () => {
    it("capacity defaults to rate", async () => {
      const { limiter } = setup({ send: config(kind, { rate: 4, period: SECOND }) });
      assert.deepEqual(await limiter.limit("send", { count: 4 }), { ok: true });
      assert.equal((await limiter.limit("send")).ok, false);
      assert.equal((await limiter.getValue("send")).config.capacity, 4);
    });

    it("shards default to 1: every decision reads and writes shard 0", async () => {
      const { limiter, store } = setup({ send: config(kind, { rate: 4, period: SECOND }) }, { random: seeded(3) });
      for (let i = 0; i < 6; i++) await limiter.limit("send", { key: "k" });
      assert.ok(store.reads.every((ref) => ref.shard === 0));
      assert.ok(store.writes.every((write) => write.ref.shard === 0));
      assert.equal((await limiter.getValue("send", { key: "k" })).config.shards, 1);
    });

    it("count defaults to 1", async () => {
      const { limiter } = setup({ send: config(kind, { rate: 10, period: SECOND }) });
      await limiter.limit("send");
      await limiter.limit("send", {});
      assert.equal((await limiter.getValue("send")).value, 8);
    });

    it("a count of 0 is always granted and takes nothing", async () => {
      const { limiter } = setup({ send: config(kind, { rate: 10, period: SECOND }) });
      assert.deepEqual(await limiter.limit("send", { count: 0 }), { ok: true });
      assert.equal((await limiter.getValue("send")).value, 10);
      await limiter.limit("send", { count: 10 });
      assert.deepEqual(await limiter.limit("send", { count: 0 }), { ok: true });
    });
  });

  describe(`${kind}: reservations`, () => {
    it("reserve: true on an empty limit grants with retryAfter and leaves debt", async () => {
      const { limiter } = setup({ send: config(kind, { rate: 10, period: SECOND }) });
      await limiter.limit("send", { count: 10 });
      assert.deepEqual(await limiter.limit("send", { reserve: true }), { ok: true, retryAfter: ONE_TOKEN_WAIT[kind] });
      assert.equal((await limiter.getValue("send")).value, -1);
    });

    it("a reservation that fits in the current tokens has no retryAfter", async () => {
      const { limiter } = setup({ send: config(kind, { rate: 10, period: SECOND }) });
      assert.deepEqual(await limiter.limit("send", { count: 4, reserve: true }), { ok: true });
    });

    it("maxReserved bounds the debt: past it the call is refused and nothing is written", async () => {
      const { limiter, store } = setup({ send: config(kind, { rate: 10, period: SECOND, maxReserved: 5 }) });
      await limiter.limit("send", { count: 10 });
      assert.deepEqual(await limiter.limit("send", { count: 5, reserve: true }), {
        ok: true,
        retryAfter: kind === "token bucket" ? 500 : 1000,
      });
      store.forget();
      assert.deepEqual(await limiter.limit("send", { count: 1, reserve: true }), {
        ok: false,
        retryAfter: kind === "token bucket" ? 600 : 1000,
      });
      assert.equal(store.writes.length, 0);
      assert.equal((await limiter.getValue("send")).value, -5);
    });

    it("maxReserved: 0 means no reservation at all", async () => {
      const { limiter, store } = setup({ send: config(kind, { rate: 10, period: SECOND, maxReserved: 0 }) });
      await limiter.limit("send", { count: 10 });
      store.forget();
      assert.deepEqual(await limiter.limit("send", { reserve: true }), { ok: false, retryAfter: ONE_TOKEN_WAIT[kind] });
      assert.equal(store.writes.length, 0);
      await rejectsWith(limiter.limit("send", { count: 11, reserve: true }), {
        code: "COUNT_EXCEEDS_MAX",
        message: "Rate limit send count 11 exceeds 10.00.",
      });
    });

    it("without maxReserved a reservation may be larger than capacity", async () => {
      const { limiter } = setup({ send: config(kind, { rate: 10, period: SECOND }) });
      assert.deepEqual(await limiter.limit("send", { count: 1000, reserve: true }), { ok: true, retryAfter: 99_000 });
      assert.equal((await limiter.getValue("send")).value, -990);
    });
  });

  describe(`${kind}: count validation`, () => {
    it("a count above capacity is an error, not a refusal, and writes nothing", async () => {
      const { limiter, store } = setup({ send: config(kind, { rate: 10, period: SECOND }) });
      for (const call of ["limit", "check"]) {
        await rejectsWith(limiter[call]("send", { count: 11 }), {
          code: "COUNT_EXCEEDS_MAX",
          message: "Rate limit send count 11 exceeds 10.",
        });
      }
      await rejectsWith(limiter.limit("send", { count: 10.5, throws: true }), {
        code: "COUNT_EXCEEDS_MAX",
        message: "Rate limit send count 10.5 exceeds 10.",
      });
      assert.equal(store.writes.length, 0);
      assert.deepEqual(await limiter.limit("send", { count: 10 }), { ok: true });
    });

    it("the error for a count above capacity is not a rate-limit refusal", async () => {
      const { limiter } = setup({ send: config(kind, { rate: 10, period: SECOND }) });
      await assert.rejects(limiter.limit("send", { count: 11, throws: true }), (error) => {
        assert.equal(isRateLimitError(error), false);
        assert.equal(error instanceof RateLimitError, false);
        return true;
      });
    });

    it("with reserve and maxReserved the bound adds maxReserved, printed with two decimals", async () => {
      const { limiter } = setup({
        send: config(kind, { rate: 10, period: SECOND, maxReserved: 5 }),
        third: config(kind, { rate: 1, period: SECOND, maxReserved: 1 / 3 }),
      });
      await rejectsWith(limiter.limit("send", { count: 16, reserve: true }), {
        code: "COUNT_EXCEEDS_MAX",
        message: "Rate limit send count 16 exceeds 15.00.",
      });
      await rejectsWith(limiter.check("third", { count: 2, reserve: true }), {
        code: "COUNT_EXCEEDS_MAX",
        message: "Rate limit third count 2 exceeds 1.33.",
      });
      assert.deepEqual(await limiter.limit("send", { count: 15, reserve: true }), {
        ok: true,
        retryAfter: kind === "token bucket" ? 500 : 1000,
      });
    });

    it("a sharded bound is two shards' worth, and the message says per how many shards", async () => {
      const { limiter } = setup(
        {
          llmTokens: config(kind, { rate: 40_000, period: MINUTE, shards: 10 }),
          pair: config(kind, { rate: 10, period: SECOND, shards: 2 }),
          four: config(kind, { rate: 8, period: SECOND, shards: 4, maxReserved: 4 }),
        },
        { random: seeded(11) },
      );
      await rejectsWith(limiter.limit("llmTokens", { count: 8001 }), {
        code: "COUNT_EXCEEDS_MAX",
        message: "Rate limit llmTokens count 8001 exceeds 8000 per 10 shards.",
      });
      await rejectsWith(limiter.limit("pair", { count: 11 }), {
        code: "COUNT_EXCEEDS_MAX",
        message: "Rate limit pair count 11 exceeds 10 per 2 shards.",
      });
      await rejectsWith(limiter.limit("four", { count: 7, reserve: true }), {
        code: "COUNT_EXCEEDS_MAX",
        message: "Rate limit four count 7 exceeds 6.00 per 4 shards.",
      });
      await rejectsWith(limiter.limit("four", { count: 5 }), {
        code: "COUNT_EXCEEDS_MAX",
        message: "Rate limit four count 5 exceeds 4 per 4 shards.",
      });
    });

    it("a negative, NaN, infinite or non-numeric count is an error that names the count", async () => {
      const { limiter, store } = setup({ send: config(kind, { rate: 10, period: SECOND }) });
      for (const [count, shown] of [[-1, "-1"], [-0.5, "-0.5"], [NaN, "NaN"], [Infinity, "Infinity"], ["1", '"1"'], [null, "null"]]) {
        for (const call of ["limit", "check"]) {
          await rejectsWith(limiter[call]("send", { count }), {
            code: "INVALID_REQUEST",
            field: "count",
            includes: ['"send"', "count", `(got ${shown})`],
          });
        }
      }
      assert.equal(store.writes.length, 0);
      assert.equal((await limiter.getValue("send")).value, 10, "a negative count did not mint tokens");
    });
  });

  describe(`${kind}: throws`, () => {
    it("throws: true turns a refusal into a RateLimitError carrying the limit's name and wait", async () => {
      const { limiter } = setup({ send: config(kind, { rate: 10, period: SECOND }) });
      assert.deepEqual(await limiter.limit("send", { count: 10, throws: true }), { ok: true });
      for (const call of ["limit", "check"]) {
        await assert.rejects(limiter[call]("send", { throws: true }), (error) => {
          assert.ok(error instanceof RateLimitError);
          assert.ok(error instanceof Error);
          assert.deepEqual(error.data, { kind: "RateLimited", name: "send", retryAfter: ONE_TOKEN_WAIT[kind] });
          assert.equal(isRateLimitError(error), true);
          return true;
        });
      }
    });

    it("without throws a refusal is a result", async () => {
      const { limiter } = setup({ send: config(kind, { rate: 10, period: SECOND }) });
      await limiter.limit("send", { count: 10 });
      assert.deepEqual(await limiter.limit("send", { throws: false }), { ok: false, retryAfter: ONE_TOKEN_WAIT[kind] });
    });
  });

  describe(`${kind}: check and refusals write nothing`, () => {
    it("check never writes, whether it grants, refuses or reserves", async () => {
      const { limiter, store, clock } = setup({
        send: config(kind, { rate: 10, period: SECOND }),
        wide: config(kind, { rate: 100, period: SECOND, shards: 10 }),
      });
      assert.deepEqual(await limiter.check("send", { count: 10 }), { ok: true });
      assert.deepEqual(await limiter.check("send", { count: 10 }), { ok: true }, "a check consumed tokens");
      await limiter.limit("send", { count: 10 });
      store.forget();
      assert.equal((await limiter.check("send")).ok, false);
      assert.equal((await limiter.check("send", { count: 3, reserve: true })).ok, true);
      assert.equal((await limiter.check("wide", { count: 15 })).ok, true);
      assert.equal((await limiter.checkAll([{ name: "send", count: 0 }, { name: "wide", count: 3 }])).ok, true);
      clock.now = 5 * SECOND;
      assert.equal((await limiter.check("send")).ok, true);
      assert.deepEqual(store.writes, []);
    });

    it("check answers exactly what limit then does", async () => {
      const { limiter, clock } = setup({ send: config(kind, { rate: 10, period: SECOND, maxReserved: 4 }) });
      const traffic = seeded(5);
      for (let step = 0; step < 200; step++) {
        clock.now += Math.floor(traffic() * 300);
        const request = { count: Math.floor(traffic() * 10), reserve: traffic() < 0.3 };
        const checked = await limiter.check("send", request);
        assert.deepEqual(await limiter.limit("send", request), checked, `step ${step}`);
      }
    });

    it("a refused limit writes nothing", async () => {
      const { limiter, store } = setup({ send: config(kind, { rate: 10, period: SECOND }) });
      await limiter.limit("send", { count: 8 });
      store.forget();
      assert.equal((await limiter.limit("send", { count: 3 })).ok, false);
      assert.deepEqual(store.writes, []);
      assert.equal((await limiter.getValue("send")).value, 2);
    });

    it("a host clock that steps backwards neither mints nor burns tokens", async () => {
      const { limiter, clock } = setup({ send: config(kind, { rate: 10, period: SECOND }) });
      clock.now = 10_000;
      await limiter.limit("send", { count: 6 });
      clock.now = 3_000;
      assert.deepEqual(await limiter.limit("send", { count: 4 }), { ok: true });
      const { value, ts } = await limiter.getValue("send");
      assert.deepEqual({ value, ts }, { value: 0, ts: 10_000 });
      // The wait still counts from the stored time: 7 s ahead plus the refill.
      assert.deepEqual(await limiter.limit("send"), { ok: false, retryAfter: 7_000 + ONE_TOKEN_WAIT[kind] });
    });
  });

  describe(`${kind}: getValue`, () => {
    it("reports full capacity and the filled-in config when nothing is stored", async () => {
      const { limiter } = setup({ send: config(kind, { rate: 10, period: SECOND, capacity: 3 }) }, { now: 5000 });
      const report = await limiter.getValue("send", { key: "ada" });
      assert.equal(report.value, 3);
      assert.equal(report.shard, 0);
      const expected = { kind, rate: 10, period: SECOND, capacity: 3, shards: 1 };
      if (kind === "fixed window") expected.start = 0;
      assert.deepEqual(report.config, expected);
    });

    it("reports the stored state, and its config projects the limit forward", async () => {
      const { limiter, clock } = setup({ send: config(kind, { rate: 10, period: SECOND, maxReserved: 2 }) });
      clock.now = 200;
      await limiter.limit("send", { key: "ada", count: 7 });
      const report = await limiter.getValue("send", { key: "ada" });
      assert.deepEqual({ value: report.value, ts: report.ts }, { value: 3, ts: kind === "token bucket" ? 200 : 0 });
      const expected = { kind, rate: 10, period: SECOND, capacity: 10, maxReserved: 2, shards: 1 };
      if (kind === "fixed window") expected.start = 0;
      assert.deepEqual(report.config, expected);
      const later = 700;
      const projected = calculateRateLimit({ value: report.value, ts: report.ts }, report.config, later);
      assert.equal(projected.value, kind === "token bucket" ? 8 : 3);
      clock.now = later;
      assert.deepEqual(await limiter.check("send", { key: "ada", count: projected.value }), { ok: true });
      assert.equal((await limiter.check("send", { key: "ada", count: projected.value + 1 })).ok, false);
    });

    it("a sharded limit reports the sampled shards' mean times the shard count", async () => {
      // 4 shards of 10: stored values 10, 6, 2, (missing = full 10); mean 7, whole limit 28.
      const { limiter, store } = setup({ wide: config(kind, { rate: 40, period: SECOND, shards: 4 }) }, { random: seeded(1) });
      store.inner.write({ name: "wide", shard: 0 }, { value: 10, ts: 0 });
      store.inner.write({ name: "wide", shard: 1 }, { value: 6, ts: 0 });
      store.inner.write({ name: "wide", shard: 2 }, { value: 2, ts: 0 });
      for (const sampleShards of [4, 100]) {
        const report = await limiter.getValue("wide", { sampleShards });
        assert.equal(report.value, 28);
        assert.ok(report.shard === 0 || report.shard === 3, `best shard ${report.shard}`);
        assert.equal(report.config.shards, 4);
        assert.equal(report.config.capacity, 40);
        if (kind === "fixed window") assert.equal(report.config.start, 0);
      }
      const values = [10, 6, 2, 10];
      const seen = new Set();
      for (let i = 0; i < 40; i++) {
        store.forget();
        const report = await limiter.getValue("wide");
        assert.equal(store.reads.length, 1, "sampleShards defaults to 1");
        assert.equal(report.shard, store.reads[0].shard);
        assert.equal(report.value, values[report.shard] * 4);
        seen.add(report.shard);
      }
      assert.equal(seen.size, 4, "the sampled shard is random");
      store.forget();
      await limiter.getValue("wide", { sampleShards: 3 });
      assert.equal(new Set(store.reads.map((ref) => ref.shard)).size, 3, "three distinct shards were sampled");
    });

    it("a sharded limit projects the sampled shards to the latest sampled time", async () => {
      // Two shards of 10, refilling 10 per second each (token bucket) or per window.
      const { limiter, store } = setup({ pair: config(kind, { rate: 20, period: SECOND, shards: 2 }) });
      store.inner.write({ name: "pair", key: "k", shard: 0 }, { value: 0, ts: 0 });
      store.inner.write({ name: "pair", key: "k", shard: 1 }, { value: 0, ts: kind === "token bucket" ? 500 : 1000 });
      const report = await limiter.getValue("pair", { key: "k", sampleShards: 2 });
      // Token bucket: shard 0 has refilled 5 by 500 ms, shard 1 nothing: mean 2.5, whole limit 5.
      // Fixed window: shard 0 gets its next window at 1000 (10), shard 1 is empty: mean 5, whole limit 10.
      if (kind === "token bucket") assert.deepEqual([report.value, report.ts, report.shard], [5, 500, 0]);
      else assert.deepEqual([report.value, report.ts, report.shard], [10, 1000, 0]);
    });
  });

  describe(`${kind}: reset`, () => {
    it("reset makes an unsharded limit full again and deletes its state", async () => {
      const { limiter, store } = setup({ send: config(kind, { rate: 10, period: SECOND }) });
      await limiter.limit("send", { key: "ada", count: 10 });
      await limiter.reset("send", { key: "ada" });
      assert.equal(store.inner.size, 0);
      assert.deepEqual(await limiter.limit("send", { key: "ada", count: 10 }), { ok: true });
    });

    it("reset deletes every shard of that name and key, and nothing else", async () => {
      const { limiter, store } = setup({ wide: config(kind, { rate: 40, period: SECOND, shards: 4 }) });
      for (let shard = 0; shard < 4; shard++) {
        store.inner.write({ name: "wide", key: "ada", shard }, { value: 0, ts: 0 });
        store.inner.write({ name: "wide", key: "bob", shard }, { value: 0, ts: 0 });
      }
      store.inner.write({ name: "wide", shard: 0 }, { value: 0, ts: 0 });
      await limiter.reset("wide", { key: "ada" });
      const deleted = store.writes.filter((write) => write.state === null).map((write) => write.ref.shard).sort();
      assert.deepEqual(deleted, [0, 1, 2, 3]);
      assert.ok(store.writes.every((write) => write.ref.key === "ada"));
      assert.equal(store.inner.size, 5);
      for (let shard = 0; shard < 4; shard++) assert.equal(store.inner.read({ name: "wide", key: "ada", shard }), null);
      assert.equal((await limiter.getValue("wide", { key: "ada", sampleShards: 4 })).value, 40);
    });
  });

  describe(`${kind}: sharding`, () => {
    it("each decision reads at most two shards and writes at most two, only shards it read", async () => {
      const random = seeded(21);
      const { limiter, store, clock } = setup({ wide: config(kind, { rate: 100, period: SECOND, shards: 10, maxReserved: 20 }) }, { random });
      const traffic = seeded(22);
      for (let step = 0; step < 1500; step++) {
        clock.now += Math.floor(traffic() * 40);
        store.forget();
        const request = { key: traffic() < 0.5 ? "a" : "b", count: Math.floor(traffic() * 21), reserve: traffic() < 0.2 };
        const result = await (traffic() < 0.8 ? limiter.limit("wide", request) : limiter.check("wide", request));
        assert.ok(store.reads.length >= 1 && store.reads.length <= 2, `step ${step}: ${store.reads.length} reads`);
        assert.ok(store.writes.length <= 2, `step ${step}: ${store.writes.length} writes`);
        const readShards = new Set(store.reads.map((ref) => ref.shard));
        assert.equal(readShards.size, store.reads.length, "the two shards read are distinct");
        for (const write of store.writes) assert.ok(readShards.has(write.ref.shard), `step ${step} wrote a shard it did not read`);
        if (!result.ok) assert.equal(store.writes.length, 0);
      }
    });

    for (const shards of [1, 2, 3, 10]) {
      it(`with ${shards} shard(s) the whole limit never grants more than its bound`, async () => {
        // Bound: capacity at the start plus `rate` per period since (per whole window for a fixed window).
        const rate = 60;
        const capacity = 120;
        const { limiter, clock } = setup({ wide: config(kind, { rate, period: SECOND, capacity, shards }) }, { random: seeded(100 + shards) });
        const traffic = seeded(200 + shards);
        const maxCount = shards < 3 ? capacity : capacity / (shards / 2);
        let granted = 0;
        let grants = 0;
        for (let step = 0; step < 3000; step++) {
          if (traffic() < 0.3) clock.now += Math.floor(traffic() * 50);
          const count = Math.ceil(traffic() * maxCount * (traffic() < 0.8 ? 0.25 : 1));
          const result = await limiter.limit("wide", { count });
          if (result.ok) {
            granted += count;
            grants++;
          }
          const refilled = kind === "token bucket" ? (rate * clock.now) / SECOND : rate * Math.floor(clock.now / SECOND);
          assert.ok(granted <= capacity + refilled + 1e-6, `step ${step}: granted ${granted} > ${capacity} + ${refilled} at ${clock.now}`);
        }
        assert.ok(grants > 100, `only ${grants} grants: the test did not exercise the limit`);
        // And it is not starved: most of what the bound allows was granted.
        const bound = capacity + (kind === "token bucket" ? (rate * clock.now) / SECOND : rate * Math.floor(clock.now / SECOND));
        assert.ok(granted > bound * 0.5, `granted ${granted} of a bound of ${bound}`);
      });
    }

    it("of two shards read, it uses the one that grants, the fuller when both do, and both combined when neither does", async () => {
      // Five shards of 10, all stored at now = 0 so that nothing refills.
      const values = [10, 2, 9, 3, 6];
      const seen = { one: 0, fuller: 0, combined: 0, refused: 0 };
      for (let trial = 0; trial < 240; trial++) {
        const { limiter, store } = setup({ wide: config(kind, { rate: 50, period: SECOND, shards: 5 }) }, { random: seeded(trial) });
        values.forEach((value, shard) => store.inner.write({ name: "wide", shard }, { value, ts: 0 }));
        store.forget();
        const count = [1, 5, 7, 8][trial % 4];
        const result = await limiter.limit("wide", { count });
        assert.equal(store.reads.length, 2, "a stored first shard of three or more leads to a second");
        const [a, b] = store.reads.map((ref) => ref.shard);
        const writes = store.writes.map((write) => [write.ref.shard, write.state.value]);
        const context = `trial ${trial}: shards ${a} (${values[a]}) and ${b} (${values[b]}), count ${count}`;
        const grantsA = values[a] >= count;
        const grantsB = values[b] >= count;
        if (grantsA && grantsB) {
          const fuller = values[a] > values[b] ? a : b;
          assert.deepEqual(writes, [[fuller, values[fuller] - count]], context);
          seen.fuller++;
        } else if (grantsA || grantsB) {
          const granting = grantsA ? a : b;
          assert.deepEqual(writes, [[granting, values[granting] - count]], context);
          seen.one++;
        } else if (values[a] + values[b] >= count) {
          const level = (values[a] + values[b] - count) / 2;
          assert.deepEqual(writes.sort(), [[a, level], [b, level]].sort(), context);
          seen.combined++;
        } else {
          assert.deepEqual(writes, [], context);
          seen.refused++;
        }
        assert.equal(result.ok, writes.length > 0, context);
      }
      for (const [outcome, times] of Object.entries(seen)) assert.ok(times > 5, `${outcome} happened only ${times} times`);
    });

    // The plan names both shards before any read (issue 23: one batched read); the second is
    // then simply not used: one write, on the first shard.
    it("a fresh first shard that grants, or one of only two shards, is decided alone: two reads in one batch, one write", async () => {
      const fresh = setup({ wide: config(kind, { rate: 100, period: SECOND, shards: 10 }) }, { random: seeded(6) });
      assert.deepEqual(await fresh.limiter.limit("wide", { count: 3 }), { ok: true });
      assert.equal(fresh.store.reads.length, 2);
      assert.equal(fresh.store.writes.length, 1);
      assert.equal(fresh.store.writes[0].ref.shard, fresh.store.reads[0].shard, "the first shard read is the one written");
      const pair = setup({ pair: config(kind, { rate: 20, period: SECOND, shards: 2 }) }, { random: seeded(7) });
      pair.store.inner.write({ name: "pair", shard: 0 }, { value: 5, ts: 0 });
      pair.store.inner.write({ name: "pair", shard: 1 }, { value: 5, ts: 0 });
      for (let i = 0; i < 4; i++) {
        pair.store.forget();
        assert.deepEqual(await pair.limiter.limit("pair", { count: 1 }), { ok: true });
        assert.equal(pair.store.reads.length, 2);
        assert.equal(pair.store.writes.length, 1);
      }
    });

    it("a fresh sharded limit serves a count above one shard's capacity from two shards", async () => {
      // Deliberate: a refusing first shard leads to a second, and the two are tried combined.
      const { limiter, store } = setup({ wide: config(kind, { rate: 100, period: SECOND, shards: 10 }) }, { random: seeded(4) });
      assert.deepEqual(await limiter.limit("wide", { count: 15 }), { ok: true });
      assert.equal(store.writes.length, 2);
      const left = store.writes.map((write) => write.state.value);
      assert.deepEqual(left, [2.5, 2.5], "the count is split so both shards end level");
    });

    it("a refused sharded call succeeds when retried after retryAfter", async () => {
      const { limiter, store, clock } = setup({ wide: config(kind, { rate: 100, period: SECOND, shards: 10 }) }, { random: seeded(9) });
      for (let shard = 0; shard < 10; shard++) store.inner.write({ name: "wide", shard }, { value: 0, ts: 0 });
      store.forget();
      const refused = await limiter.limit("wide", { count: 1 });
      assert.equal(refused.ok, false);
      assert.ok(refused.retryAfter > 0 && refused.retryAfter <= ONE_TOKEN_WAIT[kind], `retryAfter ${refused.retryAfter}`);
      assert.deepEqual(store.writes, []);
      clock.now = refused.retryAfter;
      assert.deepEqual(await limiter.limit("wide", { count: 1 }), { ok: true });
    });
  });

  describe(`${kind}: limitAll and checkAll`, () => {
    const limits = () => ({ x: config(kind, { rate: 10, period: SECOND }), y: config(kind, { rate: 10, period: SECOND }) });
    const refs = [{ name: "x", shard: 0 }, { name: "y", shard: 0 }];

    it("limitAll and checkAll take at most 128 requests: 129 is INVALID_ARGUMENT on requests, and the store is never touched (docs/concepts.md)", async () => {
      const { limiter, store } = setup(limits());
      const requests = (length) => Array.from({ length }, (_, index) => ({ name: index % 2 ? "x" : "y", key: `k${index}`, count: 0 }));
      assert.deepEqual(await limiter.limitAll(requests(128)), { ok: true });
      store.forget();
      for (const method of ["limitAll", "checkAll"]) {
        await assert.rejects(limiter[method](requests(129)), (error) => {
          assert.deepEqual([error.name, error.code, error.field], ["TypeError", "INVALID_ARGUMENT", "requests"]);
          assert.match(error.message, /at most 128 limits \(got 129\)/);
          return true;
        });
      }
      assert.deepEqual([store.reads, store.writes], [[], []]);
    });

    it("limitAll grants all the limits together and consumes each", async () => {
      const { limiter } = setup(limits());
      assert.deepEqual(await limiter.limitAll([{ name: "x", count: 3 }, { name: "y", count: 4 }]), { ok: true });
      assert.equal((await limiter.getValue("x")).value, 7);
      assert.equal((await limiter.getValue("y")).value, 6);
    });

    it("when one limit refuses, limitAll consumes none and waits for the slowest", async () => {
      const { limiter, store } = setup(limits());
      await limiter.limit("x", { count: 10 });
      await limiter.limit("x", { count: 15, reserve: true });
      await limiter.limit("y", { count: 5 });
      const before = snapshot(store.inner, refs);
      store.forget();
      // x is 15 in debt, so 1 more is 16 short; y is 3 short.
      const expected = { ok: false, retryAfter: kind === "token bucket" ? 1600 : 2000 };
      assert.deepEqual(await limiter.limitAll([{ name: "x", count: 1 }, { name: "y", count: 8 }]), expected);
      assert.deepEqual(await limiter.limitAll([{ name: "y", count: 8 }, { name: "x", count: 1 }]), expected);
      assert.deepEqual(await limiter.limitAll([{ name: "y", count: 3 }, { name: "x", count: 1 }]), {
        ok: false,
        retryAfter: kind === "token bucket" ? 1600 : 2000,
      });
      assert.deepEqual(store.writes, []);
      assert.deepEqual(snapshot(store.inner, refs), before);
    });

    it("a refusal of a batch that would have consumed the first limit leaves it untouched", async () => {
      const { limiter, store } = setup(limits());
      await limiter.limit("y", { count: 5 });
      store.forget();
      assert.equal((await limiter.limitAll([{ name: "x", count: 5 }, { name: "y", count: 10 }])).ok, false);
      assert.deepEqual(store.writes, []);
      assert.equal((await limiter.getValue("x")).value, 10);
    });

    it("two items on the same limit add up", async () => {
      const { limiter } = setup(limits());
      assert.equal((await limiter.limitAll([{ name: "x", count: 6 }, { name: "x", count: 6 }])).ok, false);
      assert.deepEqual(await limiter.limitAll([{ name: "x", count: 5 }, { name: "x", count: 5 }]), { ok: true });
      assert.equal((await limiter.getValue("x")).value, 0);
    });

    it("a batch with a reservation is granted with the longest wait", async () => {
      const { limiter } = setup(limits());
      assert.deepEqual(await limiter.limitAll([{ name: "x", count: 15, reserve: true }, { name: "y" }]), {
        ok: true,
        retryAfter: kind === "token bucket" ? 500 : 1000,
      });
      assert.equal((await limiter.getValue("x")).value, -5);
      assert.equal((await limiter.getValue("y")).value, 9);
    });

    it("checkAll answers what limitAll would and writes nothing", async () => {
      const { limiter, store, clock } = setup(limits());
      const traffic = seeded(31);
      for (let step = 0; step < 100; step++) {
        clock.now += Math.floor(traffic() * 200);
        const batch = [
          { name: "x", count: Math.floor(traffic() * 6) },
          { name: "y", count: Math.floor(traffic() * 6), reserve: traffic() < 0.2 },
        ];
        store.forget();
        const checked = await limiter.checkAll(batch);
        assert.deepEqual(store.writes, []);
        assert.deepEqual(await limiter.limitAll(batch), checked, `step ${step}`);
      }
    });

    it("throws: true makes a refused batch throw a RateLimitError", async () => {
      const { limiter } = setup(limits());
      await limiter.limit("y", { count: 10 });
      for (const call of ["limitAll", "checkAll"]) {
        await assert.rejects(limiter[call]([{ name: "x" }, { name: "y" }], { throws: true }), (error) => {
          assert.ok(error instanceof RateLimitError);
          assert.ok(isRateLimitError(error));
          assert.equal(error.data.kind, "RateLimited");
          assert.ok(error.data.name.includes("y"), `name ${error.data.name} names the refusing limit`);
          assert.equal(error.data.retryAfter, ONE_TOKEN_WAIT[kind]);
          return true;
        });
      }
      assert.deepEqual(await limiter.limitAll([{ name: "x" }], { throws: true }), { ok: true });
    });

    it("the seeds' deadlock cannot happen: x-then-y and y-then-x never hold one while refused on the other", async () => {
      // Request A takes 5 x and 10 y; request B takes 5 y and 10 x; y starts with only 5.
      const { limiter, store, clock } = setup(limits());
      await limiter.limit("y", { count: 5 });
      const requestA = [{ name: "x", count: 5 }, { name: "y", count: 10 }];
      const requestB = [{ name: "y", count: 5 }, { name: "x", count: 10 }];
      let grantedA = 0;
      let grantedB = 0;
      for (let round = 0; round < 60; round++) {
        clock.now += 250;
        for (const [label, request] of [["A", requestA], ["B", requestB]]) {
          const before = snapshot(store.inner, refs);
          const result = await limiter.limitAll(request);
          const after = snapshot(store.inner, refs);
          if (result.ok) {
            if (label === "A") grantedA++;
            else grantedB++;
            assert.notDeepEqual(after[0], before[0], `round ${round}: ${label} was granted but x was not consumed`);
            assert.notDeepEqual(after[1], before[1], `round ${round}: ${label} was granted but y was not consumed`);
          } else {
            assert.deepEqual(after, before, `round ${round}: ${label} was refused but consumed something`);
          }
        }
      }
      assert.ok(grantedA > 0 && grantedB > 0, `A granted ${grantedA} times, B ${grantedB}: one of them starved`);
    });
  });

  describe(`${kind}: inline config and unknown names`, () => {
    it("a limit not named up front works with an inline config, for every call", async () => {
      const { limiter, store } = setup({});
      const inline = config(kind, { rate: 1, period: SECOND });
      assert.deepEqual(await limiter.limit("oneOff", { config: inline }), { ok: true });
      assert.deepEqual(await limiter.limit("oneOff", { config: inline }), { ok: false, retryAfter: 1000 });
      assert.deepEqual(await limiter.check("oneOff", { config: inline }), { ok: false, retryAfter: 1000 });
      assert.equal((await limiter.getValue("oneOff", { config: inline })).value, 0);
      await limiter.reset("oneOff", { config: inline });
      assert.equal(store.inner.size, 0);
      assert.deepEqual(await limiter.limitAll([{ name: "oneOff", config: inline }]), { ok: true });
      assert.deepEqual(await limiter.checkAll([{ name: "oneOff", config: inline }]), { ok: false, retryAfter: 1000 });
    });

    it("an unknown name without a config is an error naming it, for every call", async () => {
      const { limiter, store } = setup({ known: config(kind, { rate: 1, period: SECOND }) });
      const expected = { code: "UNKNOWN_LIMIT", includes: ['"nope"'] };
      await rejectsWith(limiter.limit("nope"), expected);
      await rejectsWith(limiter.check("nope", { key: "k" }), expected);
      await rejectsWith(limiter.getValue("nope"), expected);
      await rejectsWith(limiter.reset("nope"), expected);
      await rejectsWith(limiter.limitAll([{ name: "known" }, { name: "nope" }]), expected);
      await rejectsWith(limiter.checkAll([{ name: "nope" }]), expected);
      assert.deepEqual(store.writes, []);
      assert.equal((await limiter.getValue("known")).value, 1, "the batch with an unknown name consumed nothing");
    });
  });
}

describe("isRateLimitError", () => {
  it("recognises a RateLimitError, a ConvexError and a plain object carrying RateLimited data", () => {
    const data = { kind: "RateLimited", name: "send", retryAfter: 250 };
    assert.equal(isRateLimitError(new RateLimitError("send", 250)), true);
    assert.equal(isRateLimitError(new ConvexError(data)), true);
    assert.equal(isRateLimitError({ data }), true);
    assert.equal(isRateLimitError(Object.assign(new Error("limited"), { data })), true);
  });

  it("rejects anything else", () => {
    for (const other of [
      null,
      undefined,
      "RateLimited",
      42,
      new Error("boom"),
      { data: null },
      { data: { kind: "Other", name: "send", retryAfter: 1 } },
      { data: { kind: "RateLimited", name: "send" } },
      { data: { kind: "RateLimited", retryAfter: 1 } },
      new ConvexError({ kind: "SomethingElse" }),
      { kind: "RateLimited", name: "send", retryAfter: 1 },
    ]) {
      assert.equal(isRateLimitError(other), false, `${JSON.stringify(other)} is not a refusal`);
    }
  });

  it("a RateLimitError is a real Error with the name and wait in its data", () => {
    const error = new RateLimitError("send", 250);
    assert.ok(error instanceof Error);
    assert.deepEqual(error.data, { kind: "RateLimited", name: "send", retryAfter: 250 });
    assert.equal(typeof error.message, "string");
    assert.ok(error.message.length > 0);
  });
});

describe("calculateRateLimit", () => {
  it("a token bucket with no state is full at now", () => {
    assert.deepEqual(calculateRateLimit(null, { kind: "token bucket", rate: 10, period: SECOND, capacity: 3 }, 5000), { value: 3, ts: 5000 });
  });

  it("a fixed window with no state starts full at its start", () => {
    assert.deepEqual(calculateRateLimit(null, { kind: "fixed window", rate: 1, period: 100, start: 5 }, 1000, 3), {
      value: -2,
      ts: 905,
      retryAfter: 105,
      windowStart: 5,
    });
  });

  it("count defaults to 0: the state is only projected", () => {
    assert.deepEqual(calculateRateLimit({ value: 0, ts: 0 }, { kind: "token bucket", rate: 10, period: SECOND }, 300), { value: 3, ts: 300 });
  });

  it("takes 1 token from an empty bucket refilling 10 a minute: 3 s more wait", () => {
    assert.deepEqual(calculateRateLimit({ value: 0, ts: 0 }, { kind: "token bucket", rate: 10, period: MINUTE }, 3000, 1), {
      value: -0.5,
      ts: 3000,
      retryAfter: 3000,
    });
  });

  it("a fixed window counts the windows a shortfall needs", () => {
    assert.deepEqual(calculateRateLimit({ value: 0, ts: 0 }, { kind: "fixed window", rate: 5, period: SECOND, capacity: 20 }, 250, 12), {
      value: -12,
      ts: 0,
      retryAfter: 2750,
      windowStart: 0,
    });
  });

  it("a clock behind the stored ts neither mints nor burns tokens", () => {
    const bucket = { kind: "token bucket", rate: 10, period: SECOND };
    assert.deepEqual(calculateRateLimit({ value: 4, ts: 5000 }, bucket, 1000, 1), { value: 3, ts: 5000 });
    assert.deepEqual(calculateRateLimit({ value: 0, ts: 5000 }, bucket, 1000, 1), { value: -1, ts: 5000, retryAfter: 4100 });
    const window = { kind: "fixed window", rate: 5, period: SECOND };
    assert.deepEqual(calculateRateLimit({ value: 2, ts: 10_000 }, window, 3000, 1), { value: 1, ts: 10_000, windowStart: 10_000 });
    assert.deepEqual(calculateRateLimit({ value: 0, ts: 10_000 }, window, 3000, 1), {
      value: -1,
      ts: 10_000,
      retryAfter: 8000,
      windowStart: 10_000,
    });
  });

  it("now defaults to the current time", () => {
    const before = Date.now();
    const { ts } = calculateRateLimit(null, { kind: "token bucket", rate: 1, period: SECOND });
    assert.ok(ts >= before && ts <= Date.now());
  });
});

describe("determinism", () => {
  /** Sharded limits and random window starts under injected now and random. */
  async function replay(seed) {
    const store = new MemoryStore();
    const clock = manualClock(1_700_000_000_000);
    const limiter = new RateLimiter(
      store,
      {
        windows: { kind: "fixed window", rate: 50, period: SECOND, shards: 5 },
        bucket: { kind: "token bucket", rate: 30, period: SECOND, shards: 6, maxReserved: 10 },
      },
      { now: clock.read, random: seeded(seed) },
    );
    const traffic = seeded(99);
    const results = [];
    for (let step = 0; step < 400; step++) {
      clock.now += Math.floor(traffic() * 30);
      const name = traffic() < 0.5 ? "windows" : "bucket";
      const request = { key: `user${Math.floor(traffic() * 3)}`, count: Math.floor(traffic() * 10), reserve: traffic() < 0.2 };
      results.push(await limiter.limit(name, request));
      if (step % 50 === 0) results.push(await limiter.getValue(name, { key: request.key, sampleShards: 2 }));
    }
    return results;
  }

  it("the same injected clock and seed give the same results", async () => {
    assert.deepEqual(await replay(42), await replay(42));
  });

  it("the injected random source is the one used: another seed gives other results", async () => {
    assert.notDeepEqual(await replay(42), await replay(43));
  });

  it("an injected random number outside [0, 1) is an error", async () => {
    const limiter = new RateLimiter(new MemoryStore(), { w: { kind: "fixed window", rate: 1, period: SECOND } }, { now: () => 0, random: () => 1 });
    await rejectsWith(limiter.limit("w"), { code: "INVALID_RANDOM" });
  });
});

describe("a store that calls a limiter from inside its read", () => {
  it("each call is decided on its own limit: the inner call's item does not replace the outer's", async () => {
    // The outer limit holds 3; a store whose read decides on another limiter (capacity 1,000)
    // first. A driver that decided on the buffer's last item would grant the 4th outer call.
    const inner = new RateLimiter(new MemoryStore(), { wide: { kind: "token bucket", rate: 1000, period: SECOND, capacity: 1000 } }, { now: () => 0 });
    const memory = new MemoryStore();
    const store = {
      read(ref, info) {
        inner.limit("wide", { key: "inner", count: 2 }).catch(() => {});
        return memory.read(ref, info);
      },
      write: (ref, state, info) => memory.write(ref, state, info),
    };
    const outer = new RateLimiter(store, { narrow: { kind: "token bucket", rate: 3, period: MINUTE } }, { now: () => 0 });
    const answers = [];
    for (let call = 0; call < 4; call++) answers.push((await outer.limit("narrow", { key: "k" })).ok);
    assert.deepEqual(answers, [true, true, true, false]);
    assert.deepEqual(memory.read({ name: "narrow", key: "k", shard: 0 }), { value: 0, ts: 0 });
    assert.equal((await inner.getValue("wide", { key: "inner" })).value, 1000 - 2 * 4);
  });
});

describe("withJitter and time units", () => {
  it("withJitter adds a random delay below maxJitter", () => {
    const samples = Array.from({ length: 200 }, () => withJitter(1000, 500));
    for (const sample of samples) assert.ok(sample >= 1000 && sample < 1500, `${sample}`);
    assert.ok(new Set(samples).size > 100, "the delays are random");
    assert.equal(withJitter(1000, 0), 1000);
  });

  it("withJitter refuses negative or non-finite times", () => {
    for (const [retryAfter, maxJitter] of [[-1, 10], [10, -1], [NaN, 10], [10, Infinity]]) {
      assert.throws(() => withJitter(retryAfter, maxJitter), (error) => error instanceof Error && error.code === "INVALID_REQUEST");
    }
  });

  it("SECOND to WEEK are milliseconds", () => {
    assert.deepEqual([SECOND, MINUTE, HOUR, DAY, WEEK], [1000, 60_000, 3_600_000, 86_400_000, 604_800_000]);
  });
});
