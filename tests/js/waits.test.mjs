// A decision's retryAfter is whole milliseconds, rounded up (issue 25, item 16: waits such as
// 5973.000000000001 ms). Timers drop a wait's fraction, so a fractional wait scheduled as given
// fires early; rounded up it never is. The transition, calculateRateLimit, keeps the reference's
// exact float (SPEC: bit for bit).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { RateLimiter, MemoryStore, calculateRateLimit, decideRateLimit } from "../../pkg/dist/node.js";

// 3 tokens a second: one token takes 333.33… ms, so every wait here has a fraction.
const thirds = { kind: "token bucket", rate: 3, period: 1000 };

describe("a decision's retryAfter is whole ms, rounded up, and never early", () => {
  it("a refusal's wait: 334 ms where the transition says 333.33… ms, and the retry then is granted", async () => {
    let now = 1_000_000;
    const limiter = new RateLimiter(new MemoryStore(), { thirds }, { now: () => now });
    for (let index = 0; index < 3; index++) assert.equal((await limiter.limit("thirds")).ok, true);
    const refused = await limiter.limit("thirds");
    const exact = calculateRateLimit({ value: 0, ts: now }, thirds, now, 1).retryAfter;
    assert.ok(!Number.isInteger(exact), `the transition's wait has a fraction (${exact})`);
    assert.deepEqual(refused, { ok: false, retryAfter: Math.ceil(exact) });
    now += refused.retryAfter - 1;
    assert.equal((await limiter.check("thirds")).ok, false, "1 ms before the wait, still refused");
    now += 1;
    assert.equal((await limiter.limit("thirds")).ok, true, "at the wait, granted");
  });

  it("a reservation's wait is rounded up too, and so is a throwing refusal's", async () => {
    const now = 5_000;
    const limiter = new RateLimiter(new MemoryStore(), { thirds }, { now: () => now });
    const reserved = await limiter.limit("thirds", { count: 4, reserve: true });
    assert.deepEqual(reserved, { ok: true, retryAfter: 334 });
    await assert.rejects(limiter.limit("thirds", { throws: true }), (error) => error.code === "RATE_LIMITED" && error.data.retryAfter === 667);
  });

  it("decideRateLimit (the preview's decision) answers the same whole ms", () => {
    const decided = decideRateLimit({ value: 0, ts: 0 }, thirds, 0, { count: 1 });
    assert.equal(decided.retryAfter, 334);
  });
});
