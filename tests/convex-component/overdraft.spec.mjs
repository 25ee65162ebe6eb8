// How far a burst overdraws an asynchronous limit, over a grid: N callers racing on one snapshot
// (one mutation: each decides on its stale snapshot, which holds none of the burst's own updates),
// each asking `count` of a limit of 10 that holds V, with and without ratebound's `headroom` H. The
// bound (docs/convex.md: Asynchronous updates) is: after the worker applies the burst, the limit is at least
// -max(0, (N - 1) × count - H), reached when V = count + H; every granted token is accounted for.
// Also: a corrupt stored value fails closed, in a decision and in the worker.
import { convexTest } from "convex-test";
import { anyApi } from "convex/server";
import batchWorkerTest from "@convex-dev/batch-worker/test";
import rateLimiterTest from "ratebound/convex-component/test";
import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import componentSchema from "../../pkg/convex-component/schema.js";
import { api } from "./app/convex/_generated/api.js";
import { GRID_HEADROOMS } from "./app/convex/queued.js";
import schema from "./app/convex/schema.js";

const modules = import.meta.glob("./app/convex/**/*.*s");
const componentModules = import.meta.glob(["../../pkg/convex-component/**/*.js", "!../../pkg/convex-component/client/**", "!../../pkg/convex-component/react.hook.js"]);
const start = Date.UTC(2026, 0, 1);
beforeEach(() => {
  vi.useFakeTimers();
  vi.setSystemTime(start);
});
afterEach(() => vi.useRealTimers());

function app() {
  const t = convexTest(schema, modules);
  rateLimiterTest.register(t);
  return t;
}
async function drain(t) {
  await t.finishAllScheduledFunctions(vi.runAllTimers);
  vi.setSystemTime(start);
}
const valueOf = (t, name, key) =>
  t.runInComponent("rateLimiter", async (ctx) => {
    const rows = await ctx.db.query("rateLimits").collect();
    return rows.find((row) => row.name === name && row.key === key)?.value ?? 10;
  });

const KINDS = { "token bucket": "Bucket", "fixed window": "Window" };
const CAPACITY = 10;

describe.each(Object.keys(KINDS))("%s: the overdraft of a burst never passes its bound", (kind) => {
  test.each([undefined, ...GRID_HEADROOMS])("headroom %s: for N in 1, 3, 6 callers of 1 or 3 tokens against V in count, count + headroom, 10", async (headroom) => {
    const t = app();
    const name = headroom === undefined ? `queued${KINDS[kind]}` : `headroom${headroom}${KINDS[kind]}`;
    const spare = headroom ?? 0;
    let reachedBound = 0;
    for (const count of [1, 3]) {
      for (const callers of [1, 3, 6]) {
        for (const snapshot of new Set([count, count + spare, CAPACITY])) {
          const key = `${count}x${callers}@${snapshot}`;
          if (snapshot < CAPACITY) {
            await t.mutation(api.queued.limit, { name, key, count: CAPACITY - snapshot });
            await drain(t);
          }
          expect(await valueOf(t, name, key), key).toBe(snapshot);
          const results = await t.mutation(api.queued.burst, { name, key, count, callers });
          await drain(t);
          const after = await valueOf(t, name, key);
          const granted = results.filter((result) => result.ok).length;
          const bound = -Math.max(0, (callers - 1) * count - spare);
          expect(after, key).toBeGreaterThanOrEqual(bound);
          expect(snapshot - granted * count, key).toBe(after); // no time passes: every granted token is taken
          if (snapshot === count + spare && callers * count > snapshot) {
            expect(after, `${key} reaches the bound`).toBe(bound);
            reachedBound++;
          }
        }
      }
    }
    expect(reachedBound).toBeGreaterThan(0);
  });
});

describe("what the worker could never apply is refused when it is queued, and nothing is queued", () => {
  test.each([
    [{ config: { kind: "token bucket", rate: -1, period: 1000 } }, /rate must be a positive finite number \(got -1\)/],
    [{ count: -5 }, /count must be a finite number >= 0 \(got -5\)/],
    [{ ts: Number.NaN }, /now must be a finite number/],
  ])("%o", async (change, message) => {
    const t = convexTest(componentSchema, componentModules);
    batchWorkerTest.register(t, "batchWorker");
    const config = { kind: "token bucket", rate: 10, period: 1000, applyUpdates: "asynchronously" };
    const valid = { kind: "consume", name: "queued", count: 1, config, ts: start };
    await expect(t.mutation(anyApi.lib.enqueueUpdates, { updates: [valid, { ...valid, ...change }] })).rejects.toThrow(message);
    expect(await t.run((ctx) => ctx.db.query("pendingUpdates").collect())).toEqual([]);
    await t.mutation(anyApi.lib.enqueueUpdates, { updates: [valid] });
    expect(await t.run((ctx) => ctx.db.query("pendingUpdates").collect())).toHaveLength(1);
  });
});

describe("a corrupt stored value fails closed", () => {
  const config = { kind: "token bucket", rate: 10, period: 3_600_000, applyUpdates: "asynchronously" };

  test("a decision that counts the queue rejects with CORRUPT_STATE, queues nothing and leaves the value as it was", async () => {
    const t = app();
    await t.runInComponent("rateLimiter", (ctx) => ctx.db.insert("rateLimits", { name: "cappedBucket", shard: 0, value: Number.NaN, ts: start }));
    const error = await t.mutation(api.queued.limit, { name: "cappedBucket" }).catch((caught) => caught);
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toMatch(/corrupt: value must be a finite number \(got NaN\)/);
    const [row] = await t.runInComponent("rateLimiter", (ctx) => ctx.db.query("rateLimits").collect());
    expect(row.value).toBeNaN();
    expect(await t.runInComponent("rateLimiter", (ctx) => ctx.db.query("pendingUpdates").collect())).toEqual([]);
  });

  test("the worker's batch rejects with CORRUPT_STATE naming the limit, writes nothing and keeps the queue", async () => {
    const t = convexTest(componentSchema, componentModules);
    batchWorkerTest.register(t, "batchWorker");
    await t.run((ctx) => ctx.db.insert("rateLimits", { name: "broken", key: "ada", shard: 0, value: Number.NaN, ts: start }));
    await t.run(async (ctx) => {
      const update = { kind: "consume", name: "broken", key: "ada", count: 1, config, ts: start };
      await ctx.db.insert("pendingUpdates", { update, updatedAt: ctx.db.vars.commitTs });
    });
    const batch = await t.query(anyApi.worker.getBatch, { name: "rateLimiter" });
    const error = await t.mutation(anyApi.worker.processBatch, batch.batch).catch((caught) => caught);
    expect(error.code).toBe("CORRUPT_STATE");
    expect(error.message).toContain('rate limit "broken" key "ada"');
    expect((await t.run((ctx) => ctx.db.query("rateLimits").collect()))[0].value).toBeNaN();
    expect(await t.run((ctx) => ctx.db.query("pendingUpdates").collect())).toHaveLength(1);
  });
});
