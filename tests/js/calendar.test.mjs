// Calendar quotas through the public API (issue 32 item 3): a fixed window whose period is "day",
// "week", "month" or "year" (UTC) from a `start` anchor. The windows are the core's (src/calendar.rs
// has the civil-date tests); these check what a caller sees: limit, check, getValue, figures,
// calculateRateLimit, and the coded errors of a bad period.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { MemoryStore, RateLimiter, RateboundError, calculateRateLimit } from "../../pkg/dist/node.js";
import { manualClock } from "./helpers.mjs";

const DAY = 86_400_000;
const utc = (...parts) => Date.UTC(...parts);

/** A limiter over a MemoryStore (its one-crossing road) and one over a store that hides it (the general road). */
function limiters(limits, clock) {
  const inner = new MemoryStore();
  const hidden = { read: (ref) => inner.read(ref), write: (ref, state, info) => inner.write(ref, state, info) };
  return [new RateLimiter(new MemoryStore(), limits, { now: clock.read }), new RateLimiter(hidden, limits, { now: clock.read })];
}

describe("calendar quotas through the public API", () => {
  test("a monthly quota anchored on the 31st renews on Feb 29, Mar 31 and Apr 30, and says when", async () => {
    const clock = manualClock(utc(2024, 1, 20, 15));
    for (const limiter of limiters({ billing: { kind: "fixed window", rate: 2, period: "month", start: utc(2024, 0, 31) } }, clock)) {
      clock.now = utc(2024, 1, 20, 15);
      assert.equal((await limiter.limit("billing", { key: "acme", count: 2 })).ok, true);
      const refused = await limiter.limit("billing", { key: "acme" });
      assert.deepEqual(refused, { ok: false, retryAfter: utc(2024, 1, 29) - clock.now });
      for (const [renewal, next] of [[utc(2024, 1, 29), utc(2024, 2, 31)], [utc(2024, 2, 31), utc(2024, 3, 30)], [utc(2024, 3, 30), utc(2024, 4, 31)]]) {
        clock.now = renewal - 1;
        assert.equal((await limiter.check("billing", { key: "acme" })).ok, false, `still spent 1 ms before ${new Date(renewal).toISOString()}`);
        clock.now = renewal;
        assert.equal((await limiter.limit("billing", { key: "acme", count: 2 })).ok, true, `renewed at ${new Date(renewal).toISOString()}`);
        assert.equal((await limiter.limit("billing", { key: "acme" })).retryAfter, next - renewal);
      }
    }
  });

  test("without start, days begin at midnight UTC, weeks on Monday, months on the 1st, years on Jan 1, never at random", async () => {
    const now = utc(2026, 10, 28, 18); // a Saturday
    const clock = manualClock(now);
    const limits = {
      day: { kind: "fixed window", rate: 1, period: "day" },
      week: { kind: "fixed window", rate: 1, period: "week" },
      month: { kind: "fixed window", rate: 1, period: "month" },
      year: { kind: "fixed window", rate: 1, period: "year" },
    };
    const ends = { day: utc(2026, 10, 29), week: utc(2026, 10, 30), month: utc(2026, 11, 1), year: utc(2027, 0, 1) };
    const limiter = new RateLimiter(new MemoryStore(), limits, { now: clock.read, random: () => 0.999 });
    for (const name of Object.keys(limits)) {
      await limiter.limit(name);
      assert.equal((await limiter.limit(name)).retryAfter, ends[name] - now, name);
      const { config } = await limiter.getValue(name);
      assert.deepEqual([config.period, config.start], [name, name === "week" ? 4 * DAY : 0], `${name}: getValue reports the anchor`);
    }
  });

  test("figures reset at the end of the current window and show its length", async () => {
    const clock = manualClock(utc(2026, 1, 27));
    const limiter = new RateLimiter(new MemoryStore(), { monthly: { kind: "fixed window", rate: 10, period: "month" } }, { now: clock.read });
    const { figures } = await limiter.limit("monthly", { count: 4, figures: true });
    assert.deepEqual([figures.limit, figures.remaining, figures.reset, figures.window], [10, 6, 2 * 86_400, 28 * 86_400]);
  });

  test("calculateRateLimit takes a calendar period and starts a fresh state at its window's start", () => {
    const fresh = calculateRateLimit(null, { kind: "fixed window", rate: 3, period: "week" }, utc(2026, 10, 28, 18), 1);
    assert.deepEqual(fresh, { value: 2, ts: utc(2026, 10, 23), windowStart: utc(2026, 10, 23) });
    const spent = calculateRateLimit({ value: 0, ts: utc(2026, 10, 23) }, { kind: "fixed window", rate: 3, period: "week" }, utc(2026, 10, 28, 18), 1);
    assert.equal(spent.retryAfter, utc(2026, 10, 30) - utc(2026, 10, 28, 18));
  });

  test("a bad period, a calendar token bucket, a sharded calendar quota and a clock past 2^53 are coded errors naming the field", async () => {
    const cases = [
      [{ kind: "fixed window", rate: 1, period: "fortnight" }, "period", /period must be a positive finite number of ms, or "day", "week", "month" or "year" \(got "fortnight"\)/],
      [{ kind: "fixed window", rate: 1, period: "Day" }, "period", /got "Day"/],
      [{ kind: "token bucket", rate: 1, period: "day" }, "period", /period must be a number of ms for a token bucket/],
      [{ kind: "fixed window", rate: 4, period: "week", shards: 2 }, "shards", /shards must be 1 for a calendar period \(got 2\)/],
    ];
    for (const [config, field, message] of cases) {
      assert.throws(() => new RateLimiter(new MemoryStore(), { bad: config }), (error) => error instanceof RateboundError && error.code === "INVALID_CONFIG" && error.field === field && message.test(error.message));
    }
    const limiter = new RateLimiter(new MemoryStore(), { daily: { kind: "fixed window", rate: 1, period: "day" } }, { now: () => 1e16 });
    await assert.rejects(limiter.limit("daily"), (error) => error.code === "INVALID_REQUEST" && error.field === "now" && /for a calendar period/.test(error.message));
  });
});
