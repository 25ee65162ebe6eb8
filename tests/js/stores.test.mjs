// The host callback: sync and async stores, failing stores, corrupt states, MemoryStore's slots.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as delay } from "node:timers/promises";
import { RateLimiter, MemoryStore, SECOND } from "../../pkg/dist/node.js";
import { KINDS, SpyStore, config, manualClock, seeded } from "./helpers.mjs";

/** A store whose every answer is a Promise that settles after a real timer. */
class AsyncStore {
  constructor(inner = new MemoryStore()) {
    this.inner = inner;
    this.writes = [];
  }
  async read(ref) {
    await delay(1);
    return this.inner.read(ref);
  }
  async write(ref, state) {
    await delay(1);
    this.writes.push({ ref: { ...ref }, state });
    this.inner.write(ref, state);
  }
}

const LIMITS = {
  bucket: { kind: "token bucket", rate: 10, period: SECOND, capacity: 15 },
  window: { kind: "fixed window", rate: 8, period: SECOND },
  wideBucket: { kind: "token bucket", rate: 50, period: SECOND, shards: 5, maxReserved: 10 },
  wideWindow: { kind: "fixed window", rate: 40, period: SECOND, shards: 4 },
};
const INLINE = { kind: "fixed window", rate: 3, period: 500, start: 0 };
const KEYS = [undefined, "ada", "bob"];

/** Runs the same seeded traffic against `store`; returns every answer and the final states. */
async function drive(store, inner) {
  const clock = manualClock(1_700_000_000_000);
  const limiter = new RateLimiter(store, LIMITS, { now: clock.read, random: seeded(1234) });
  const traffic = seeded(5678);
  const pick = (list) => list[Math.floor(traffic() * list.length)];
  const answers = [];
  for (let step = 0; step < 200; step++) {
    clock.now += Math.floor(traffic() * 30);
    const name = pick([...Object.keys(LIMITS), "inline"]);
    const options = { key: pick(KEYS), count: Math.floor(traffic() * 8), reserve: traffic() < 0.2 };
    if (name === "inline") options.config = INLINE;
    const operation = pick(["limit", "limit", "limit", "limit", "check", "batch", "batch", "getValue", "reset"]);
    let answer;
    try {
      if (operation === "limit") answer = await limiter.limit(name, options);
      else if (operation === "check") answer = await limiter.check(name, options);
      else if (operation === "batch") answer = await limiter.limitAll([{ name, ...options }, { name: "bucket", key: options.key }]);
      else if (operation === "getValue") answer = await limiter.getValue(name, { key: options.key, sampleShards: 2, config: options.config });
      else answer = await limiter.reset(name, { key: options.key, config: options.config });
    } catch (error) {
      answer = { error: error.code ?? String(error) };
    }
    answers.push({ step, operation, answer });
  }
  const states = [];
  for (const [name, { shards = 1 }] of [...Object.entries(LIMITS), ["inline", INLINE]]) {
    for (const key of KEYS) {
      for (let shard = 0; shard < shards; shard++) {
        states.push(inner.read(key === undefined ? { name, shard } : { name, key, shard }));
      }
    }
  }
  return { answers, states };
}

describe("sync and async stores", () => {
  it("a synchronous store and a Promise-returning store give identical results for the same traffic", async () => {
    const syncInner = new MemoryStore();
    const asyncInner = new MemoryStore();
    const fromSync = await drive(syncInner, syncInner);
    const fromAsync = await drive(new AsyncStore(asyncInner), asyncInner);
    assert.ok(fromSync.answers.filter(({ answer }) => answer && answer.ok === false).length >= 5, "the traffic includes refusals");
    assert.ok(fromSync.answers.some(({ answer }) => answer && answer.ok === true && answer.retryAfter > 0), "the traffic includes reservations");
    assert.ok(fromSync.answers.some(({ answer }) => answer && answer.ok === true), "the traffic includes grants");
    assert.ok(syncInner.size > 5, "the traffic wrote states");
    assert.deepEqual(fromAsync.answers, fromSync.answers);
    assert.deepEqual(fromAsync.states, fromSync.states);
  });

  it("a store may answer null or undefined for a state it does not have", async () => {
    for (const none of [null, undefined]) {
      const writes = [];
      const store = { read: () => none, write: (ref, state) => void writes.push(state) };
      const limiter = new RateLimiter(store, { send: { kind: "token bucket", rate: 10, period: SECOND } }, { now: () => 0 });
      assert.deepEqual(await limiter.limit("send", { count: 10 }), { ok: true });
      assert.deepEqual(writes, [{ value: 0, ts: 0 }]);
      assert.equal((await limiter.getValue("send")).value, 10);
    }
  });
});

/** A store over a MemoryStore whose reads or writes fail on demand. */
function failingStore({ failRead, failWrite, inner = new MemoryStore() }) {
  const store = {
    inner,
    reads: 0,
    writes: [],
    read(ref) {
      store.reads++;
      if (failRead) {
        const failure = failRead(store.reads, ref);
        if (failure) return failure();
      }
      return inner.read(ref);
    },
    write(ref, state) {
      if (failWrite) {
        const failure = failWrite(ref, state);
        if (failure) return failure();
      }
      store.writes.push({ ref: { ...ref }, state });
      inner.write(ref, state);
    },
  };
  return store;
}

const boom = () => new Error("the store is down");
const FAILURES = {
  "throws": (error) => () => {
    throw error;
  },
  "rejects": (error) => () => Promise.reject(error),
  "rejects after a delay": (error) => async () => {
    await delay(2);
    throw error;
  },
};

for (const kind of KINDS) {
  describe(`${kind}: a failing store fails the call closed`, () => {
    for (const [how, fail] of Object.entries(FAILURES)) {
      it(`a read that ${how} makes limit, check, getValue and limitAll reject with that error, writing nothing`, async () => {
        const error = boom();
        const store = failingStore({ failRead: () => fail(error) });
        const limiter = new RateLimiter(store, { send: config(kind, { rate: 10, period: SECOND }) }, { now: () => 0, random: () => 0.5 });
        for (const call of [
          () => limiter.limit("send"),
          () => limiter.limit("send", { reserve: true, throws: true }),
          () => limiter.check("send"),
          () => limiter.getValue("send"),
          () => limiter.limitAll([{ name: "send" }]),
        ]) {
          await assert.rejects(call(), (thrown) => thrown === error);
        }
        assert.deepEqual(store.writes, []);
      });

      it(`a write that ${how} makes limit, limitAll and reset reject with that error`, async () => {
        const error = boom();
        const store = failingStore({ failWrite: () => fail(error) });
        const limiter = new RateLimiter(store, { send: config(kind, { rate: 10, period: SECOND }) }, { now: () => 0, random: () => 0.5 });
        await assert.rejects(limiter.limit("send"), (thrown) => thrown === error);
        await assert.rejects(limiter.limitAll([{ name: "send" }]), (thrown) => thrown === error);
        await assert.rejects(limiter.reset("send"), (thrown) => thrown === error);
        assert.deepEqual(await limiter.check("send"), { ok: true }, "check does not write, so it still answers");
      });
    }

    it("a sharded decision whose second read fails writes nothing", async () => {
      const error = boom();
      const store = failingStore({ failRead: (readNumber) => (readNumber === 2 ? FAILURES.rejects(error) : null) });
      const limiter = new RateLimiter(store, { wide: config(kind, { rate: 100, period: SECOND, shards: 10 }) }, { now: () => 0, random: seeded(2) });
      // 15 is more than one shard of 10 holds, so the decision must read a second shard.
      await assert.rejects(limiter.limit("wide", { count: 15 }), (thrown) => thrown === error);
      assert.equal(store.reads, 2);
      assert.deepEqual(store.writes, []);
    });

    it("a batch whose second limit's read fails writes nothing for the first", async () => {
      const error = boom();
      const store = failingStore({ failRead: (readNumber, ref) => (ref.name === "y" ? FAILURES.throws(error) : null) });
      const limits = { x: config(kind, { rate: 10, period: SECOND }), y: config(kind, { rate: 10, period: SECOND }) };
      const limiter = new RateLimiter(store, limits, { now: () => 0, random: () => 0.5 });
      await assert.rejects(limiter.limitAll([{ name: "x", count: 4 }, { name: "y" }]), (thrown) => thrown === error);
      assert.deepEqual(store.writes, []);
      assert.equal((await limiter.getValue("x")).value, 10);
    });
  });

  describe(`${kind}: a corrupt stored state is an error naming the ref`, () => {
    const CORRUPT = [
      { value: "x", ts: 1 },
      { value: NaN, ts: 0 },
      { value: 1, ts: Infinity },
      { value: -Infinity, ts: 0 },
      { value: 1, ts: "0" },
      { value: 1 },
      { ts: 1 },
      {},
      42,
      "full",
      true,
    ];

    for (const corrupt of CORRUPT) {
      const shown = typeof corrupt === "object" ? JSON.stringify(corrupt, (k, v) => (typeof v === "number" && !Number.isFinite(v) ? String(v) : v)) : JSON.stringify(corrupt);
      it(`a stored ${shown} makes every call fail with CORRUPT_STATE, never count as full, and write nothing`, async () => {
        for (const answer of [(ref) => corrupt, async (ref) => (await delay(1), corrupt)]) {
          const spy = new SpyStore();
          spy.read = (ref) => {
            spy.reads.push({ ...ref });
            return answer(ref);
          };
          const limiter = new RateLimiter(spy, { chat: config(kind, { rate: 10, period: SECOND }) }, { now: () => 0, random: () => 0.5 });
          for (const call of [
            () => limiter.limit("chat", { key: "u:1" }),
            () => limiter.check("chat", { key: "u:1", count: 0 }),
            () => limiter.getValue("chat", { key: "u:1" }),
            () => limiter.limitAll([{ name: "chat", key: "u:1" }]),
          ]) {
            await assert.rejects(call(), (error) => {
              assert.ok(error instanceof Error);
              assert.equal(error.code, "CORRUPT_STATE");
              for (const part of ['"chat"', '"u:1"', "shard 0"]) {
                assert.ok(error.message.includes(part), `${JSON.stringify(error.message)} should name ${part}`);
              }
              return true;
            });
          }
          assert.deepEqual(spy.writes, []);
        }
      });
    }

    it("the error names the shard that was corrupt, and an absent key is not named", async () => {
      const spy = new SpyStore();
      spy.read = (ref) => {
        spy.reads.push({ ...ref });
        return ref.shard === 3 ? { value: "x", ts: 0 } : null;
      };
      const limiter = new RateLimiter(spy, { wide: config(kind, { rate: 40, period: SECOND, shards: 4 }) }, { now: () => 0, random: seeded(8) });
      await assert.rejects(limiter.getValue("wide", { sampleShards: 4 }), (error) => {
        assert.equal(error.code, "CORRUPT_STATE");
        assert.ok(error.message.includes('"wide"') && error.message.includes("shard 3"), error.message);
        assert.ok(!error.message.includes("key"), `no key to name: ${error.message}`);
        return true;
      });
      assert.deepEqual(spy.writes, []);
    });
  });
}

describe("MemoryStore", () => {
  it("keeps a name with a colon apart from a key with a colon", () => {
    const store = new MemoryStore();
    store.write({ name: "a:b", key: "c", shard: 0 }, { value: 1, ts: 10 });
    assert.equal(store.read({ name: "a", key: "b:c", shard: 0 }), null);
    store.write({ name: "a", key: "b:c", shard: 0 }, { value: 2, ts: 20 });
    assert.deepEqual(store.read({ name: "a:b", key: "c", shard: 0 }), { value: 1, ts: 10 });
    assert.deepEqual(store.read({ name: "a", key: "b:c", shard: 0 }), { value: 2, ts: 20 });
    assert.equal(store.size, 2);
  });

  it("keeps no key apart from the empty key, and shards apart", () => {
    const store = new MemoryStore();
    store.write({ name: "a", shard: 0 }, { value: 1, ts: 0 });
    assert.equal(store.read({ name: "a", key: "", shard: 0 }), null);
    assert.equal(store.read({ name: "a", shard: 1 }), null);
    store.write({ name: "a", key: "", shard: 0 }, { value: 2, ts: 0 });
    assert.deepEqual(store.read({ name: "a", shard: 0 }), { value: 1, ts: 0 });
    assert.deepEqual(store.read({ name: "a", key: "", shard: 0 }), { value: 2, ts: 0 });
  });

  it("keeps names and keys apart through the limiter too", async () => {
    const bucket = { kind: "token bucket", rate: 1, period: SECOND };
    const store = new MemoryStore();
    const limiter = new RateLimiter(store, { "a:b": bucket, a: bucket, "a=b": bucket }, { now: () => 0 });
    assert.deepEqual(await limiter.limit("a:b", { key: "c" }), { ok: true });
    assert.deepEqual(await limiter.limit("a", { key: "b:c" }), { ok: true });
    assert.deepEqual(await limiter.limit("a", { key: "b=c" }), { ok: true });
    assert.deepEqual(await limiter.limit("a=b", { key: "c" }), { ok: true });
    assert.deepEqual(await limiter.limit("a"), { ok: true });
    assert.deepEqual(await limiter.limit("a", { key: "" }), { ok: true });
    assert.equal(store.size, 6);
    assert.equal((await limiter.limit("a", { key: "" })).ok, false);
  });

  it("writing null deletes, and clear forgets everything", () => {
    const store = new MemoryStore();
    store.write({ name: "a", shard: 0 }, { value: 1, ts: 0 });
    store.write({ name: "b", shard: 0 }, { value: 1, ts: 0 });
    store.write({ name: "a", shard: 0 }, null);
    assert.equal(store.read({ name: "a", shard: 0 }), null);
    assert.equal(store.size, 1);
    store.clear();
    assert.equal(store.size, 0);
  });

  it("keeps its own copy of a written state", () => {
    const store = new MemoryStore();
    const state = { value: 1, ts: 0 };
    store.write({ name: "a", shard: 0 }, state);
    state.value = 99;
    assert.deepEqual(store.read({ name: "a", shard: 0 }), { value: 1, ts: 0 });
  });
});
