// Grants in the component (ratebound's addition; the reference's `credit` is capped at capacity,
// not at the charge): rateLimitWithGrant answers the grant's data, settle gives back what was not
// used or takes the extra, in the component's transaction, once; a scheduled settle gets the
// refill-shrunk refund; asynchronous limits refuse grants.
import { convexTest } from "convex-test";
import batchWorkerTest from "@convex-dev/batch-worker/test";
import rateLimiterTest from "ratebound/convex-component/test";
import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import { api } from "./app/convex/_generated/api.js";
import schema from "./app/convex/schema.js";

const modules = import.meta.glob("./app/convex/**/*.*s");
const start = Date.UTC(2026, 0, 1);
beforeEach(() => {
  vi.useFakeTimers();
  vi.setSystemTime(start);
});
afterEach(() => vi.useRealTimers());

function app() {
  const t = convexTest(schema, modules);
  rateLimiterTest.register(t);
  batchWorkerTest.register(t, "rateLimiter/batchWorker");
  return t;
}

describe("grants through the component", () => {
  test("an estimate settles below (refund), above (extra into debt) and cancelled, once each", async () => {
    const t = app();
    await t.mutation(api.grants.take, { key: "team", count: 30_000 });
    const below = await t.mutation(api.grants.take, { key: "team", count: 4_000 });
    expect(below).toMatchObject({ ok: true, grant: { name: "llmTokens", key: "team", count: 4_000, chargedAt: start } });
    expect(await t.mutation(api.grants.settle, { grant: below.grant, actual: 1_000 })).toEqual({ refunded: 3_000, charged: 0, unpaid: 0 });
    expect(await t.mutation(api.grants.settle, { grant: below.grant, actual: 0 })).toEqual({
      error: { kind: "GrantSettled", code: "GRANT_SETTLED", name: "llmTokens" },
    });
    const above = await t.mutation(api.grants.take, { key: "team", count: 4_000 });
    expect(await t.mutation(api.grants.settle, { grant: above.grant, actual: 14_000 })).toEqual({ refunded: 0, charged: 10_000, unpaid: 0, retryAfter: 7_500 });
    const cancelled = await t.mutation(api.grants.take, { key: "team", count: 2_000 });
    expect(cancelled.ok).toBe(true);
    expect((await t.mutation(api.grants.settle, { grant: cancelled.grant, actual: 0 })).refunded).toBe(2_000);
    expect((await t.mutation(api.grants.value, { key: "team" })).value).toBe(-5_000);
  });

  test("a scheduled function settles later: the refund is what the charge's state could still hold", async () => {
    const t = app();
    const taken = await t.mutation(api.grants.take, { key: "team", count: 40_000 });
    await t.mutation(api.grants.settleLater, { grant: taken.grant, actual: 10_000, after: 30_000 });
    await t.finishAllScheduledFunctions(vi.runAllTimers);
    expect((await t.mutation(api.grants.value, { key: "team" })).value).toBe(40_000);
  });

  test("a negative actual and forged data are errors that write nothing; async limits refuse grants", async () => {
    const t = app();
    const taken = await t.mutation(api.grants.take, { key: "team", count: 4_000 });
    expect((await t.mutation(api.grants.settle, { grant: taken.grant, actual: -1 })).error.message).toMatch(/actual must be a finite number >= 0/);
    expect((await t.mutation(api.grants.settle, { grant: { ...taken.grant, shards: [] }, actual: 0 })).error.message).toMatch(/grant.shards/);
    expect((await t.mutation(api.grants.value, { key: "team" })).value).toBe(36_000);
    await expect(t.mutation(api.grants.take, { name: "lazy", key: "team", count: 1 })).rejects.toThrow(/grants need applyUpdates "transactionally"/);
  });
});
