// ratebound's Convex component (pkg/convex-component) registered in a test app with convex-test,
// called through its app-side client (its layout: ./layout.spec.mjs). Where SPEC agrees with @convex-dev/rate-limiter 0.3.2, each
// call is made through the reference's client and component too, and the answers and rows must be
// equal; where SPEC deviates, the test says so and checks ratebound's side.
import { convexTest } from "convex-test";
import { ConvexError } from "convex/values";
import { isRateLimitError as referenceIsRateLimitError } from "@convex-dev/rate-limiter";
import { isRateLimitError } from "ratebound/convex-component";
import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import referenceSchema from "../../node_modules/@convex-dev/rate-limiter/dist/component/schema.js";
import componentSchema from "../../pkg/convex-component/schema.js";
import { api } from "./app/convex/_generated/api.js";
import schema from "./app/convex/schema.js";

const modules = import.meta.glob("./app/convex/**/*.*s");
const componentModules = import.meta.glob("../../pkg/convex-component/**/*.js");
const referenceModules = import.meta.glob("../../node_modules/@convex-dev/rate-limiter/dist/component/**/*.js");

const start = Date.UTC(2026, 0, 1);
const at = (ms) => vi.setSystemTime(start + ms);
beforeEach(() => {
  vi.useFakeTimers({ toFake: ["Date"] });
  at(0);
});
afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

/** The test app with ratebound's component as `rateLimiter` and the reference's as `reference`. */
function app() {
  const t = convexTest(schema, modules);
  t.registerComponent("rateLimiter", componentSchema, componentModules);
  t.registerComponent("reference", referenceSchema, referenceModules);
  return t;
}

/** A component's `rateLimits` rows, without Convex's own fields, in a stable order. */
async function rows(t, component = "rateLimiter") {
  const docs = await t.runInComponent(component, (ctx) => ctx.db.query("rateLimits").collect());
  return docs
    .map(({ _id, _creationTime, ...row }) => row)
    .sort((a, b) => `${a.name}\u0000${a.key ?? ""}\u0000${a.shard}`.localeCompare(`${b.name}\u0000${b.key ?? ""}\u0000${b.shard}`));
}

/** The settled outcome of a call: its value, or its error's class, message and data. */
const outcome = (promise) =>
  promise.then(
    (value) => ({ value }),
    (error) => ({ error: error instanceof ConvexError ? "ConvexError" : "Error", message: error.message.split("\n")[0], data: error.data }),
  );

/** The reference's outcome as ratebound answers it: waits in whole ms, rounded up (src/result.rs caller_wait). */
function inWholeMs(theirs) {
  const wait = theirs.value?.retryAfter ?? theirs.data?.retryAfter;
  if (typeof wait !== "number") return theirs;
  return theirs.value !== undefined ? { ...theirs, value: { ...theirs.value, retryAfter: Math.ceil(wait) } } : { ...theirs, data: { ...theirs.data, retryAfter: Math.ceil(wait) } };
}

/** Runs one call through both components; their outcomes must be equal (the reference's wait rounded up to whole ms). */
async function both(t, run, args) {
  const ours = await outcome(run(args));
  const theirs = inWholeMs(await outcome(run({ ...args, impl: "reference" })));
  expect(ours, JSON.stringify(args)).toEqual(theirs);
  return ours;
}

const ALGORITHMS = ["token bucket", "fixed window"];
/** A limit of each kind: 10 tokens per second, windows starting at `start` (so both are deterministic). */
const limitOf = (kind, extra = {}) => ({ kind, rate: 10, period: 1000, ...(kind === "fixed window" ? { start } : {}), ...extra });

describe.each(ALGORITHMS)("%s: every decision equals the reference's", (kind) => {
  test("takes tokens to capacity, refuses with retryAfter, and grants again exactly retryAfter later", async () => {
    const t = app();
    const config = limitOf(kind, { capacity: 3 });
    const ask = { name: "burst", key: "ada", config };
    for (let i = 0; i < 3; i++) expect(await both(t, (a) => t.mutation(api.calls.limit, a), ask)).toEqual({ value: { ok: true } });
    const refused = await both(t, (a) => t.mutation(api.calls.limit, a), ask);
    expect(refused.value.ok).toBe(false);
    expect(refused.value.retryAfter).toBe(kind === "token bucket" ? 100 : 1000);
    at(refused.value.retryAfter - 1);
    expect((await both(t, (a) => t.query(api.calls.check, a), ask)).value.ok).toBe(false);
    at(refused.value.retryAfter);
    expect(await both(t, (a) => t.mutation(api.calls.limit, a), ask)).toEqual({ value: { ok: true } });
    expect(await rows(t)).toEqual(await rows(t, "reference"));
    expect(await rows(t)).toHaveLength(1);
  });

  test("check answers what limit would, and writes nothing", async () => {
    const t = app();
    const ask = { name: "checked", config: limitOf(kind), count: 4 };
    expect(await both(t, (a) => t.query(api.calls.check, a), ask)).toEqual({ value: { ok: true } });
    expect(await rows(t)).toEqual([]);
    await both(t, (a) => t.mutation(api.calls.limit, a), { ...ask, count: 8 });
    expect(await both(t, (a) => t.query(api.calls.check, a), ask)).toMatchObject({ value: { ok: false } });
    expect(await rows(t)).toEqual(await rows(t, "reference"));
  });

  test("named limits come from the client's limits; an unknown name without config is the reference's error", async () => {
    const t = app();
    expect(await both(t, (a) => t.mutation(api.calls.limit, a), { name: "perSecond", key: "ada", count: 2 })).toEqual({ value: { ok: true } });
    expect(await both(t, (a) => t.query(api.calls.check, a), { name: "perSecond", key: "ada" })).toMatchObject({ value: { ok: false } });
    const unknown = await both(t, (a) => t.mutation(api.calls.limit, a), { name: "nope" });
    expect(unknown.message).toMatch(/Rate limit nope not defined\. You must provide a config inline or define it in the constructor\./);
  });

  test("reservations: debt up to maxReserved is granted with a retryAfter, beyond it refused", async () => {
    const t = app();
    const ask = { name: "reserved", config: limitOf(kind, { maxReserved: 10 }), reserve: true };
    expect(await both(t, (a) => t.mutation(api.calls.limit, a), { ...ask, count: 10 })).toEqual({ value: { ok: true } });
    const reserved = await both(t, (a) => t.mutation(api.calls.limit, a), { ...ask, count: 5 });
    expect(reserved.value).toEqual({ ok: true, retryAfter: kind === "token bucket" ? 500 : 1000 });
    const refused = await both(t, (a) => t.mutation(api.calls.limit, a), { ...ask, count: 6 });
    expect(refused.value.ok).toBe(false);
    const unbounded = { ...ask, name: "unbounded", config: limitOf(kind) };
    expect((await both(t, (a) => t.mutation(api.calls.limit, a), { ...unbounded, count: 35 })).value).toEqual({
      ok: true,
      retryAfter: kind === "token bucket" ? 2500 : 3000,
    });
    expect(await rows(t)).toEqual(await rows(t, "reference"));
  });

  test("a count that can never succeed is an error with the reference's message, and writes nothing", async () => {
    const t = app();
    const tooMany = await both(t, (a) => t.mutation(api.calls.limit, a), { name: "big", config: limitOf(kind), count: 11 });
    expect(tooMany).toMatchObject({ error: "Error", message: expect.stringContaining("Rate limit big count 11 exceeds 10.") });
    const tooManyReserved = await both(t, (a) => t.mutation(api.calls.limit, a), {
      name: "big",
      config: limitOf(kind, { maxReserved: 5 }),
      count: 16,
      reserve: true,
    });
    expect(tooManyReserved.message).toContain("Rate limit big count 16 exceeds 15.00.");
    const sharded = await both(t, (a) => t.mutation(api.calls.limit, a), { name: "big", config: limitOf(kind, { shards: 4 }), count: 6 });
    expect(sharded.message).toContain("Rate limit big count 6 exceeds 5 per 4 shards.");
    expect(await rows(t)).toEqual([]);
  });

  test("throws: a refusal is a ConvexError { kind: \"RateLimited\", name, retryAfter } that both isRateLimitErrors recognise", async () => {
    const t = app();
    const ask = { name: "thrown", key: "ada", config: limitOf(kind, { capacity: 1 }), throws: true };
    await both(t, (a) => t.mutation(api.calls.limit, a), ask);
    const refused = await both(t, (a) => t.mutation(api.calls.limit, a), ask);
    expect(refused).toMatchObject({ error: "ConvexError", data: { kind: "RateLimited", name: "thrown", retryAfter: kind === "token bucket" ? 100 : 1000 } });
    expect(await both(t, (a) => t.query(api.calls.check, a), ask)).toMatchObject({ error: "ConvexError", data: refused.data });
    const error = await t.mutation(api.calls.limit, ask).catch((caught) => caught);
    expect(error).toBeInstanceOf(ConvexError);
    expect(isRateLimitError(error)).toBe(true);
    expect(referenceIsRateLimitError(error)).toBe(true);
    expect(isRateLimitError(new ConvexError({ kind: "Other" }))).toBe(false);
  });

  test("getValue of an unsharded limit reports the stored state and the config with its defaults", async () => {
    const t = app();
    const ask = { name: "valued", key: "ada", config: limitOf(kind, { capacity: 5 }) };
    at(250);
    await both(t, (a) => t.mutation(api.calls.limit, a), { ...ask, count: 2 });
    at(400);
    const ours = await t.query(api.calls.getValue, ask);
    expect(ours).toEqual(await t.query(api.calls.getValue, { ...ask, impl: "reference" }));
    expect(ours).toEqual({
      value: 3,
      ts: start + (kind === "token bucket" ? 250 : 0),
      shard: 0,
      config: { ...ask.config, capacity: 5, shards: 1 },
    });
  });

  test("reset with a key forgets that key on every shard; without a key, the shared state only", async () => {
    const t = app();
    const config = limitOf(kind, { shards: 2, capacity: 20 });
    for (const key of ["ada", "bob", undefined]) {
      for (let i = 0; i < 6; i++) await t.mutation(api.calls.limit, { name: "resettable", key, config, count: 2 });
    }
    await t.mutation(api.calls.limit, { name: "other", key: "ada", config: limitOf(kind) });
    const before = await rows(t);
    expect(before.filter((row) => row.key === "ada" && row.name === "resettable").map((row) => row.shard).sort()).toEqual([0, 1]);
    await t.mutation(api.calls.reset, { name: "resettable", key: "ada" });
    expect(await rows(t)).toEqual(before.filter((row) => !(row.name === "resettable" && row.key === "ada")));
    await t.mutation(api.calls.reset, { name: "resettable" });
    expect(await rows(t)).toEqual(before.filter((row) => !(row.name === "resettable" && row.key !== "bob")));
    expect(await t.query(api.calls.check, { name: "resettable", key: "ada", config, count: 10 })).toEqual({ ok: true });
  });

  test.each([1, 2, 3, 4])("%i shard(s): never more than the bound, every token accounted for, getValue sees the whole limit", async (shards) => {
    const t = app();
    const config = limitOf(kind, { capacity: 12, shards });
    let admitted = 0;
    for (let i = 0; i < 30; i++) {
      if ((await t.mutation(api.calls.limit, { name: "sharded", key: "ada", config })).ok) admitted++;
      if (i === 5) expect(admitted).toBe(6); // the first half of a full limit is always granted
    }
    expect(admitted).toBeLessThanOrEqual(12);
    expect(admitted).toBeGreaterThanOrEqual(12 - shards);
    const stored = await rows(t);
    expect(stored.every((row) => row.name === "sharded" && row.key === "ada" && row.shard >= 0 && row.shard < shards)).toBe(true);
    // No time has passed: what is left in the shards (a missing shard is full) is what was not admitted.
    const perShard = 12 / shards;
    const left = Array.from({ length: shards }, (_, shard) => stored.find((row) => row.shard === shard)?.value ?? perShard);
    expect(left.reduce((sum, value) => sum + value, 0)).toBeCloseTo(12 - admitted, 9);
    const value = await t.query(api.calls.getValue, { name: "sharded", key: "ada", config, sampleShards: shards });
    expect(value.value).toBeCloseTo(12 - admitted, 9);
    expect(value.config).toEqual({ ...config, capacity: 12, shards });
    const one = await t.query(api.calls.getValue, { name: "sharded", key: "ada", config });
    expect(left.map((shardValue) => shardValue * shards)).toContainEqual(expect.closeTo(one.value, 9));
  });
});

describe("state the reference wrote keeps working", () => {
  test.each(ALGORITHMS)("%s: rows written by @convex-dev/rate-limiter's component decide the same in ratebound's", async (kind) => {
    const t = app();
    const ask = { name: "legacy", key: "ada", config: limitOf(kind, { capacity: 4 }) };
    for (let i = 0; i < 3; i++) await t.mutation(api.calls.limit, { ...ask, impl: "reference" });
    const legacy = await t.runInComponent("reference", (ctx) => ctx.db.query("rateLimits").collect());
    // Switching keeps the component's table: the same rows, now read by ratebound.
    await t.runInComponent("rateLimiter", async (ctx) => {
      for (const { _id, _creationTime, ...row } of legacy) await ctx.db.insert("rateLimits", row);
    });
    at(150);
    for (let i = 0; i < 4; i++) await both(t, (a) => t.mutation(api.calls.limit, a), ask);
    expect(await both(t, (a) => t.query(api.calls.getValue, a), { name: "legacy", key: "ada", config: ask.config })).toBeDefined();
    expect(await rows(t)).toEqual(await rows(t, "reference"));
  });
});

describe("transactions", () => {
  test("a mutation that takes tokens and then throws leaves the component's table (and the app's) untouched", async () => {
    const t = app();
    await t.mutation(api.calls.send, { user: "ada", body: "first" });
    const before = await rows(t);
    await expect(t.mutation(api.calls.limitThenThrow, { user: "ada" })).rejects.toThrow(/failed after taking tokens \(ok: true\)/);
    expect(await rows(t)).toEqual(before);
    expect((await t.run((ctx) => ctx.db.query("messages").collect())).map((message) => message.body)).toEqual(["first"]);
  });

  test("a refusal caught inside the app's mutation is a ConvexError the app can read; nothing is taken", async () => {
    const t = app();
    expect(await t.mutation(api.calls.limitAndCatch, { name: "perSecond", key: "ada" })).toBe("granted");
    expect(await t.mutation(api.calls.limitAndCatch, { name: "perSecond", key: "ada" })).toBe("granted");
    const before = await rows(t);
    expect(await t.mutation(api.calls.limitAndCatch, { name: "perSecond", key: "ada" })).toEqual({
      refused: { kind: "RateLimited", name: "perSecond", retryAfter: 500 },
    });
    expect(await rows(t)).toEqual(before);
  });

  test.each(ALGORITHMS)("%s: limitAll takes every limit or none, in one component call", async (kind) => {
    const t = app();
    const small = { name: "small", key: "ada", config: limitOf(kind, { capacity: 1 }) };
    const large = { name: "large", config: limitOf(kind) };
    expect(await t.mutation(api.calls.limitAll, { requests: [small, { ...large, count: 5 }] })).toEqual({ ok: true });
    const before = await rows(t);
    expect(before.map((row) => [row.name, row.value])).toEqual([["large", 5], ["small", 0]]);
    const refused = await t.mutation(api.calls.limitAll, { requests: [{ ...large, count: 5 }, small] });
    expect(refused).toEqual({ ok: false, retryAfter: kind === "token bucket" ? 100 : 1000 });
    expect(await t.query(api.calls.checkAll, { requests: [{ ...large, count: 5 }, small] })).toEqual(refused);
    expect(await rows(t)).toEqual(before); // "large" was not taken while "small" refused
    const thrown = await t.mutation(api.calls.limitAll, { requests: [small, large], throws: true }).catch((caught) => caught);
    expect(thrown).toBeInstanceOf(ConvexError);
    expect(thrown.data).toEqual({ kind: "RateLimited", name: "small, large", retryAfter: refused.retryAfter });
    expect(await t.mutation(api.calls.limitAll, { requests: [{ name: "perSecond", key: "ada", count: 2 }] })).toEqual({ ok: true });
  });
});

describe("the browser's API and the component's housekeeping", () => {
  test("hookAPI's getRateLimit query answers as the reference's, and getServerTime is the server's clock", async () => {
    const t = app();
    await t.mutation(api.calls.send, { user: "ada", body: "hi" });
    await t.mutation(api.calls.limit, { impl: "reference", name: "sendMessage", key: "ada" });
    at(2000);
    const ours = await t.query(api.calls.getRateLimit, { key: "ada" });
    expect(ours).toEqual(await t.query(api.calls.referenceGetRateLimit, { key: "ada" }));
    expect(ours).toEqual({ value: 2, ts: start, shard: 0, config: { kind: "token bucket", rate: 10, period: 60_000, capacity: 3, shards: 1 } });
    expect(await t.mutation(api.calls.getServerTime, {})).toBe(start + 2000);
    for (const module of ["lib", "time"]) expect(await t.mutation(api.calls.serverTime, { module })).toBe(start + 2000);
  });

  test("clearAll deletes every state created up to `before` (default: now), as the reference's does", async () => {
    const t = app();
    for (const impl of ["ratebound", "reference"]) {
      for (const key of ["a", "b", "c"]) await t.mutation(api.calls.limit, { impl, name: "sendMessage", key });
    }
    at(10);
    await t.mutation(api.calls.limit, { name: "sendMessage", key: "later" });
    await t.mutation(api.calls.limit, { impl: "reference", name: "sendMessage", key: "later" });
    expect(await rows(t)).toHaveLength(4);
    await both(t, (a) => t.mutation(api.calls.clearAll, a), { before: start + 5 });
    expect((await rows(t)).map((row) => row.key)).toEqual(["later"]);
    expect(await rows(t)).toEqual(await rows(t, "reference"));
    at(20);
    await both(t, (a) => t.mutation(api.calls.clearAll, a), {});
    expect(await rows(t)).toEqual([]);
  });
});

describe("where ratebound deliberately differs from the reference (docs/migrate-from-convex.md)", () => {
  test.each(ALGORITHMS)("%s: maxReserved: 0 means no reservation (the reference reads it as unlimited)", async (kind) => {
    const t = app();
    const ask = { name: "noDebt", config: limitOf(kind, { maxReserved: 0 }), reserve: true, count: 10 };
    await both(t, (a) => t.mutation(api.calls.limit, a), ask);
    expect((await t.mutation(api.calls.limit, { ...ask, count: 5 })).ok).toBe(false);
    expect(await t.mutation(api.calls.limit, { ...ask, count: 5, impl: "reference" })).toEqual({ ok: true, retryAfter: expect.any(Number) });
    // More than the capacity can then never succeed: an error, as without reserve.
    await expect(t.mutation(api.calls.limit, { ...ask, count: 11 })).rejects.toThrow(/Rate limit noDebt count 11 exceeds 10\.00\./);
  });

  test.each(ALGORITHMS)("%s: a negative or non-finite count is an error (the reference mints tokens)", async (kind) => {
    const t = app();
    const ask = { name: "minted", config: limitOf(kind), count: -5 };
    await expect(t.mutation(api.calls.limit, ask)).rejects.toThrow(/count must be a finite number >= 0 \(got -5\)/);
    expect(await rows(t)).toEqual([]);
    expect(await t.mutation(api.calls.limit, { ...ask, impl: "reference" })).toEqual({ ok: true });
  });

  test.each(ALGORITHMS)("%s: configs are validated strictly (the reference accepts these)", async (kind) => {
    const t = app();
    const ours = (config) => t.mutation(api.calls.limit, { name: "strict", config });
    const theirs = (config) => outcome(t.mutation(api.calls.limit, { name: "strict", config, impl: "reference" }));
    const negative = limitOf(kind, { rate: -1 });
    await expect(ours(negative)).rejects.toThrow(/Rate limit "strict": rate must be a positive finite number \(got -1\)/);
    expect(await theirs(negative)).toMatchObject({ message: expect.stringContaining("Rate limit strict count 1 exceeds -1.") });
    const fractional = limitOf(kind, { shards: 1.5 });
    await expect(ours(fractional)).rejects.toThrow(/shards must be an integer from 1 to 1024 \(got 1\.5\)/);
    expect(await theirs(fractional)).toEqual({ value: { ok: true } }); // rounded to 2 shards
    // Unknown fields never reach either: the component's argument validators are the reference's.
    await expect(ours(limitOf(kind, { applyUpdates: true }))).rejects.toThrow(/applyUpdates/);
    expect(await theirs(limitOf(kind, { applyUpdates: true }))).toMatchObject({ message: expect.stringContaining("applyUpdates") });
    expect(await rows(t)).toEqual([]);
  });

  test.each(ALGORITHMS)("%s: throws with reserve returns a granted reservation (the reference throws it and takes nothing)", async (kind) => {
    const t = app();
    const ask = { name: "reserveThrows", config: limitOf(kind), reserve: true, throws: true, count: 15 };
    expect(await t.mutation(api.calls.limit, ask)).toEqual({ ok: true, retryAfter: kind === "token bucket" ? 500 : 1000 });
    const theirs = await outcome(t.mutation(api.calls.limit, { ...ask, impl: "reference" }));
    expect(theirs).toMatchObject({ error: "ConvexError", data: { kind: "RateLimited" } });
    expect(await rows(t, "reference")).toEqual([]);
  });

  test("a clock behind the stored ts neither mints nor burns tokens (token bucket)", async () => {
    const t = app();
    const ask = { name: "stepped", config: limitOf("token bucket") };
    at(1000);
    await both(t, (a) => t.mutation(api.calls.limit, a), { ...ask, count: 10 });
    at(500); // the host clock steps back 500 ms
    expect(await t.query(api.calls.check, ask)).toEqual({ ok: false, retryAfter: 600 });
    expect((await t.query(api.calls.getValue, ask)).ts).toBe(start + 1000);
    expect(await t.query(api.calls.check, { ...ask, impl: "reference" })).toEqual({ ok: false, retryAfter: 600 });
    await t.mutation(api.calls.limit, { ...ask, reserve: true });
    await t.mutation(api.calls.limit, { ...ask, reserve: true, impl: "reference" });
    // ratebound keeps ts and value; the reference moved ts back and burned 5 tokens' worth of time.
    expect(await rows(t)).toEqual([{ name: "stepped", shard: 0, value: -1, ts: start + 1000 }]);
    expect(await rows(t, "reference")).toEqual([{ name: "stepped", shard: 0, value: -6, ts: start + 500 }]);
  });

  test("a sharded getValue reports the whole limit; the reference reports one shard's raw state", async () => {
    const t = app();
    const config = limitOf("token bucket", { shards: 4, capacity: 40 });
    for (const component of ["rateLimiter", "reference"]) {
      await t.runInComponent(component, async (ctx) => {
        for (const [shard, value] of [[0, 2], [1, 4], [2, 6], [3, 8]]) await ctx.db.insert("rateLimits", { name: "spread", shard, value, ts: start });
      });
    }
    const ours = await t.query(api.calls.getValue, { name: "spread", config, sampleShards: 4 });
    expect(ours).toMatchObject({ value: 20, ts: start, shard: 3 }); // (2 + 4 + 6 + 8) / 4 × 4 shards
    const theirs = await t.query(api.calls.getValue, { name: "spread", config, sampleShards: 4, impl: "reference" });
    expect(theirs).toMatchObject({ value: 8, ts: start, shard: 3 }); // the fullest shard's own value
  });

  test("a fresh sharded limit grants a request larger than one shard by combining two (the reference refuses it forever)", async () => {
    const t = app();
    const config = limitOf("token bucket", { shards: 4, capacity: 8 });
    // 3 tokens: more than a shard's 2, within validation's two shards' worth (4).
    expect(await t.mutation(api.calls.limit, { name: "wide", config, count: 3 })).toEqual({ ok: true });
    expect((await rows(t)).map((row) => row.value).reduce((sum, value) => sum + value, 0)).toBeCloseTo(1, 9);
    expect((await t.mutation(api.calls.limit, { name: "wide", config, count: 3, impl: "reference" })).ok).toBe(false);
    expect(await rows(t, "reference")).toEqual([]);
  });
});
