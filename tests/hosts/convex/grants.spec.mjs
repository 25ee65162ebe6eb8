// Grants that settle, in real Convex functions (convex-test): the grant's data crosses function
// boundaries as plain values, settles in another mutation or a scheduled one, once; a mutation
// that fails after settling rolls the settle back; a bad actual writes nothing.
import { convexTest } from "convex-test";
import { describe, expect, test, vi } from "vitest";
import { api } from "./app/convex/_generated/api.js";
import schema from "./app/convex/schema.js";

const modules = import.meta.glob("./app/convex/**/*.*s");
const now = 1_700_000_000_000;

describe("grants in Convex mutations", () => {
  test("a grant taken in one mutation settles in another, once; the data is plain", async () => {
    const t = convexTest(schema, modules);
    await t.mutation(api.grants.take, { key: "team", count: 30_000, now });
    const taken = await t.mutation(api.grants.take, { key: "team", count: 4_000, now });
    expect(taken.ok).toBe(true);
    expect(taken.grant).toMatchObject({ name: "llm", key: "team", count: 4_000, chargedAt: now });
    expect(await t.mutation(api.grants.settle, { grant: taken.grant, actual: 1_000, now })).toEqual({ refunded: 3_000, charged: 0, unpaid: 0 });
    expect(await t.mutation(api.grants.settle, { grant: taken.grant, actual: 0, now })).toEqual({ code: "GRANT_SETTLED" });
    expect((await t.mutation(api.grants.value, { key: "team", now })).value).toBe(9_000);
  });

  test("using more than the estimate takes the extra into debt, reported with its wait", async () => {
    const t = convexTest(schema, modules);
    const taken = await t.mutation(api.grants.take, { key: "team", count: 40_000, now });
    const settled = await t.mutation(api.grants.settle, { grant: taken.grant, actual: 46_000, now });
    expect(settled).toEqual({ refunded: 0, charged: 6_000, unpaid: 0, retryAfter: 9_000 });
  });

  test("a scheduled function settles later; the refund shrinks with the refill since the charge", async () => {
    vi.useFakeTimers();
    try {
      const t = convexTest(schema, modules);
      const taken = await t.mutation(api.grants.take, { key: "team", count: 40_000, now });
      await t.mutation(api.grants.settleLater, { grant: taken.grant, actual: 10_000, now, after: 30_000 });
      await t.finishAllScheduledFunctions(vi.runAllTimers);
      // 30 s refilled 20,000 of the 40,000 room the charge left: 20,000 is the most that comes back.
      expect((await t.mutation(api.grants.value, { key: "team", now: now + 30_000 })).value).toBe(40_000);
      expect(await t.mutation(api.grants.settle, { grant: taken.grant, actual: 0, now: now + 30_000 })).toEqual({ code: "GRANT_SETTLED" });
    } finally {
      vi.useRealTimers();
    }
  });

  test("a mutation that fails after settling rolls the settle back; the grant can settle again", async () => {
    const t = convexTest(schema, modules);
    const taken = await t.mutation(api.grants.take, { key: "team", count: 4_000, now });
    await expect(t.mutation(api.grants.settleThenFail, { grant: taken.grant, now })).rejects.toThrow(/the app failed after settling/);
    expect((await t.mutation(api.grants.value, { key: "team", now })).value).toBe(36_000);
    expect(await t.mutation(api.grants.settle, { grant: taken.grant, actual: 0, now })).toMatchObject({ refunded: 4_000 });
  });

  test("a negative or non-number actual is INVALID_REQUEST and writes nothing", async () => {
    const t = convexTest(schema, modules);
    const taken = await t.mutation(api.grants.take, { key: "team", count: 4_000, now });
    for (const actual of [-1, "10"]) {
      expect(await t.mutation(api.grants.settle, { grant: taken.grant, actual, now })).toEqual({ code: "INVALID_REQUEST" });
    }
    expect((await t.mutation(api.grants.value, { key: "team", now })).value).toBe(36_000);
  });
});
