// Faults (issue 7, item 3): a store that throws, rejects, answers a corrupt
// state, or answers late, injected at random into a concurrent workload.
// Every call either decides correctly or rejects; the limit never admits past
// its bound; no state is left half-written. And the sharded two-shard write
// whose second write fails: the first shard's tokens are spent, nothing is
// admitted, never more than the bound.
import { describe, it, after } from "node:test";
import assert from "node:assert/strict";
import { RateLimiter, MemoryStore, SECOND } from "../../pkg/dist/node.js";
import { CheckedStore, FaultyStore, FAULTS, Tally, TransactionalHost, seeded } from "./helpers.mjs";

const tally = new Tally("faults");
after(() => tally.flush());

const START = 1_700_000_000_000;

/** Limits of every shape, their windows aligned to START (fixed windows), so the bound is exact per window. */
const LIMITS = {
  bucket: { kind: "token bucket", rate: 10, period: SECOND, capacity: 15 },
  window: { kind: "fixed window", rate: 12, period: SECOND, start: START },
  shardedBucket: { kind: "token bucket", rate: 40, period: SECOND, shards: 4 },
  shardedWindow: { kind: "fixed window", rate: 40, period: SECOND, shards: 5, start: START },
  reserving: { kind: "token bucket", rate: 10, period: SECOND, maxReserved: 5 },
};
const KEYS = ["ada", "bob", undefined];

/**
 * Checks that a limit never admitted past its bound, over every stretch of
 * its grants (in the order they took effect), not only from the start:
 *
 *   admitted(i..j) <= capacity + maxReserved + refill(lo, hi)
 *
 * where lo and hi are the earliest and latest `now` in the stretch, and
 * refill is `rate × (hi - lo) / period` for a token bucket and
 * `rate × ceil((hi - lo) / period)` for a fixed window (the window edges in
 * (lo, hi]). In commit order `now` can go backwards (calls commit out of
 * order); a state's time never does, so a step back refills nothing (the
 * derivation is in tests/properties.rs). Returns how many grants were checked.
 */
function checkBound(name, grants) {
  const config = LIMITS[name];
  const capacity = config.capacity ?? config.rate;
  const debt = config.maxReserved ?? 0;
  const refill = (span) => (config.kind === "fixed window" ? config.rate * Math.ceil(span / config.period) : (config.rate * span) / config.period);
  for (let i = 0; i < grants.length; i++) {
    let admitted = 0;
    let lo = grants[i].now;
    let hi = grants[i].now;
    for (let j = i; j < grants.length; j++) {
      admitted += grants[j].count;
      lo = Math.min(lo, grants[j].now);
      hi = Math.max(hi, grants[j].now);
      const bound = capacity + debt + refill(hi - lo);
      assert.ok(admitted <= bound + 1e-9, `${name}: grants ${i}..${j} admitted ${admitted} > bound ${bound} (over ${hi - lo} ms)`);
    }
  }
  return grants.length;
}

/** The calls of a workload: each at its own instant, with its own request, made up front from `seed`. */
function workload(seed, calls) {
  const traffic = seeded(seed);
  const pick = (list) => list[Math.floor(traffic() * list.length)];
  let now = START;
  return Array.from({ length: calls }, (_, index) => {
    now += Math.floor(traffic() * 25);
    const name = pick(Object.keys(LIMITS));
    const reserve = name === "reserving" && traffic() < 0.5;
    const count = name.startsWith("sharded") ? 1 + Math.floor(traffic() * 12) : 1 + Math.floor(traffic() * 4);
    return { index, now, name, key: pick(KEYS), count, reserve, batch: traffic() < 0.15 ? pick(Object.keys(LIMITS)) : null };
  });
}

/** Runs one call of the workload on `store`: limit, or limitAll with a second limit. Returns the result, and the draws it used. */
async function decide(store, call, randomSeed) {
  const source = seeded(randomSeed);
  const draws = [];
  const random = () => {
    const drawn = source();
    draws.push(drawn);
    return drawn;
  };
  const limiter = new RateLimiter(store, LIMITS, { now: () => call.now, random });
  const request = { key: call.key, count: call.count, reserve: call.reserve };
  const result = call.batch
    ? await limiter.limitAll([{ name: call.name, ...request }, { name: call.batch, key: call.key }])
    : await limiter.limit(call.name, request);
  return { result, draws };
}

/** A random source that replays recorded draws. */
const replaying = (draws) => {
  let next = 0;
  return () => draws[next++];
};

/** Whether `error` is one a faulty store can cause: its own injected error, or a corrupt state it answered. */
const isFaultError = (error) => error instanceof Error && (error.message.startsWith("injected:") || error.code === "CORRUPT_STATE");

describe("a concurrent workload on a transactional host, with store faults injected at random", () => {
  for (const seed of [1, 2, 3]) {
    it(`seed ${seed}: every call decides or rejects with the fault; the committed calls replay exactly; no limit passes its bound`, async () => {
      const host = new TransactionalHost();
      const faults = seeded(seed * 1000);
      const calls = workload(seed, 1500);
      const committed = [];
      const injected = {};
      let rejected = 0;
      // 1,500 calls, 40 in flight at a time: they interleave at every late answer.
      for (let wave = 0; wave < calls.length; wave += 40) {
        await Promise.all(
          calls.slice(wave, wave + 40).map(async (call) => {
            try {
              let attempt = 0;
              const { value, commit } = await host.run(async (tx) => {
                attempt += 1;
                const store = new FaultyStore(tx, faults, { faultRate: 0.08 });
                try {
                  return await decide(store, call, seed * 7919 + call.index * 31 + attempt);
                } finally {
                  for (const [fault, count] of Object.entries(store.injected)) injected[fault] = (injected[fault] ?? 0) + count;
                }
              });
              committed.push({ call, commit, ...value });
            } catch (error) {
              assert.ok(isFaultError(error), `call ${call.index} failed with something other than a fault: ${error?.stack ?? error}`);
              rejected += 1;
            }
          }),
        );
      }
      const injectedCount = Object.values(injected).reduce((sum, count) => sum + count, 0);
      assert.ok(rejected > 0 && injectedCount > rejected / 2, `faults were injected (${injectedCount}) and some calls failed (${rejected})`);
      for (const fault of FAULTS) assert.ok(injected[fault] > 0, `${fault} was injected`);

      // Replayed one at a time in commit order on a store with no faults, the committed calls
      // give the same answers and leave the same states: nothing half-written, nothing lost.
      committed.sort((a, b) => a.commit - b.commit);
      const replay = new CheckedStore();
      for (const { call, draws, result } of committed) {
        const limiter = new RateLimiter(replay, LIMITS, { now: () => call.now, random: replaying(draws) });
        const request = { key: call.key, count: call.count, reserve: call.reserve };
        const again = call.batch
          ? await limiter.limitAll([{ name: call.name, ...request }, { name: call.batch, key: call.key }])
          : await limiter.limit(call.name, request);
        assert.deepEqual(again, result, `call ${call.index} (commit ${committed.indexOf(committed.find((c) => c.call === call))})`);
      }
      assert.deepEqual(new Map([...host.inner.states].sort()), new Map([...replay.states].sort()), "the host's states are the serial replay's");

      // The bound, per limit and key, over the granted calls.
      let checked = 0;
      for (const name of Object.keys(LIMITS)) {
        for (const key of KEYS) {
          const grants = [];
          for (const { call, result } of committed) {
            if (!result.ok || call.key !== key) continue;
            if (call.name === name) grants.push({ now: call.now, count: call.count });
            if (call.batch === name) grants.push({ now: call.now, count: 1 });
          }
          checked += checkBound(name, grants);
        }
      }
      tally.add("decisions checked", committed.length);
      tally.add("decisions checked against the bound", checked);
      tally.add("faults injected", injectedCount);
      tally.add("calls rejected by a fault", rejected);
      tally.add("transaction conflicts retried", host.conflicts);
    });
  }
});

describe("a store without transactions, faults injected at random, one call at a time", () => {
  for (const seed of [4, 5, 6]) {
    it(`seed ${seed}: failed writes may spend tokens but never admit them: every limit stays within its bound, and only finite numbers are stored`, async () => {
      const inner = new CheckedStore(); // asserts every write is two finite numbers
      const store = new FaultyStore(inner, seeded(seed * 1000), { faultRate: 0.1 });
      const grants = new Map();
      let rejected = 0;
      const calls = workload(seed, 2000);
      for (const call of calls) {
        try {
          const { result } = await decide(store, call, seed * 104729 + call.index);
          if (!result.ok) continue;
          for (const [name, count] of [[call.name, call.count], ...(call.batch ? [[call.batch, 1]] : [])]) {
            const list = grants.get(`${name}/${call.key}`) ?? [];
            list.push({ now: call.now, count });
            grants.set(`${name}/${call.key}`, list);
          }
        } catch (error) {
          assert.ok(isFaultError(error), `call ${call.index}: ${error?.stack ?? error}`);
          rejected += 1;
        }
      }
      let checked = 0;
      for (const [limit, list] of grants) checked += checkBound(limit.split("/")[0], list);
      assert.ok(rejected > 0);
      tally.add("decisions checked", calls.length);
      tally.add("decisions checked against the bound", checked);
      tally.add("faults injected", store.faultCount);
      tally.add("calls rejected by a fault", rejected);
    });
  }
});

describe("the sharded two-shard write when the second write fails", () => {
  const wide = { kind: "token bucket", rate: 40, period: SECOND, shards: 4 };
  /** Shards 0 and 1 hold 3 and 2 of their 10: 4 tokens need both (2.5 from shard 0, 1.5 from shard 1, both left at 0.5). */
  function prepared() {
    const store = new CheckedStore();
    store.write({ name: "wide", shard: 0 }, { value: 3, ts: START });
    store.write({ name: "wide", shard: 1 }, { value: 2, ts: START });
    return store;
  }
  const failSecondWrite = (inner) => {
    let writes = 0;
    return {
      read: (ref) => inner.read(ref),
      write: (ref, state) => {
        writes += 1;
        if (writes === 2) throw new Error("injected: the second write failed");
        inner.write(ref, state);
      },
    };
  };
  const tokens = (store, limiter) => limiter.getValue("wide", { sampleShards: 4 }).then((report) => report.value);

  it("on a store without transactions: the call rejects, shard 0's share is spent, shard 1 is untouched, and nothing more than what is left is ever admitted", async () => {
    const inner = prepared();
    const limiter = new RateLimiter(failSecondWrite(inner), { wide }, { now: () => START, random: () => 0 });
    await assert.rejects(limiter.limit("wide", { count: 4 }), /the second write failed/);
    assert.deepEqual(inner.read({ name: "wide", shard: 0 }), { value: 0.5, ts: START });
    assert.deepEqual(inner.read({ name: "wide", shard: 1 }), { value: 2, ts: START });
    const after = new RateLimiter(inner, { wide }, { now: () => START, random: seeded(9) });
    assert.equal(await tokens(inner, after), 22.5, "25 tokens before, 2.5 spent, none admitted");
    let admitted = 0;
    for (let i = 0; i < 100; i++) if ((await after.limit("wide")).ok) admitted += 1;
    assert.ok(admitted <= 22.5 && admitted >= 20, `admitted ${admitted} of the 22.5 left`);
    tally.add("faults injected", 1);
    tally.add("decisions checked against the bound", 101);
  });

  it("on a transactional host: the call rejects and commits nothing; the retry is granted from both shards", async () => {
    const host = new TransactionalHost(prepared());
    await assert.rejects(
      host.run((tx) => new RateLimiter(failSecondWrite(tx), { wide }, { now: () => START, random: () => 0 }).limit("wide", { count: 4 })),
      /the second write failed/,
    );
    assert.deepEqual(host.inner.read({ name: "wide", shard: 0 }), { value: 3, ts: START });
    const { value } = await host.run((tx) => new RateLimiter(tx, { wide }, { now: () => START, random: () => 0 }).limit("wide", { count: 4 }));
    assert.deepEqual(value, { ok: true });
    assert.deepEqual([0, 1].map((shard) => host.inner.read({ name: "wide", shard })), [{ value: 0.5, ts: START }, { value: 0.5, ts: START }]);
    tally.add("faults injected", 1);
  });
});

describe("a store that answers slowly, or never", () => {
  it("a call whose store never answers stalls only itself: the same limiter and a MemoryStore keep deciding", async () => {
    const inner = new CheckedStore();
    const stalling = { read: (ref) => (ref.key === "stuck" ? new Promise(() => {}) : inner.read(ref)), write: (ref, state) => inner.write(ref, state) };
    const limits = { send: LIMITS.bucket, wide: LIMITS.shardedBucket };
    const limiter = new RateLimiter(stalling, limits, { now: () => START, random: seeded(3) });
    const memory = new MemoryStore();
    const onMemory = new RateLimiter(memory, limits, { now: () => START, random: seeded(4) });
    let settled = false;
    limiter.limit("wide", { key: "stuck", count: 12 }).finally(() => (settled = true));
    for (let i = 0; i < 15; i++) {
      assert.deepEqual(await limiter.limit("send", { key: "fine" }), { ok: true });
      assert.deepEqual(await onMemory.limit("send", { key: "fine" }), { ok: true });
    }
    assert.equal((await limiter.limit("send", { key: "fine" })).ok, false);
    assert.equal((await limiter.getValue("wide", { key: "other", sampleShards: 4 })).value, 40);
    assert.equal(settled, false, "the stalled call is still waiting on its store");
    tally.add("decisions checked", 33);
    tally.add("faults injected", 1);
  });

  it("a store that answers a thenable instead of a Promise is awaited or refused as corrupt, never a hang or a crash", async () => {
    // Today a thenable that is not a native Promise is read as a state, so CORRUPT_STATE (fail closed).
    const resolving = new RateLimiter({ read: () => ({ then: (resolve) => resolve({ value: 1, ts: START }) }), write() {} }, { send: LIMITS.bucket }, { now: () => START });
    const answer = await resolving.limit("send").catch((error) => error);
    assert.ok(answer.code === "CORRUPT_STATE" || (answer.ok === true && answer.retryAfter === undefined), String(answer));
    const throwing = new RateLimiter({ read: () => ({ then: () => { throw new Error("then throws"); } }), write() {} }, { send: LIMITS.bucket }, { now: () => START });
    await assert.rejects(throwing.limit("send"), (error) => error instanceof Error);
    tally.add("faults injected", 2);
  });
});

describe("the fault checks can fail", () => {
  it("a limiter that over-admits is caught by the bound", () => {
    const grants = Array.from({ length: 13 }, () => ({ now: START, count: 1 }));
    assert.throws(() => checkBound("window", grants), /admitted 13 > bound 12/);
    assert.throws(() => checkBound("bucket", Array.from({ length: 16 }, () => ({ now: START, count: 1 }))), /admitted 16 > bound 15/);
    // Over a stretch in the middle too: 12 at one instant is fine, 13 is not.
    const stretch = [{ now: START, count: 12 }, { now: START + 1500, count: 12 }, { now: START + 1500, count: 1 }, { now: START + 3000, count: 12 }];
    assert.throws(() => checkBound("window", stretch), /grants 1..2 admitted 13 > bound 12/);
  });

  it("a host that commits a failed call's writes is caught by the replay", async () => {
    // A "transactional" host that writes through: the failing call's first write survives.
    const leaky = new CheckedStore();
    leaky.write({ name: "wide", shard: 0 }, { value: 3, ts: START });
    leaky.write({ name: "wide", shard: 1 }, { value: 2, ts: START });
    let writes = 0;
    const store = { read: (ref) => leaky.read(ref), write: (ref, state) => { if (++writes === 2) throw new Error("injected: failed"); leaky.write(ref, state); } };
    const wide = { kind: "token bucket", rate: 40, period: SECOND, shards: 4 };
    await assert.rejects(new RateLimiter(store, { wide }, { now: () => START, random: () => 0 }).limit("wide", { count: 4 }));
    const replay = new CheckedStore();
    replay.write({ name: "wide", shard: 0 }, { value: 3, ts: START });
    replay.write({ name: "wide", shard: 1 }, { value: 2, ts: START });
    assert.throws(() => assert.deepEqual(new Map([...leaky.states].sort()), new Map([...replay.states].sort())), { code: "ERR_ASSERTION" });
  });

  it("an error that is not a fault is told apart", () => {
    assert.equal(isFaultError(new Error("injected: read failed")), true);
    assert.equal(isFaultError(Object.assign(new Error("x"), { code: "CORRUPT_STATE" })), true);
    assert.equal(isFaultError(Object.assign(new Error("x"), { code: "INVALID_REQUEST" })), false);
    assert.equal(isFaultError(new WebAssembly.RuntimeError("unreachable")), false);
  });
});
