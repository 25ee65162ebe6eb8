// The bounded-store property (issue 18): a MemoryStore with a small
// `maxKeys` decides exactly as an unbounded one. Seeded random traffic over
// many keys and a moving clock goes to both stores, call by call, for both
// kinds, with and without `start` (past and future), sharded and not, on the
// fast path (named limits, short keys) and through the callbacks (inline
// configs, keys over 341 UTF-16 units). Whenever the bounded store answers,
// its answer equals the unbounded one's; it may instead fail with STORE_FULL
// (then the call is not made on the unbounded store either: a failed call
// writes nothing). Evictions are counted, and must have happened, so the
// test can fail; a fixed window without `start`, and a limit with 3 or more
// shards, are never evicted (they fail with STORE_FULL instead).
import { describe, it, after } from "node:test";
import assert from "node:assert/strict";
import { RateLimiter, MemoryStore, calculateRateLimit, SECOND, MINUTE } from "../../pkg/dist/node.js";
import { Tally, seeded } from "./helpers.mjs";

const tally = new Tally("bounded store = unbounded store");
after(() => tally.flush());

const T = 1_700_000_000_000;
const STEPS = 3000;
const KEYS = 40;
const MAX_KEYS = 6;
const LONG = "x".repeat(350);

const CONFIGS = {
  "token bucket": { kind: "token bucket", rate: 5, period: SECOND, capacity: 5, maxReserved: 3 },
  "sharded token bucket": { kind: "token bucket", rate: 8, period: SECOND, shards: 4 },
  "two-shard token bucket": { kind: "token bucket", rate: 3, period: 2 * SECOND, shards: 2, maxReserved: 2 },
  "fixed window without start": { kind: "fixed window", rate: 5, period: SECOND, maxReserved: 3 },
  "fixed window with a past start": { kind: "fixed window", rate: 5, period: SECOND, start: T - 12_345.5 },
  "fixed window with a future start": { kind: "fixed window", rate: 5, period: SECOND, start: T + 20 * SECOND },
  "sharded fixed window with a start": { kind: "fixed window", rate: 8, period: SECOND, start: 250, shards: 4, maxReserved: 4 },
};

/**
 * One call of the traffic, on `limiter`: through the fast path (a named
 * limit, a short key) or the callbacks (an inline config, or a long key).
 */
function call(limiter, { op, path, key, count, reserve, config }) {
  const name = path === "inline" ? "inline" : "limit";
  const fullKey = path === "long key" ? `${key}${LONG}` : key;
  const options = { key: fullKey, ...(path === "inline" ? { config } : {}) };
  if (op === "getValue") return limiter.getValue(name, options);
  return limiter[op](name, { ...options, count, reserve });
}

/**
 * The answer as data: a result, an error's code, or for getValue the state
 * projected to `now` (a dropped, full state and the stored one project alike;
 * their stored `ts` may differ, which changes no decision).
 */
async function answer(promise, now) {
  try {
    const result = await promise;
    if (result !== null && typeof result === "object" && "config" in result) {
      const { value, ts } = calculateRateLimit({ value: result.value, ts: result.ts }, result.config, now);
      return { value: { value, ts, shard: result.shard, config: result.config } };
    }
    return { result };
  } catch (error) {
    assert.equal(typeof error.code, "string", `an error without a code: ${error}`);
    return { code: error.code };
  }
}

/**
 * Random numbers per call: every call starts the sequence of its own seed, so
 * both limiters draw the same numbers for the same call even when one of them
 * skipped a call (STORE_FULL).
 */
function perCall() {
  let next = seeded(1);
  return { random: () => next(), use: (seed) => (next = seeded(seed)) };
}

async function compare(label, config, { paths, clockSteps, seed }) {
  const traffic = seeded(seed);
  const clock = { now: T };
  const draws = perCall();
  const options = { now: () => clock.now, random: draws.random };
  const bounded = new MemoryStore({ maxKeys: MAX_KEYS });
  const unbounded = new MemoryStore();
  const boundedLimiter = new RateLimiter(bounded, { limit: config }, options);
  const unboundedLimiter = new RateLimiter(unbounded, { limit: config }, options);
  const capacity = config.capacity ?? config.rate;
  const perShard = (config.shards ?? 1) < 3 ? capacity / (config.shards ?? 1) : capacity / (config.shards / 2);
  const counts = { compared: 0, storeFull: 0, evictions: 0, refusals: 0 };
  for (let step = 0; step < STEPS; step++) {
    const roll = traffic();
    const op = roll < 0.8 ? "limit" : roll < 0.95 ? "check" : "getValue";
    // Few keys are hot; most come back only after a while (so they refill and may be evicted).
    const key = traffic() < 0.5 ? `hot${Math.floor(traffic() * 3)}` : `k${Math.floor(traffic() * KEYS)}`;
    const request = {
      op,
      path: paths[Math.floor(traffic() * paths.length)],
      key,
      count: [0, 1, 1, 2, Math.min(perShard, 3)][Math.floor(traffic() * 5)],
      reserve: config.maxReserved !== undefined && traffic() < 0.3,
      config,
    };
    const step_ms = clockSteps[Math.floor(traffic() * clockSteps.length)];
    clock.now += step_ms * traffic();
    const before = { bounded: bounded.keyCount, unbounded: unbounded.keyCount };
    draws.use(seed * 100_000 + step);
    const fromBounded = await answer(call(boundedLimiter, request), clock.now);
    if (fromBounded.code === "STORE_FULL") {
      counts.storeFull += 1;
      continue;
    }
    draws.use(seed * 100_000 + step);
    const fromUnbounded = await answer(call(unboundedLimiter, request), clock.now);
    assert.deepEqual(fromBounded, fromUnbounded, `${label}, step ${step} at ${clock.now}: ${JSON.stringify({ ...request, config: undefined })}`);
    counts.compared += 1;
    if (fromBounded.result?.ok === false) counts.refusals += 1;
    const grew = unbounded.keyCount - before.unbounded - (bounded.keyCount - before.bounded);
    if (grew > 0) counts.evictions += grew;
    assert.ok(bounded.keyCount <= MAX_KEYS, `${label}: the bounded store holds ${bounded.keyCount} keys`);
  }
  tally.add("decisions checked", counts.compared);
  tally.add("bounded = unbounded decisions", counts.compared);
  tally.add("STORE_FULL", counts.storeFull);
  tally.add("evictions", counts.evictions);
  return counts;
}

const PATHS = {
  "the fast path (named limits, short keys)": ["named"],
  "the callbacks (inline configs, keys over 341 units)": ["inline", "long key"],
  "both paths, mixed": ["named", "inline", "long key"],
};
const CLOCKS = {
  "a clock moving forward": [0, 50, 200, SECOND, 5 * SECOND, MINUTE],
  "a clock that also steps back": [0, 50, 200, SECOND, 5 * SECOND, MINUTE, -SECOND, -5 * SECOND],
};

// Issue 24 (item 11): a state dropped once full, then a clock stepped back before its fullAt, used
// to find the key full (granting up to a capacity more). A missing key read before the latest
// dropped state's fullAt is now STORE_FULL, which this property accepts.
describe("a bounded MemoryStore decides exactly as an unbounded one", () => {
  let seed = 1;
  for (const [label, config] of Object.entries(CONFIGS)) {
    for (const [pathLabel, paths] of Object.entries(PATHS)) {
      for (const [clockLabel, clockSteps] of Object.entries(CLOCKS)) {
        const mySeed = seed++;
        // Never dropped: a fixed window without start (its windows were drawn at random when it was
        // created), and a limit with 3+ shards (whether a shard is stored decides whether a second is read).
        const evictable = !(config.kind === "fixed window" && config.start === undefined) && (config.shards ?? 1) < 3;
        it(`${label}, ${pathLabel}, ${clockLabel}: every answer of a maxKeys ${MAX_KEYS} store equals the unbounded store's, or is STORE_FULL`, async () => {
          const counts = await compare(`${label}, ${pathLabel}`, config, { paths, clockSteps, seed: mySeed });
          // A store whose keys are never dropped fills and then refuses most new keys.
          assert.ok(counts.compared > STEPS / (evictable ? 4 : 10), `only ${counts.compared} answers compared: ${JSON.stringify(counts)}`);
          if (!evictable) {
            assert.equal(counts.evictions, 0, `a key that must never be dropped was evicted: ${JSON.stringify(counts)}`);
            assert.ok(counts.storeFull > 0, `the store never filled: ${JSON.stringify(counts)}`);
          } else {
            assert.ok(counts.refusals > 0, `no refusal in the traffic: ${JSON.stringify(counts)}`);
            assert.ok(counts.evictions > 20, `too few evictions to test anything: ${JSON.stringify(counts)}`);
          }
        });
      }
    }
  }
});
