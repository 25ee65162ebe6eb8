// Asynchronous limits (`applyUpdates: "asynchronously"`, @convex-dev/rate-limiter 0.4) in ratebound's
// component, beyond what the reference's published tests cover: how far a burst overdraws, how long
// the limit then refuses, a reset queued behind consumption, and ratebound's `headroom` cap. The app
// (./app/convex/queued.js) registers the component through `ratebound/convex-component/test`.
import { convexTest } from "convex-test";
import { RateLimiter } from "ratebound/convex-component";
import rateLimiterTest from "ratebound/convex-component/test";
import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import { api } from "./app/convex/_generated/api.js";
import { HEADROOM } from "./app/convex/queued.js";
import schema from "./app/convex/schema.js";

const modules = import.meta.glob("./app/convex/**/*.*s");
const start = Date.UTC(2026, 0, 1);
const HOUR = 3_600_000;
const at = (ms) => vi.setSystemTime(start + ms);
beforeEach(() => {
  vi.useFakeTimers();
  at(0);
});
afterEach(() => vi.useRealTimers());

function app() {
  const t = convexTest(schema, modules);
  rateLimiterTest.register(t);
  return t;
}

/** Runs the worker until the queue is empty, then puts the clock back to `ms`. */
async function drain(t, ms = 0) {
  await t.finishAllScheduledFunctions(vi.runAllTimers);
  at(ms);
}
const stored = (t, name) =>
  t.runInComponent("rateLimiter", async (ctx) => {
    const rows = await ctx.db.query("rateLimits").collect();
    return rows.filter((row) => row.name === name).map(({ value, ts, shard }) => ({ value, ts, shard }));
  });
const queued = (t) => t.runInComponent("rateLimiter", async (ctx) => (await ctx.db.query("pendingUpdates").collect()).length);
const granted = (results) => results.filter((result) => result.ok).length;

const KINDS = { "token bucket": "Bucket", "fixed window": "Window" };

describe.each(Object.keys(KINDS))("%s, 10 tokens an hour, applied asynchronously", (kind) => {
  const queuedLimit = `queued${KINDS[kind]}`;
  const exactLimit = `exact${KINDS[kind]}`;
  const cappedLimit = `capped${KINDS[kind]}`;
  /** Milliseconds until `needed` tokens are back, as the core computes them for 10 tokens an hour. */
  const recovery = (needed) => (kind === "token bucket" ? (needed * HOUR) / 10 : Math.ceil(needed / 10) * HOUR);

  test("a burst of 25 callers on one snapshot is granted in full (the transactional limit grants 10), the worker drives the limit to -15, and it refuses until recovered", async () => {
    const t = app();
    expect(granted(await t.mutation(api.queued.burst, { name: queuedLimit, callers: 25 }))).toBe(25);
    expect(granted(await t.mutation(api.queued.burst, { name: exactLimit, callers: 25 }))).toBe(10);
    // Nothing is applied yet: the 25 consumptions wait in the queue.
    expect(await stored(t, queuedLimit)).toEqual([]);
    expect(await queued(t)).toBe(25);
    await drain(t);
    expect(await queued(t)).toBe(0);
    expect(await stored(t, queuedLimit)).toEqual([{ value: -15, ts: start, shard: 0 }]);
    expect(await stored(t, exactLimit)).toEqual([{ value: 0, ts: start, shard: 0 }]);

    const refused = await t.query(api.queued.check, { name: queuedLimit });
    expect(refused).toEqual({ ok: false, retryAfter: recovery(16) });
    at(refused.retryAfter - 1);
    expect((await t.mutation(api.queued.limit, { name: queuedLimit })).ok).toBe(false);
    expect(await queued(t)).toBe(0); // a refusal queues nothing
    at(refused.retryAfter);
    expect(await t.mutation(api.queued.limit, { name: queuedLimit })).toEqual({ ok: true });
    expect(await queued(t)).toBe(1);
  });

  test("the most a burst of N callers overdraws is (N - 1) × count: 6 callers of 2 tokens against a snapshot holding 2 leave -10", async () => {
    const t = app();
    expect(granted(await t.mutation(api.queued.burst, { name: queuedLimit, callers: 4, count: 2 }))).toBe(4);
    await drain(t);
    expect((await stored(t, queuedLimit))[0].value).toBe(2);
    expect(granted(await t.mutation(api.queued.burst, { name: queuedLimit, callers: 6, count: 2 }))).toBe(6);
    await drain(t);
    expect((await stored(t, queuedLimit))[0].value).toBe(-(6 - 1) * 2);
    // Once applied, the debt is seen: the next burst gets nothing.
    expect(granted(await t.mutation(api.queued.burst, { name: queuedLimit, callers: 6, count: 2 }))).toBe(0);
    expect(await queued(t)).toBe(0);
  });

  test("a reset queued behind consumption applies in order: what was taken before it is forgotten, what comes after it counts", async () => {
    const t = app();
    for (let i = 0; i < 3; i++) await t.mutation(api.queued.limit, { name: queuedLimit, key: "ada" });
    await drain(t);
    expect(await stored(t, queuedLimit)).toEqual([{ value: 7, ts: start, shard: 0 }]);
    await t.mutation(api.queued.reset, { name: queuedLimit, key: "ada" });
    for (let i = 0; i < 2; i++) await t.mutation(api.queued.limit, { name: queuedLimit, key: "ada" });
    // Still queued: the state, and the stale check, are what they were.
    expect((await t.query(api.queued.getValue, { name: queuedLimit, key: "ada" })).value).toBe(7);
    expect(await queued(t)).toBe(3);
    await drain(t);
    expect((await stored(t, queuedLimit))[0].value).toBe(8);
  });

  test(`headroom ${HEADROOM}: bursts of up to 1 + headroom / count callers never overdraw (the same bursts without headroom do)`, async () => {
    const t = app();
    for (const [limit, grantedEach] of [
      [cappedLimit, [3, 5, 2, 0]],
      [queuedLimit, [3, 5, 5, 0]],
    ]) {
      const values = [];
      for (const [i, callers] of [3, 5, 5, 5].entries()) {
        expect(granted(await t.mutation(api.queued.burst, { name: limit, callers })), `${limit} burst ${i}`).toBe(grantedEach[i]);
        await drain(t);
        values.push((await stored(t, limit))[0].value);
      }
      expect(values).toEqual(limit === cappedLimit ? [7, 2, 0, 0] : [7, 2, -3, -3]);
    }
  });

  test("callers one after another while the worker lags: without headroom they check the stored state only and overdraw (the reference's behaviour); with headroom they count the queue and stop at 10", async () => {
    const t = app();
    const one = async (name) => (await t.mutation(api.queued.limit, { name })).ok;
    const results = { [queuedLimit]: [], [cappedLimit]: [] };
    for (let i = 0; i < 12; i++) for (const name of Object.keys(results)) results[name].push(await one(name));
    expect(results[queuedLimit].filter(Boolean)).toHaveLength(12);
    expect(results[cappedLimit].filter(Boolean)).toHaveLength(10);
    await drain(t);
    expect((await stored(t, queuedLimit))[0].value).toBe(-2);
    expect((await stored(t, cappedLimit))[0].value).toBe(0);
  });

  test("check answers as limit would: with headroom it counts the queue, and a count that can never be granted throws the reference's error", async () => {
    const t = app();
    for (const name of [queuedLimit, cappedLimit]) await t.mutation(api.queued.limit, { name, count: 10 });
    expect(await t.query(api.queued.check, { name: queuedLimit })).toEqual({ ok: true }); // the stored state only
    expect(await t.query(api.queued.check, { name: cappedLimit })).toEqual({ ok: false, retryAfter: recovery(1) });
    for (const name of [queuedLimit, cappedLimit]) {
      await expect(t.query(api.queued.check, { name, count: 11 })).rejects.toThrow(`Rate limit ${name} count 11 exceeds 10.`);
      await expect(t.mutation(api.queued.limit, { name, count: 11 })).rejects.toThrow(`Rate limit ${name} count 11 exceeds 10.`);
    }
  });

  test(`headroom ${HEADROOM}: a larger burst overdraws at most (N - 1) × count - headroom, the bound reached from a snapshot holding count + headroom`, async () => {
    const t = app();
    expect(granted(await t.mutation(api.queued.burst, { name: cappedLimit, callers: 5 }))).toBe(5);
    await drain(t);
    expect((await stored(t, cappedLimit))[0].value).toBe(1 + HEADROOM);
    expect(granted(await t.mutation(api.queued.burst, { name: cappedLimit, callers: 8 }))).toBe(8);
    await drain(t);
    expect((await stored(t, cappedLimit))[0].value).toBe(-((8 - 1) * 1 - HEADROOM));
  });

  test("headroom: below count + headroom every caller takes the exact path, which counts what is queued: no overdraft, and throws as limit does", async () => {
    const t = app();
    expect(granted(await t.mutation(api.queued.burst, { name: cappedLimit, callers: 6 }))).toBe(6);
    await drain(t);
    expect((await stored(t, cappedLimit))[0].value).toBe(4);
    // 4 < 1 + headroom: 12 callers are decided one after another, each seeing the ones before.
    expect(granted(await t.mutation(api.queued.burst, { name: cappedLimit, callers: 12 }))).toBe(4);
    expect(await queued(t)).toBe(4);
    const error = await t.mutation(api.queued.limit, { name: cappedLimit, throws: true }).catch((caught) => caught);
    expect(error.data).toEqual({ kind: "RateLimited", name: cappedLimit, retryAfter: recovery(1) });
    await drain(t);
    expect((await stored(t, cappedLimit))[0].value).toBe(0);
  });
});

describe("asynchronous limits: what the client refuses", () => {
  test("an asynchronous limit can't be sharded, as the reference's client says", async () => {
    const t = app();
    const limiter = new RateLimiter({ lib: {} }, { sharded: { kind: "token bucket", rate: 1, period: HOUR, applyUpdates: "asynchronously", shards: 2 } });
    await expect(t.run((ctx) => limiter.limit(ctx, "sharded"))).rejects.toThrow("Rate limit sharded applies updates asynchronously and can't be sharded.");
  });

  test("headroom must be a finite number >= 0, and only for asynchronous limits", () => {
    const limits = { exact: { kind: "token bucket", rate: 1, period: HOUR }, queued: { kind: "token bucket", rate: 1, period: HOUR, applyUpdates: "asynchronously" } };
    expect(() => new RateLimiter({}, limits, { headroom: { queued: -1 } })).toThrow("Rate limit queued: headroom must be a finite number >= 0 (got -1)");
    expect(() => new RateLimiter({}, limits, { headroom: { queued: Number.NaN } })).toThrow(/got NaN/);
    expect(() => new RateLimiter({}, limits, { headroom: { exact: 1 } })).toThrow('Rate limit exact: headroom applies only to limits with applyUpdates: "asynchronously"');
  });
});
