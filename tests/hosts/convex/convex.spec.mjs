// ratebound/convex in real Convex functions (convex-test): limit, check, getValue and reset through
// mutations and queries; ConvexError refusals; rollbacks; parallel mutations on one key; two
// limits in one mutation; the component's existing data; keys that never collide.
import { convexTest } from "convex-test";
import { ConvexError } from "convex/values";
import { isRateLimitError } from "ratebound";
import { rateLimitTables } from "ratebound/convex";
import { describe, expect, test } from "vitest";
import componentSchema from "../../../node_modules/@convex-dev/rate-limiter/dist/component/schema.js";
import { COLLIDING_REFS, stateFor } from "../collisions.mjs";
import { api } from "./app/convex/_generated/api.js";
import schema from "./app/convex/schema.js";

const modules = import.meta.glob("./app/convex/**/*.*s");
const now = 1_700_000_000_000;
const app = () => convexTest(schema, modules);

/** The rows a test left in `rateLimits`, without Convex's own fields. */
const rows = async (t) => (await t.query(api.limits.everything, {})).rateLimits;

describe("the table", () => {
  test("rateLimitTables has exactly the component's rateLimits table: fields, optional key and index", () => {
    expect(rateLimitTables.rateLimits.export()).toEqual(componentSchema.tables.rateLimits.export());
  });
});

describe("dry runs in a mutation", () => {
  test("a call's dryRun is never refused: granted calls charge as enforcing does, a would-be refusal charges nothing", async () => {
    const t = app();
    const ask = { name: "sendMessage", key: "ada", now, dryRun: true, throws: true };
    expect(await t.mutation(api.limits.limit, ask)).toEqual({ ok: true, dryRun: { ok: true } });
    expect(await t.mutation(api.limits.limit, ask)).toEqual({ ok: true, dryRun: { ok: true } });
    expect(await t.mutation(api.limits.limit, ask)).toEqual({ ok: true, dryRun: { ok: false, retryAfter: 500 } });
    // The state is what enforcing left: the bucket spent, not in debt (the would-be refusal wrote nothing).
    expect((await t.query(api.limits.getValue, { name: "sendMessage", key: "ada", now })).value).toBe(0);
    expect(await t.mutation(api.limits.limit, { name: "sendMessage", key: "ada", now: now + 500 })).toEqual({ ok: true });
  });
});

describe("limit, check, getValue and reset through mutations and queries", () => {
  test("mutations take tokens, queries check and read the value, reset forgets", async () => {
    const t = app();
    const ask = { name: "sendMessage", key: "ada", now };
    expect(await t.mutation(api.limits.limit, ask)).toEqual({ ok: true });
    expect(await t.query(api.limits.getValue, ask)).toMatchObject({ value: 1, ts: now, shard: 0 });
    expect(await t.mutation(api.limits.limit, ask)).toEqual({ ok: true });
    expect(await t.query(api.limits.check, ask)).toEqual({ ok: false, retryAfter: 500 });
    expect(await t.mutation(api.limits.limit, { ...ask, now: now + 250 })).toEqual({ ok: false, retryAfter: 250 });
    expect(await t.query(api.limits.check, { ...ask, key: "bob" })).toEqual({ ok: true });
    expect(await rows(t)).toEqual([{ name: "sendMessage", key: "ada", shard: 0, value: 0, ts: now }]);

    await t.mutation(api.limits.reset, { name: "sendMessage", key: "ada" });
    expect(await rows(t)).toEqual([]);
    expect(await t.query(api.limits.getValue, ask)).toMatchObject({ value: 2, shard: 0 });
    expect(await t.query(api.limits.check, ask)).toEqual({ ok: true });
  });

  test("the shared state (no key) and the key \"\" are different rows", async () => {
    const t = app();
    await t.mutation(api.limits.limit, { name: "sendMessage", now });
    await t.mutation(api.limits.limit, { name: "sendMessage", key: "", now, count: 2 });
    expect(await rows(t)).toEqual([
      { name: "sendMessage", shard: 0, value: 1, ts: now },
      { name: "sendMessage", key: "", shard: 0, value: 0, ts: now },
    ]);
  });

  test("in a query, check and getValue work and limit is a clear error, granted or refused", async () => {
    const t = app();
    const ask = { name: "sendMessage", key: "ada", now };
    await expect(t.query(api.limits.limitInQuery, ask)).rejects.toThrow(/limit writes rate limit state, which needs a mutation/);
    await t.mutation(api.limits.limit, { ...ask, count: 2 });
    expect(await t.query(api.limits.check, ask)).toEqual({ ok: false, retryAfter: 500 });
    await expect(t.query(api.limits.limitInQuery, ask)).rejects.toThrow(/limit writes rate limit state, which needs a mutation/);
    await expect(t.query(api.limits.resetInQuery, { name: "sendMessage", key: "ada" })).rejects.toThrow(/reset writes rate limit state/);
    expect(await rows(t)).toEqual([{ name: "sendMessage", key: "ada", shard: 0, value: 0, ts: now }]);
  });

  test("the core RateLimiter over a query's convexStore fails closed with the same clear error when it would write", async () => {
    const t = app();
    await expect(t.query(api.limits.coreLimitInQuery, { name: "sendMessage", key: "ada", now })).rejects.toThrow(
      /ratebound\/convex: limit writes rate limit state, which needs a mutation; ctx\.db is read-only here/,
    );
    expect(await rows(t)).toEqual([]);
  });
});

describe("refusals with throws: true", () => {
  test("a mutation's refusal reaches the client as a ConvexError whose data isRateLimitError recognises", async () => {
    const t = app();
    const ask = { name: "sendMessage", key: "ada", now, count: 2 };
    await t.mutation(api.limits.limit, ask);
    const error = await t.mutation(api.limits.limit, { ...ask, count: 1, throws: true }).catch((caught) => caught);
    expect(error).toBeInstanceOf(ConvexError);
    expect(error.data).toEqual({ kind: "RateLimited", name: "sendMessage", retryAfter: 500 });
    expect(isRateLimitError(error)).toBe(true);
  });

  test("inside the function the refusal is a ConvexError too, and isRateLimitError recognises it there", async () => {
    const t = app();
    await t.mutation(api.limits.limit, { name: "sendMessage", key: "ada", now, count: 2 });
    expect(await t.mutation(api.limits.limitCatching, { name: "sendMessage", key: "ada", now })).toEqual({
      isConvexError: true,
      isRateLimitError: true,
      data: { kind: "RateLimited", name: "sendMessage", retryAfter: 500 },
    });
  });

  test("a query's check with throws: true raises the same ConvexError", async () => {
    const t = app();
    await t.mutation(api.limits.limit, { name: "sendMessage", key: "ada", now, count: 2 });
    const error = await t.query(api.limits.check, { name: "sendMessage", key: "ada", now, throws: true }).catch((caught) => caught);
    expect(error).toBeInstanceOf(ConvexError);
    expect(error.data).toEqual({ kind: "RateLimited", name: "sendMessage", retryAfter: 500 });
  });
});

describe("the mutation's transaction", () => {
  test("a mutation that consumes and then throws leaves no trace", async () => {
    const t = app();
    await expect(t.mutation(api.limits.sendThenFail, { user: "ada", now })).rejects.toThrow(/failing after the limit granted/);
    expect(await t.query(api.limits.everything, {})).toEqual({ rateLimits: [], messages: [] });
    expect(await t.query(api.limits.getValue, { name: "perUser", key: "ada", now })).toMatchObject({ value: 3 });
  });

  for (const batch of [true, false]) {
    test(`two limits consumed in one mutation are all-or-nothing (${batch ? "limitAll" : "two limit calls"})`, async () => {
      const t = app();
      // global allows 2 a day; ada's and bob's messages use it up.
      await t.mutation(api.limits.sendWithTwoLimits, { user: "ada", now, batch });
      await t.mutation(api.limits.sendWithTwoLimits, { user: "bob", now, batch });
      const before = await t.query(api.limits.everything, {});
      const error = await t.mutation(api.limits.sendWithTwoLimits, { user: "cy", now, batch }).catch((caught) => caught);
      expect(isRateLimitError(error)).toBe(true);
      expect(error.data.name).toBe(batch ? "perUser, global" : "global");
      expect(await t.query(api.limits.everything, {})).toEqual(before); // cy's perUser token came back
      expect(await t.query(api.limits.getValue, { name: "perUser", key: "cy", now })).toMatchObject({ value: 3 });
      expect(before.messages).toHaveLength(2);
    });
  }
});

describe("many mutations in parallel on one key", () => {
  const parallel = (count, call) => Promise.all(Array.from({ length: count }, (_, index) => call(index)));
  const admitted = (results) => results.filter((result) => result.ok).length;

  test("never admit more than the bound: 40 mutations, 10 tokens, exactly 10 admitted", async () => {
    const t = app();
    const results = await parallel(40, () => t.mutation(api.limits.limit, { name: "daily", key: "ada", now }));
    expect(admitted(results)).toBe(10);
    expect(await rows(t)).toEqual([{ name: "daily", key: "ada", shard: 0, value: 0, ts: now }]);
  });

  test("lose no update: 7 parallel mutations under the bound leave exactly 3 tokens", async () => {
    const t = app();
    const results = await parallel(7, () => t.mutation(api.limits.limit, { name: "daily", key: "ada", now }));
    expect(admitted(results)).toBe(7);
    expect(await rows(t)).toEqual([{ name: "daily", key: "ada", shard: 0, value: 3, ts: now }]);
  });

  test("a sharded limit never admits more than its bound, and its shards account for every token taken", async () => {
    const t = app();
    const results = await parallel(60, () => t.mutation(api.limits.limit, { name: "dailySharded", key: "ada", now }));
    const taken = admitted(results);
    expect(taken).toBeLessThanOrEqual(20);
    expect(taken).toBeGreaterThan(0);
    const stored = await rows(t);
    const untouched = 5 - stored.length; // a shard never written is full: 4 tokens
    expect(stored.reduce((sum, row) => sum + row.value, 0) + untouched * 4).toBeCloseTo(20 - taken, 9);
  });

  test("the harness sees over-admission: a store whose reads and writes are separate transactions admits more than the bound", async () => {
    const t = app();
    const results = await parallel(40, () => t.action(api.limits.limitWithoutTransaction, { name: "daily", key: "ada", now }));
    expect(admitted(results)).toBeGreaterThan(10);
  });
});

describe("data written by @convex-dev/rate-limiter keeps working", () => {
  // The component reads the clock itself: a limit that refills one token a day keeps the counts exact.
  const config = { kind: "token bucket", rate: 1, period: 86_400_000, capacity: 5 };

  test("the component's writes read the same through ratebound, and ratebound's through the component", async () => {
    const t = app();
    for (let index = 0; index < 3; index++) {
      expect(await t.mutation(api.component.rateLimit, { name: "legacy", key: "ada", config })).toMatchObject({ ok: true });
    }
    const value = await t.query(api.limits.getValue, { name: "legacy", key: "ada", now: Date.now() });
    expect(value.value).toBeCloseTo(2, 3);

    // ratebound takes the last two; the component then sees none left.
    expect(await t.mutation(api.limits.limit, { name: "legacy", key: "ada", count: 2, now: Date.now() })).toEqual({ ok: true });
    expect((await t.query(api.component.checkRateLimit, { name: "legacy", key: "ada", config })).ok).toBe(false);
    expect(await rows(t)).toHaveLength(1);
  });
});

describe("keys that never collide", () => {
  test("every (name, key, shard) triple is its own row, however its strings look", async () => {
    const t = app();
    const states = COLLIDING_REFS.map((_, index) => stateFor(index));
    expect(await t.mutation(api.limits.writeAndReadRefs, { refs: COLLIDING_REFS, states })).toEqual(states);
    expect(await t.query(api.limits.readRefs, { refs: COLLIDING_REFS })).toEqual(states);
    expect(await rows(t)).toHaveLength(COLLIDING_REFS.length);
  });

  test('limits named "a:b" with key "c" and "a" with key "b:c" are independent', async () => {
    const t = app();
    const config = { kind: "token bucket", rate: 1, period: 86_400_000 };
    await t.run(async (ctx) => {
      const { RateLimiter, convexStore } = await import("ratebound/convex");
      const limiter = new RateLimiter(convexStore(ctx.db), {}, { now: () => now });
      expect(await limiter.limit("a:b", { key: "c", config })).toEqual({ ok: true });
      expect(await limiter.limit("a", { key: "b:c", config })).toEqual({ ok: true });
      expect((await limiter.check("a:b", { key: "c", config })).ok).toBe(false);
    });
  });
});
