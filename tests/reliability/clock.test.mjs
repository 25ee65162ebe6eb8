// Clock trouble (issue 7, item 4), through the package on both paths (a
// MemoryStore's slab and a callback store): clocks that step backwards and
// forwards by a second to ten years, `now = 0`, `now` around 2^53. No state
// stored is ever NaN or infinite; a step back never mints tokens nor moves a
// state's time back; tiny rates over ten simulated years do not drift.
// (tests/reliability_core.rs checks the same in the Rust core, with the
// token-level drift of ten years of hourly writes.)
import { describe, it, after } from "node:test";
import assert from "node:assert/strict";
import { RateLimiter, MemoryStore, calculateRateLimit, SECOND, MINUTE, HOUR, DAY, WEEK } from "../../pkg/dist/node.js";
import { CheckedStore, KINDS, Tally, assertFiniteState, seeded } from "./helpers.mjs";

const tally = new Tally("clock trouble");
after(() => tally.flush());

const YEAR = 365 * DAY;
const TODAY = 1_700_000_000_000;
const TWO_53 = 2 ** 53;
const STEPS = [SECOND, MINUTE, HOUR, DAY, WEEK, YEAR, 10 * YEAR, 0];

/** Every shard state of `name` and `key` in `store` (MemoryStore or CheckedStore both read refs). */
function states(store, name, key, shards) {
  return Array.from({ length: shards }, (_, shard) => store.read(key === undefined ? { name, shard } : { name, key, shard }));
}

/**
 * The rules of one call at `now`, shard by shard: what is stored is two finite
 * numbers; a shard whose time is ahead of `now` keeps its time and gains no
 * tokens (the clock stepped back); any other shard's time never goes back.
 */
function checkStep(before, after, now, capacity, where) {
  for (const [shard, state] of after.entries()) {
    if (state === null) continue;
    assertFiniteState(state, `${where} shard ${shard}`);
    const old = before[shard];
    if (old === null) continue;
    if (old.ts > now) {
      assert.equal(state.ts, old.ts, `${where}: a step back to ${now} moved shard ${shard}'s time`);
      assert.ok(state.value <= Math.min(old.value, capacity), `${where}: a step back minted tokens (${old.value} → ${state.value})`);
    } else {
      assert.ok(state.ts >= old.ts, `${where}: shard ${shard}'s time went back`);
    }
  }
}

function limitersFor(limits, clock, random) {
  const memory = new MemoryStore();
  const callbacks = new CheckedStore();
  const options = { now: () => clock.now, random };
  return [
    { path: "MemoryStore", store: memory, limiter: new RateLimiter(memory, limits, options) },
    { path: "callback store", store: callbacks, limiter: new RateLimiter(callbacks, limits, options) },
  ];
}

describe("a clock that steps backwards and forwards by a second to ten years", () => {
  for (const kind of KINDS) {
    for (const shards of [1, 4]) {
      it(`${kind}, ${shards} shard(s): only finite numbers are stored, and a step back neither mints tokens nor moves a state back`, async () => {
        const config = { kind, rate: 10, period: MINUTE, shards, maxReserved: 20, ...(kind === "fixed window" ? { start: 0 } : {}) };
        const capacity = 10 / shards;
        const clock = { now: TODAY };
        const traffic = seeded(shards * 17 + kind.length);
        for (const { path, store, limiter } of limitersFor({ jumpy: config }, clock, seeded(5))) {
          for (let step = 0; step < 1500; step++) {
            const size = STEPS[Math.floor(traffic() * STEPS.length)];
            clock.now += traffic() < 0.5 ? -size : size;
            const before = states(store, "jumpy", "k", shards);
            const count = Math.floor(traffic() * 6);
            const reserve = traffic() < 0.2;
            const result = await limiter.limit("jumpy", { key: "k", count, reserve });
            checkStep(before, states(store, "jumpy", "k", shards), clock.now, capacity, `${path} step ${step}`);
            if (!result.ok) assert.ok(Number.isFinite(result.retryAfter) && result.retryAfter >= 0, `${path} step ${step}: ${JSON.stringify(result)}`);
          }
          tally.add("decisions checked", 1500);
          tally.add("clock steps", 1500);
        }
      });
    }
  }
});

describe("now = 0 and now around 2^53", () => {
  const INSTANTS = [0, -0, 1, TWO_53 - 2, TWO_53 - 1, TWO_53, TWO_53 + 2, 2 * TWO_53, -TWO_53, 8.64e15, -8.64e15];
  for (const kind of KINDS) {
    it(`${kind}: decides, stores only finite numbers, and answers finite waits at every instant`, async () => {
      for (const first of INSTANTS) {
        const clock = { now: first };
        const limits = { edge: { kind, rate: 5, period: SECOND }, wide: { kind, rate: 15, period: SECOND, shards: 3 } };
        for (const { path, store, limiter } of limitersFor(limits, clock, seeded(1))) {
          for (const offset of [0, 0, 0, 1, 2, 3, SECOND, 2 * SECOND]) {
            clock.now = first + offset;
            for (const name of ["edge", "wide"]) {
              const result = await limiter.limit(name, { count: 2 });
              tally.add("decisions checked");
              if (!result.ok) assert.ok(Number.isFinite(result.retryAfter) && result.retryAfter >= 0, `${path} at ${clock.now}: ${JSON.stringify(result)}`);
            }
          }
          for (const state of [...states(store, "edge", undefined, 1), ...states(store, "wide", undefined, 3)]) {
            if (state !== null) assertFiniteState(state, `${path} from ${first}`);
          }
          // And the preview agrees that the stored state is a state.
          const { value, ts } = await limiter.getValue("edge");
          assert.ok(Number.isFinite(calculateRateLimit({ value, ts }, limits.edge, clock.now + SECOND).value));
        }
      }
    });
  }
});

describe("tiny rates over long runs", () => {
  for (const kind of KINDS) {
    it(`${kind}: one token a week, retried exactly at retryAfter for ten years, is granted on the week within 1 ms, every week`, async () => {
      const clock = { now: TODAY };
      const config = { kind, rate: 1, period: WEEK, ...(kind === "fixed window" ? { start: TODAY } : {}) };
      for (const { path, limiter } of limitersFor({ weekly: config }, clock, seeded(2))) {
        clock.now = TODAY;
        let grants = 0;
        let calls = 0;
        let worstDrift = 0;
        while (clock.now < TODAY + 10 * YEAR) {
          const result = await limiter.limit("weekly");
          calls += 1;
          if (result.ok) {
            worstDrift = Math.max(worstDrift, Math.abs(clock.now - (TODAY + grants * WEEK)));
            grants += 1;
          } else {
            assert.ok(result.retryAfter > 0, `${path}: ${JSON.stringify(result)}`);
            clock.now += result.retryAfter;
          }
          assert.ok(calls < 5000, `${path}: retries do not converge`);
        }
        assert.equal(grants, Math.ceil((10 * YEAR) / WEEK), path);
        assert.ok(worstDrift <= 1, `${path}: a grant drifted ${worstDrift} ms from its week`);
        tally.add("decisions checked", calls);
      }
    });
  }
});

describe("the clock checks can fail", () => {
  it("a limiter that moves a state back, mints on a step back, or stores NaN is caught", () => {
    const ahead = [{ value: 3, ts: TODAY + YEAR }];
    checkStep(ahead, [{ value: 2, ts: TODAY + YEAR }], TODAY, 10, "honest");
    assert.throws(() => checkStep(ahead, [{ value: 2, ts: TODAY }], TODAY, 10, "moved back"), /moved shard 0's time/);
    assert.throws(() => checkStep(ahead, [{ value: 4, ts: TODAY + YEAR }], TODAY, 10, "minted"), /minted tokens/);
    assert.throws(() => checkStep([{ value: 3, ts: TODAY }], [{ value: 3, ts: TODAY - 1 }], TODAY + 5, 10, "went back"), /went back/);
    assert.throws(() => checkStep([null], [{ value: NaN, ts: TODAY }], TODAY, 10, "NaN"), /non-finite/);
    assert.throws(() => checkStep([null], [{ value: 1, ts: Infinity }], TODAY, 10, "Infinity"), /non-finite/);
  });
});
