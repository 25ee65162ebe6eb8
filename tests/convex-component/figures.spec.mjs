// The figures in docs/convex.md (Asynchronous updates): where a burst of N callers racing on one snapshot
// that holds V tokens leaves a limit of 10 tokens an hour, once the worker has applied it, with no
// headroom and with ratebound's headroom 2 and 4. Rows are [N, V, none, headroom 2, headroom 4].
import { convexTest } from "convex-test";
import rateLimiterTest from "ratebound/convex-component/test";
import { afterEach, beforeEach, expect, test, vi } from "vitest";
import { api } from "./app/convex/_generated/api.js";
import schema from "./app/convex/schema.js";

const modules = import.meta.glob("./app/convex/**/*.*s");
const start = Date.UTC(2026, 0, 1);
beforeEach(() => {
  vi.useFakeTimers();
  vi.setSystemTime(start);
});
afterEach(() => vi.useRealTimers());

export const README_TABLE = [
  [1, 1, 0, 0, 0],
  [6, 1, -5, 0, 0],
  [6, 3, -3, -3, 0],
  [6, 5, -1, -1, -1],
  [6, 10, 4, 4, 4],
  [25, 10, -15, -15, -15],
  [100, 10, -90, -90, -90],
];

test("the table in docs/convex.md of where a burst leaves the limit is what the component does (token bucket, count 1)", async () => {
  const t = convexTest(schema, modules);
  rateLimiterTest.register(t);
  const drain = async () => {
    await t.finishAllScheduledFunctions(vi.runAllTimers);
    vi.setSystemTime(start);
  };
  const measured = [];
  for (const [callers, snapshot] of README_TABLE) {
    const row = [callers, snapshot];
    for (const name of ["queuedBucket", "headroom2Bucket", "headroom4Bucket"]) {
      const key = `${callers}@${snapshot}`;
      if (snapshot < 10) await t.mutation(api.queued.limit, { name, key, count: 10 - snapshot });
      await drain();
      await t.mutation(api.queued.burst, { name, key, callers });
      await drain();
      const rows = await t.runInComponent("rateLimiter", (ctx) => ctx.db.query("rateLimits").collect());
      row.push(rows.find((doc) => doc.name === name && doc.key === key).value);
    }
    measured.push(row);
  }
  expect(measured).toEqual(README_TABLE);
});
