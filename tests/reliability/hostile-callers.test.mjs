// Hostile and careless callers (issue 18): one regression test per item, on
// the built package. Items 1, 2, 4, 5 and 8 live here; item 3 (prototype
// pollution) in hostile-prototype.test.mjs, items 6 and 7 (the waits a
// caller is promised) in hostile-waits.test.mjs, and the bounded-store
// property in bounded-store.test.mjs.
import { describe, it, after } from "node:test";
import assert from "node:assert/strict";
import { RateLimiter, MemoryStore, calculateRateLimit, decideRateLimit, withJitter, SECOND, HOUR } from "../../pkg/dist/node.js";
import { RateLimitPreview } from "../../pkg/dist/preview.js";
import { CheckedStore, KINDS, Tally } from "./helpers.mjs";

const tally = new Tally("hostile callers");
after(() => tally.flush());

const T = 1_700_000_000_000;
const LONG_KEY = "k".repeat(400); // over 341 UTF-16 units: the callback path
const BUCKET = { kind: "token bucket", rate: 10, period: SECOND };

/** Asserts `error` is a real Error (never a WebAssembly RuntimeError) carrying the string `code`. */
function assertCoded(error, code, where) {
  assert.ok(error instanceof Error, `${where}: threw ${String(error)}, not an Error`);
  assert.ok(!(error instanceof WebAssembly.RuntimeError), `${where}: a WebAssembly trap: ${error.message}`);
  assert.equal(typeof error.code, "string", `${where}: no code on ${error.constructor.name}: ${error.message}`);
  if (code !== undefined) assert.equal(error.code, code, `${where}: ${error.message}`);
  return true;
}

/** Runs `call` (sync or async) and asserts it fails with `code`. */
async function rejectsWith(call, code, where) {
  let outcome;
  try {
    outcome = await call();
  } catch (error) {
    return assertCoded(error, code, where);
  }
  assert.fail(`${where}: expected ${code ?? "an error with a code"}, got ${JSON.stringify(outcome)}`);
}

/** The ways one named limit can be reached: the slab, an inline config, a long key, a batch. */
const PATHS = {
  "a named limit (the fast path)": (limiter, config, options) => limiter.limit("window", options),
  "an inline config (the callbacks)": (limiter, config, options) => limiter.limit("inlineWindow", { ...options, config }),
  "a key over 341 units (the callbacks)": (limiter, config, options) => limiter.limit("window", { ...options, key: `${options.key}${LONG_KEY}` }),
  "a limitAll batch": (limiter, config, options) => limiter.limitAll([{ name: "window", ...options }]),
};

describe("item 1: eviction never moves a random-start fixed window", () => {
  const config = { kind: "fixed window", rate: 2, period: SECOND };
  const replay = async (store, path) => {
    let now = T;
    const limiter = new RateLimiter(store, { window: config }, { now: () => now, random: () => 0.37 });
    const call = (options) => PATHS[path](limiter, config, options);
    const outcomes = [];
    for (const [at, options] of [[T, { key: "a", count: 0 }], [T + 700, { key: "b" }], [T + 1800, { key: "a", count: 2 }], [T + 2500, { key: "a", count: 2 }]]) {
      now = at;
      try {
        outcomes.push(await call(options));
      } catch (error) {
        assertCoded(error, "STORE_FULL", `${path} at T+${at - T}`);
        outcomes.push({ code: error.code });
      }
    }
    return outcomes;
  };
  for (const path of Object.keys(PATHS)) {
    it(`through ${path}, a maxKeys 1 store refuses the second 2-token call in one window with the unbounded store's retryAfter, or fails with STORE_FULL`, async () => {
      const unbounded = await replay(new MemoryStore(), path);
      assert.deepEqual(unbounded.at(-1), { ok: false, retryAfter: 130 }, "the unbounded store's answer");
      const bounded = await replay(new MemoryStore({ maxKeys: 1 }), path);
      assert.notEqual(bounded.at(-1).ok, true, `${path}: granted 4 tokens within one 2-per-second window: ${JSON.stringify(bounded)}`);
      if (bounded.at(-1).code === undefined) assert.deepEqual(bounded.at(-1), unbounded.at(-1));
      assert.ok(bounded.some((outcome) => outcome.code === "STORE_FULL"), "the other key had to find the store full");
      tally.add("hostile options");
    });
  }
});

describe("item 2: room is made at the limiter's clock", () => {
  const bucket = { kind: "token bucket", rate: 1, period: HOUR };
  const future = { kind: "fixed window", rate: 5, period: SECOND, start: T + 10 * HOUR };
  const ways = {
    "an inline config": (limiter) => limiter.limit("ahead", { key: "z", config: future }),
    "a key over 341 units": (limiter) => limiter.limit("future", { key: LONG_KEY }),
    "a named limit (the fast path)": (limiter) => limiter.limit("future", { key: "z" }),
  };
  for (const [way, takeFuture] of Object.entries(ways)) {
    it(`a fixed window whose start lies 10 hours ahead, taken through ${way}, never evicts a token bucket key that has not refilled`, async () => {
      let now = T;
      const store = new MemoryStore({ maxKeys: 1 });
      const limiter = new RateLimiter(store, { bucket, future }, { now: () => now });
      assert.deepEqual(await limiter.limit("bucket", { key: "u" }), { ok: true });
      assert.equal((await limiter.limit("bucket", { key: "u" })).ok, false);
      now += SECOND;
      await rejectsWith(() => takeFuture(limiter), "STORE_FULL", way);
      const after = await limiter.limit("bucket", { key: "u" });
      assert.equal(after.ok, false, `${way}: the drained bucket was evicted and granted again`);
      // Whole ms, rounded up: the float's noise above 3,599,000 ms makes it at most 1 ms more.
      assert.ok(after.retryAfter - (HOUR - SECOND) >= 0 && after.retryAfter - (HOUR - SECOND) <= 1, `retryAfter ${after.retryAfter}`);
      tally.add("hostile options");
    });
  }
});

describe("item 4: decideRateLimit validates like limit", () => {
  const cases = [
    ["a stored { value: null, ts: null }", [{ value: null, ts: null }, BUCKET, T], "CORRUPT_STATE"],
    ['a stored { value: 0, ts: "0" }', [{ value: 0, ts: "0" }, BUCKET, T], "CORRUPT_STATE"],
    ...["3", null, true, 1n].map((count) => [`count ${typeof count === "bigint" ? "1n" : JSON.stringify(count)}`, [null, BUCKET, T, { count }], "INVALID_REQUEST"]),
    ...[1, "yes"].map((reserve) => [`reserve ${JSON.stringify(reserve)}`, [null, BUCKET, T, { reserve }], "INVALID_REQUEST"]),
    ...["x", null].map((now) => [`now ${JSON.stringify(now)}`, [null, BUCKET, now], "INVALID_REQUEST"]),
    ["options null", [null, BUCKET, T, null], "INVALID_ARGUMENT"],
  ];
  for (const [what, args, code] of cases) {
    it(`decideRateLimit with ${what} fails with ${code}`, async () => {
      await rejectsWith(() => decideRateLimit(...args), code, what);
      tally.add("hostile options");
    });
  }

  it("decideRateLimit never reads an inherited count", () => {
    const drained = { value: 0, ts: T };
    const clean = decideRateLimit(drained, BUCKET, T, {});
    assert.equal(clean.ok, false);
    Object.prototype.count = 0;
    try {
      assert.deepEqual(decideRateLimit(drained, BUCKET, T, {}), clean);
    } finally {
      delete Object.prototype.count;
    }
    tally.add("polluted prototypes");
  });

  const snapshot = (value, ts) => ({ value, ts, shard: 0, config: { ...BUCKET, capacity: 10, shards: 1 } });
  const preview = (state, options = {}) => new RateLimitPreview(state, { now: () => T, ...options });
  const previewCases = [
    ["a snapshot { value: null, ts: null }", () => preview(snapshot(null, null)).status(), "CORRUPT_STATE", undefined],
    ['a snapshot { value: 0, ts: "0" }', () => preview(snapshot(0, "0")).status(), "CORRUPT_STATE", undefined],
    ...["3", true, 1n].map((count) => [`count ${typeof count === "bigint" ? "1n" : JSON.stringify(count)}`, () => preview(snapshot(0, T)).status({ count }), "INVALID_REQUEST", undefined]),
    ["count null", () => preview(snapshot(0, T)).status({ count: null }), "INVALID_REQUEST", undefined],
    // `at` is an argument of status, not of the decision: the preview names it as INVALID_ARGUMENT.
    ['at "x"', () => preview(snapshot(0, T)).status({ at: "x" }), "INVALID_ARGUMENT", undefined],
    ["at null", () => preview(snapshot(0, T)).status({ at: null }), "INVALID_ARGUMENT", undefined],
    ["status(null)", () => preview(snapshot(0, T)).status(null), undefined, undefined],
    ["an unknown status option", () => preview(snapshot(0, T)).status({ cont: 1 }), undefined, undefined],
    ["constructor options null", () => new RateLimitPreview(snapshot(0, T), null), undefined, undefined],
    ["a null snapshot", () => new RateLimitPreview(null), undefined, undefined],
    ["a misspelled constructor option", () => new RateLimitPreview(snapshot(0, T), { nwo: () => T }), undefined, undefined],
    ["now: 5", () => preview(snapshot(0, T), { now: 5 }).status(), undefined, undefined],
    ['serverTimeOffset "5"', () => new RateLimitPreview(snapshot(0, T), { serverTimeOffset: "5" }), undefined, undefined],
  ];
  for (const [what, call, code, todo] of previewCases) {
    it(`RateLimitPreview with ${what} fails with ${code ?? "an error carrying a code"}`, { todo }, async () => {
      tally.add("hostile options");
      await rejectsWith(call, code, what);
    });
  }

  it("RateLimitPreview never reads an inherited count", () => {
    const drained = preview(snapshot(0, T));
    const clean = drained.status({});
    assert.equal(clean.ok, false);
    Object.prototype.count = 0;
    let polluted;
    try {
      polluted = drained.status({});
    } finally {
      delete Object.prototype.count;
    }
    tally.add("polluted prototypes");
    assert.deepEqual(polluted, clean);
  });
});

describe("item 5: no input reaches a WebAssembly trap", () => {
  const NAMES = [["5", 5], ["{}", {}], ["true", true], ["5n", 5n], ["a Symbol", Symbol("name")], ["null", null]];
  const limits = { bucket: BUCKET };
  const entries = {
    "decideRateLimit(null, config, now, { name })": (name) => decideRateLimit(null, BUCKET, T, { name }),
    "new RateLimitPreview(snapshot, { name }).status()": (name) =>
      new RateLimitPreview({ value: 0, ts: T, shard: 0, config: { ...BUCKET, capacity: 10, shards: 1 } }, { name, now: () => T }).status(),
  };
  for (const path of ["MemoryStore", "callback store"]) {
    const limiter = new RateLimiter(path === "MemoryStore" ? new MemoryStore() : new CheckedStore(), limits, { now: () => T });
    Object.assign(entries, {
      [`limit (${path})`]: (name) => limiter.limit(name),
      [`limit with an inline config (${path})`]: (name) => limiter.limit(name, { config: BUCKET }),
      [`check (${path})`]: (name) => limiter.check(name),
      [`getValue (${path})`]: (name) => limiter.getValue(name),
      [`reset (${path})`]: (name) => limiter.reset(name),
      [`limitAll (${path})`]: (name) => limiter.limitAll([{ name }]),
      [`checkAll (${path})`]: (name) => limiter.checkAll([{ name }]),
    });
  }
  for (const [entry, call] of Object.entries(entries)) {
    it(`${entry} answers every bad name with an Error carrying a code, never a RuntimeError, and the same instance still decides exactly right`, async () => {
      for (const [label, name] of NAMES) {
        tally.add("trap attempts");
        await rejectsWith(() => call(name), undefined, `${entry} with name ${label}`);
      }
      // The same WebAssembly instance still decides exactly right.
      const after = new RateLimiter(new MemoryStore(), limits, { now: () => T });
      for (let call = 0; call < 10; call++) assert.deepEqual(await after.limit("bucket"), { ok: true });
      assert.deepEqual(await after.limit("bucket"), { ok: false, retryAfter: 100 });
      assert.deepEqual(decideRateLimit({ value: 0, ts: T }, BUCKET, T, { name: "ok" }), { ok: false, retryAfter: 100, value: -1, ts: T });
    });
  }
});

describe("item 8: every error has a code", () => {
  const limits = { bucket: BUCKET };
  const limiter = new RateLimiter(new MemoryStore(), limits, { now: () => T });
  const cases = [
    ["a null store", () => new RateLimiter(null, limits)],
    ["a store {}", () => new RateLimiter({}, limits)],
    ["a store without write", () => new RateLimiter({ read: () => null }, limits)],
    ["limits null", () => new RateLimiter(new MemoryStore(), null)],
    ["limits as an array", () => new RateLimiter(new MemoryStore(), [BUCKET])],
    ["limits as a Map", () => new RateLimiter(new MemoryStore(), new Map([["bucket", BUCKET]]))],
    ["random: 5", () => new RateLimiter(new MemoryStore(), limits, { random: 5 })],
    ["now: 5", () => new RateLimiter(new MemoryStore(), limits, { now: 5 })],
    ["a misspelled limiter option", () => new RateLimiter(new MemoryStore(), limits, { Now: () => T })],
    ["limitAll({})", () => limiter.limitAll({})],
    ["limitAll([null])", () => limiter.limitAll([null])],
    ["checkAll(5)", () => limiter.checkAll(5)],
    ...["limit", "check", "getValue", "reset"].map((method) => [`${method} options null`, () => limiter[method]("bucket", null)]),
    ["limitAll options null", () => limiter.limitAll([{ name: "bucket" }], null)],
    ["new MemoryStore(null)", () => new MemoryStore(null)],
    ["new MemoryStore({ maxkeys: 5 })", () => new MemoryStore({ maxkeys: 5 })],
    ["decideRateLimit count 1n", () => decideRateLimit(null, BUCKET, T, { count: 1n })],
  ];
  for (const [what, call] of cases) {
    it(`${what} fails with an Error carrying a code`, async () => {
      tally.add("hostile options");
      await rejectsWith(call, undefined, what);
    });
  }

  for (const kind of KINDS) {
    it(`${kind}: a config that gains an unknown field after first use is refused with INVALID_CONFIG`, async () => {
      const config = { kind, rate: 1, period: HOUR, ...(kind === "fixed window" ? { start: 0 } : {}) };
      assert.equal(calculateRateLimit(null, config, T).value, 1);
      await limiter.limit("inline", { config });
      config.extra = 1;
      tally.add("hostile options", 3);
      await rejectsWith(() => calculateRateLimit(null, config, T), "INVALID_CONFIG", "calculateRateLimit");
      await rejectsWith(() => decideRateLimit(null, config, T), "INVALID_CONFIG", "decideRateLimit");
      await rejectsWith(() => limiter.limit("inline", { config }), "INVALID_CONFIG", "limit with an inline config");
    });
  }

  it("withJitter stays below retryAfter + maxJitter even when random returns the largest double below 1", () => {
    const jittered = withJitter(100, 10, () => 0.9999999999999999);
    assert.ok(jittered >= 100 && jittered < 110, `withJitter gave ${jittered}`);
    tally.add("hostile options");
  });
});
