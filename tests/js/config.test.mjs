// Config validation: every bad field is a real Error with code INVALID_CONFIG, its field, and a message
// naming the limit, the field and the value; named limits are checked when defined, inline ones per call.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { RateLimiter, MemoryStore, calculateRateLimit, SECOND } from "../../pkg/dist/node.js";
import { KINDS, SpyStore } from "./helpers.mjs";

const base = (kind) => ({ kind, rate: 10, period: SECOND });

/** `[what, config, field, how the value is shown in the message]` for one kind. */
function badConfigs(kind) {
  const cases = [];
  const shownNumbers = [[-1, "-1"], [0, "0"], [-0.5, "-0.5"], [NaN, "NaN"], [Infinity, "Infinity"], [-Infinity, "-Infinity"]];
  const shownOthers = [["10", '"10"'], [null, "null"], [true, "true"], [[10], "array"], [{}, "object"]];
  for (const field of ["rate", "period"]) {
    for (const [value, shown] of [...shownNumbers, ...shownOthers]) cases.push([`${field} ${shown}`, { ...base(kind), [field]: value }, field, shown]);
    const missing = base(kind);
    delete missing[field];
    cases.push([`${field} missing`, missing, field, "undefined"]);
  }
  for (const field of ["capacity", "maxReserved"]) {
    for (const [value, shown] of [[-1, "-1"], [-0.001, "-0.001"], [NaN, "NaN"], [Infinity, "Infinity"], [-Infinity, "-Infinity"], ["3", '"3"'], [null, "null"]]) {
      cases.push([`${field} ${shown}`, { ...base(kind), [field]: value }, field, shown]);
    }
  }
  for (const [value, shown] of [[0, "0"], [2.5, "2.5"], [1025, "1025"], [-1, "-1"], [NaN, "NaN"], [Infinity, "Infinity"], ["3", '"3"']]) {
    cases.push([`shards ${shown}`, { ...base(kind), shards: value }, "shards", shown]);
  }
  for (const [value, shown] of [["leaky bucket", '"leaky bucket"'], ["Token Bucket", '"Token Bucket"'], [1, "1"], [null, "null"]]) {
    cases.push([`kind ${shown}`, { ...base(kind), kind: value }, "kind", shown]);
  }
  const noKind = base(kind);
  delete noKind.kind;
  cases.push(["kind missing", noKind, "kind", "undefined"]);
  if (kind === "token bucket") {
    for (const [value, shown] of [[5, "5"], [0, "0"], ["x", '"x"']]) cases.push([`start ${shown}`, { ...base(kind), start: value }, "start", shown]);
  } else {
    for (const [value, shown] of [["x", '"x"'], [NaN, "NaN"], [Infinity, "Infinity"], [null, "null"]]) {
      cases.push([`start ${shown}`, { ...base(kind), start: value }, "start", shown]);
    }
  }
  cases.push(["an unknown field", { ...base(kind), applyUpdates: "asynchronously" }, "applyUpdates", '"applyUpdates"']);
  cases.push(["a misspelt field", { ...base(kind), capcity: 3 }, "capcity", '"capcity"']);
  return cases;
}

const NOT_OBJECTS = [[null, "null"], [undefined, "undefined"], [5, "5"], ["token bucket", '"token bucket"'], [[], "array"], [() => {}, "function"]];

/** Checks one config error: a real Error, INVALID_CONFIG, the field, and a message naming limit, field and value. */
function isConfigError(error, { limit = "sendMessage", field, shown }) {
  assert.ok(error instanceof Error, `expected an Error, got ${typeof error}: ${String(error)}`);
  assert.equal(typeof error.message, "string");
  assert.equal(error.code, "INVALID_CONFIG", error.message);
  assert.equal(error.field, field, error.message);
  assert.ok(error.message.startsWith(`Rate limit ${JSON.stringify(limit)}: `), error.message);
  assert.ok(error.message.includes(field), `${error.message} should name the field ${field}`);
  assert.ok(error.message.includes(shown), `${error.message} should show the value ${shown}`);
  return true;
}

/** A store that records whether it was touched at all. */
function untouchedStore() {
  const store = { calls: 0, read: () => (store.calls++, null), write: () => void store.calls++ };
  return store;
}

describe("the message of a bad config", () => {
  it("names the limit, the field and the value, exactly as SPEC's example", () => {
    assert.throws(
      () => new RateLimiter(new MemoryStore(), { sendMessage: { kind: "token bucket", rate: -1, period: SECOND } }),
      (error) => {
        assert.ok(error instanceof Error);
        assert.equal(error.message, 'Rate limit "sendMessage": rate must be a positive finite number (got -1)');
        assert.equal(error.code, "INVALID_CONFIG");
        assert.equal(error.field, "rate");
        return true;
      },
    );
  });

  it("names an unknown field and lists the known ones", () => {
    assert.throws(
      () => new RateLimiter(new MemoryStore(), { sendMessage: { ...base("token bucket"), applyUpdates: "asynchronously" } }),
      (error) => error.field === "applyUpdates" && error.message.includes('unknown field "applyUpdates"') && error.message.includes("maxReserved"),
    );
  });
});

for (const kind of KINDS) {
  describe(`${kind}: a bad config is refused when the limiter is constructed`, () => {
    for (const [what, bad, field, shown] of badConfigs(kind)) {
      it(`${what} is an INVALID_CONFIG error naming sendMessage, ${field} and ${shown}`, () => {
        const store = untouchedStore();
        assert.throws(() => new RateLimiter(store, { sendMessage: bad }), (error) => isConfigError(error, { field, shown }));
        assert.equal(store.calls, 0);
      });
    }
  });

  describe(`${kind}: a bad inline config is refused by the call and changes nothing`, () => {
    for (const [what, bad, field, shown] of badConfigs(kind)) {
      it(`${what} makes every call reject with INVALID_CONFIG`, async () => {
        const spy = new SpyStore();
        const limiter = new RateLimiter(spy, {}, { now: () => 0, random: () => 0.5 });
        const good = { ...base(kind), start: kind === "fixed window" ? 0 : undefined };
        if (good.start === undefined) delete good.start;
        await limiter.limit("sendMessage", { key: "ada", count: 4, config: good });
        const before = spy.inner.read({ name: "sendMessage", key: "ada", shard: 0 });
        spy.forget();
        const calls = [
          () => limiter.limit("sendMessage", { key: "ada", config: bad }),
          () => limiter.check("sendMessage", { key: "ada", config: bad }),
          () => limiter.getValue("sendMessage", { key: "ada", config: bad }),
          () => limiter.reset("sendMessage", { key: "ada", config: bad }),
          () => limiter.limitAll([{ name: "sendMessage", key: "ada", config: bad }]),
          () => limiter.checkAll([{ name: "sendMessage", key: "ada", config: bad }]),
          () => limiter.limitAll([{ name: "other", config: good }, { name: "sendMessage", key: "ada", config: bad }]),
        ];
        for (const call of calls) await assert.rejects(call(), (error) => isConfigError(error, { field, shown }));
        assert.deepEqual(spy.writes, []);
        assert.deepEqual(spy.inner.read({ name: "sendMessage", key: "ada", shard: 0 }), before);
        assert.equal(spy.inner.size, 1);
      });
    }
  });

  describe(`${kind}: configs at the edges of valid`, () => {
    const valid = [
      ["capacity 0 with maxReserved", { capacity: 0, maxReserved: 2 }],
      ["maxReserved 0", { maxReserved: 0 }],
      ["fractional rate, period and capacity", { rate: 0.5, period: 1500.5, capacity: 2.25 }],
      ["shards 1", { shards: 1 }],
      ["shards 1024", { shards: 1024 }],
      ["every field set", { capacity: 30, maxReserved: 5, shards: 3 }],
      ...(kind === "token bucket" ? [["start null", { start: null }]] : [["start 0", { start: 0 }], ["a negative start", { start: -12_345 }], ["a fractional start", { start: 0.5 }]]),
    ];
    for (const [what, fields] of valid) {
      it(`${what} is accepted`, async () => {
        const limiter = new RateLimiter(new MemoryStore(), { send: { ...base(kind), ...fields } }, { now: () => 0, random: () => 0.5 });
        assert.equal((await limiter.limit("send", { count: 0 })).ok, true);
        assert.equal((await limiter.limit("oneOff", { count: 0, config: { ...base(kind), ...fields } })).ok, true);
      });
    }

    // Issue 25, item 16: capacity 0 was accepted, then every call threw COUNT_EXCEEDS_MAX.
    for (const maxReserved of [undefined, 0]) {
      it(`capacity 0 with maxReserved ${maxReserved ?? "absent"} is refused when the limiter is made, and inline`, async () => {
        const closed = { ...base(kind), capacity: 0, ...(maxReserved === undefined ? {} : { maxReserved }) };
        const refused = (error) => isConfigError(error, { field: "capacity", shown: `maxReserved ${maxReserved ?? "absent"}` }) && /capacity must be > 0 unless maxReserved is > 0/.test(error.message);
        assert.throws(() => new RateLimiter(new MemoryStore(), { sendMessage: closed }), refused);
        const limiter = new RateLimiter(new MemoryStore(), {}, { now: () => 0 });
        await assert.rejects(limiter.limit("sendMessage", { config: closed }), refused);
        await assert.rejects(limiter.limitAll([{ name: "sendMessage", config: closed }]), refused);
      });
    }

    it("capacity 0 with maxReserved only paces: a reservation waits, anything else can never be granted", async () => {
      const limiter = new RateLimiter(new MemoryStore(), { paced: { ...base(kind), capacity: 0, maxReserved: 2, start: kind === "fixed window" ? 0 : undefined } }, { now: () => 0 });
      assert.deepEqual(await limiter.limit("paced", { count: 0 }), { ok: true });
      await assert.rejects(limiter.limit("paced"), (error) => error.code === "COUNT_EXCEEDS_MAX" && error.message === "Rate limit paced count 1 exceeds 0.");
      const reserved = await limiter.limit("paced", { reserve: true });
      assert.equal(reserved.ok, true);
      assert.ok(reserved.retryAfter > 0, "the reservation waits");
    });
  });
}

describe("config objects themselves", () => {
  for (const [notAnObject, shown] of NOT_OBJECTS) {
    it(`a config that is ${shown} is an INVALID_CONFIG error on field config`, async () => {
      assert.throws(() => new RateLimiter(new MemoryStore(), { sendMessage: notAnObject }), (error) => isConfigError(error, { field: "config", shown }));
      if (notAnObject !== undefined) {
        // An undefined inline config means "use the named limit", so it is not a bad config.
        const limiter = new RateLimiter(new MemoryStore(), {}, { now: () => 0 });
        await assert.rejects(limiter.limit("sendMessage", { config: notAnObject }), (error) => isConfigError(error, { field: "config", shown }));
      }
    });
  }

  it("the unknown-field message of a limiter's config lists onStoreError and dryRun", async () => {
    const config = { ...base("token bucket"), burst: 2 };
    const lists = (error) => isConfigError(error, { field: "burst", shown: '"burst"' }) && error.message.endsWith("(the fields are kind, rate, period, capacity, maxReserved, shards, start, onStoreError, dryRun)");
    assert.throws(() => new RateLimiter(new MemoryStore(), { sendMessage: config }), lists);
    await assert.rejects(new RateLimiter(new MemoryStore(), {}).limit("sendMessage", { config }), lists);
  });

  it("the first bad limit among several is named", () => {
    assert.throws(
      () =>
        new RateLimiter(new MemoryStore(), {
          fine: base("token bucket"),
          "second one": { ...base("fixed window"), period: 0 },
        }),
      (error) => isConfigError(error, { limit: "second one", field: "period", shown: "0" }),
    );
  });

  it("a named limit is compiled when defined: changing its object later changes nothing", async () => {
    const named = { kind: "token bucket", rate: 2, period: SECOND };
    const limiter = new RateLimiter(new MemoryStore(), { send: named }, { now: () => 0 });
    named.rate = -1;
    named.capacity = 100;
    assert.deepEqual(await limiter.limit("send", { count: 2 }), { ok: true });
    assert.deepEqual(await limiter.limit("send"), { ok: false, retryAfter: 500 });
  });

  it("calculateRateLimit refuses a bad config with the same kind of error", () => {
    assert.throws(
      () => calculateRateLimit(null, { kind: "token bucket", rate: 1, period: -5 }, 0),
      (error) => error instanceof Error && error.code === "INVALID_CONFIG" && error.field === "period" && error.message.includes("(got -5)"),
    );
  });
});
