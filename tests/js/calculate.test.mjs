// calculateRateLimit's compiled-config cache and the calculateRateLimits batch.
import { test } from "node:test";
import assert from "node:assert/strict";
import { calculateRateLimit, calculateRateLimits, MemoryStore, MINUTE, RateLimiter } from "../../pkg/dist/node.js";

for (const kind of ["token bucket", "fixed window"]) {
  test(`${kind}: the batch gives each state the answer calculateRateLimit gives it`, () => {
    const config = { kind, rate: 10, period: MINUTE, capacity: 20, ...(kind === "fixed window" ? { start: 0 } : {}) };
    const states = [{ value: 0, ts: 0 }, { value: -3.5, ts: 1000 }, { value: 20, ts: 59_000 }, null];
    const pairs = new Float64Array(states.flatMap((state) => (state === null ? [NaN, 0] : [state.value, state.ts])));
    const answers = calculateRateLimits(pairs, config, 61_000, 2);
    assert.equal(answers.length, states.length * 4);
    states.forEach((state, index) => {
      const one = calculateRateLimit(state, config, 61_000, 2);
      const [value, ts, retryAfter, windowStart] = answers.slice(index * 4, index * 4 + 4);
      assert.ok(Object.is(value, one.value) && Object.is(ts, one.ts), `state ${index}`);
      assert.ok(Object.is(retryAfter, one.retryAfter ?? NaN), `retryAfter of state ${index}`);
      assert.ok(Object.is(windowStart, one.windowStart ?? NaN), `windowStart of state ${index}`);
    });
  });
}

test("a config object changed after its first use is compiled again, not served stale", () => {
  const config = { kind: "token bucket", rate: 10, period: 1000 };
  assert.equal(calculateRateLimit({ value: 0, ts: 0 }, config, 100).value, 1);
  config.rate = 20;
  assert.equal(calculateRateLimit({ value: 0, ts: 0 }, config, 100).value, 2);
  config.rate = -1;
  assert.throws(() => calculateRateLimit({ value: 0, ts: 0 }, config, 100), { code: "INVALID_CONFIG", field: "rate" });
});

test("non-number inputs still get the core's errors", () => {
  const config = { kind: "token bucket", rate: 10, period: 1000 };
  assert.throws(() => calculateRateLimit({ value: "1", ts: 0 }, config, 100), { code: "CORRUPT_STATE" });
  assert.throws(() => calculateRateLimit(null, config, "100"), { code: "INVALID_REQUEST" });
  assert.throws(() => calculateRateLimits(new Float64Array([0, 0]), config, 100, -1), { code: "INVALID_REQUEST" });
  assert.throws(() => calculateRateLimits(new Float64Array([Infinity, 0]), config, 100), { code: "CORRUPT_STATE" });
});

test("configs used in turn each decide on their own numbers (the loaded config follows the call)", () => {
  const slow = { kind: "token bucket", rate: 1, period: 1000 };
  const fast = { kind: "token bucket", rate: 100, period: 1000 };
  const window = { kind: "fixed window", rate: 5, period: 1000, start: 0 };
  for (let round = 0; round < 3; round++) {
    assert.deepEqual(calculateRateLimit({ value: 0, ts: 0 }, slow, 500, 0), { value: 0.5, ts: 500 });
    assert.deepEqual(calculateRateLimit({ value: 0, ts: 0 }, fast, 500, 0), { value: 50, ts: 500 });
    assert.deepEqual(calculateRateLimit({ value: 0, ts: 0 }, window, 2500, 6), { value: -1, ts: 2000, retryAfter: 500, windowStart: 0 });
    assert.deepEqual([...calculateRateLimits(new Float64Array([0, 0]), fast, 500)], [50, 500, NaN, NaN]);
  }
});

test("a zero whose sign changes after first use is compiled again (the answer keeps the sign)", () => {
  const config = { kind: "token bucket", rate: 1, period: 1000, capacity: 0 };
  assert.ok(Object.is(calculateRateLimit({ value: 0, ts: 0 }, config, 10).value, 0));
  config.capacity = -0;
  assert.ok(Object.is(calculateRateLimit({ value: 0, ts: 0 }, config, 10).value, -0));
  assert.ok(Object.is(calculateRateLimit({ value: 0, ts: 0 }, { ...config }, 10).value, -0));
});

test("a config that gains an unknown field between two calls on a state is refused", () => {
  const config = { kind: "token bucket", rate: 10, period: 1000 };
  for (let call = 0; call < 100; call++) calculateRateLimit({ value: 0, ts: 0 }, config, call);
  config.burst = 5;
  assert.throws(() => calculateRateLimit({ value: 0, ts: 0 }, config, 100), { code: "INVALID_CONFIG", field: "burst" });
  delete config.burst;
  assert.equal(calculateRateLimit({ value: 0, ts: 0 }, config, 100).value, 1);
});

test("bad arguments on the fast road still get the core's errors, and change nothing", () => {
  const config = { kind: "token bucket", rate: 10, period: 1000 };
  calculateRateLimit({ value: 0, ts: 0 }, config, 100);
  assert.throws(() => calculateRateLimit({ value: 0, ts: 0 }, config, 100, -1), { code: "INVALID_REQUEST", field: "count" });
  assert.throws(() => calculateRateLimit({ value: 0, ts: 0 }, config, Infinity), { code: "INVALID_REQUEST", field: "now" });
  assert.throws(() => calculateRateLimit({ value: NaN, ts: 0 }, config, 100), { code: "CORRUPT_STATE" });
  assert.deepEqual(calculateRateLimit({ value: 0, ts: 0 }, config, 100), { value: 1, ts: 100 });
});

test("a MemoryStore growing the module's memory between two calls leaves no stale answer", async () => {
  const config = { kind: "token bucket", rate: 10, period: MINUTE, capacity: 20 };
  const state = { value: 3, ts: 1_000 };
  const before = calculateRateLimit(state, config, 7_000, 1);
  // Enough keys for the slab to grow the memory, which detaches every view of the old buffer.
  const limiter = new RateLimiter(new MemoryStore(), { api: config });
  for (let key = 0; key < 20_000; key++) await limiter.limit("api", { key: `k${key}` });
  assert.deepEqual(calculateRateLimit(state, config, 7_000, 1), before);
  assert.deepEqual(calculateRateLimit({ value: -5, ts: 0 }, config, 30_000, 2), { value: -2, ts: 30_000, retryAfter: 12_000 });
});
