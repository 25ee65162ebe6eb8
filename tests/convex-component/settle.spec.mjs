// Grants in ratebound's Convex component (convex-test): `limit(ctx, name, { grant: true })` answers
// the grant's data, `settle(ctx, data, actual)` runs the component's settle mutation in its own
// transaction. The scenarios of tests/settle/scenarios.mjs (each call one app mutation), a second
// settle as a ConvexError with code GRANT_SETTLED, a settle by a scheduled function, a rollback,
// and the same concurrent settles over the component's table without a transaction refunding twice.
import { convexTest } from "convex-test";
import { ConvexError } from "convex/values";
import { Grant, RateLimiter as CoreRateLimiter } from "ratebound";
import { convexStore } from "ratebound/convex";
import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import componentSchema from "../../pkg/convex-component/schema.js";
import * as grants from "../../pkg/convex-component/grants.js";
import * as lib from "../../pkg/convex-component/lib.js";
import { SCENARIOS, bareStore, calendarQuota, concurrentSettlesWithoutTransaction, settleLimits } from "../settle/scenarios.mjs";
import { api } from "./app/convex/_generated/api.js";
import schema from "./app/convex/schema.js";

const modules = import.meta.glob("./app/convex/**/*.*s");
const componentModules = import.meta.glob("../../pkg/convex-component/**/*.js");
const DAY = 86_400_000;
const start = Date.UTC(2026, 0, 1, 12);

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["Date"] });
  vi.setSystemTime(start);
});
afterEach(() => vi.useRealTimers());

function app() {
  const t = convexTest(schema, modules);
  t.registerComponent("rateLimiter", componentSchema, componentModules);
  return t;
}

/** A store over the component's table whose every read and write is a transaction of its own. */
const splitStore = (t) =>
  bareStore({
    read: (ref) => t.runInComponent("rateLimiter", (ctx) => convexStore(ctx.db).read(ref)),
    write: (ref, state) => t.runInComponent("rateLimiter", (ctx) => convexStore(ctx.db).write(ref, state)),
  });

/** The scenarios' harness: each call one mutation or query of the app, through the client. */
function harness(kind) {
  const t = app();
  const settle = (data, actual) => t.mutation(api.settling.settle, { kind, data, actual });
  const client = {
    settle,
    getValue: (name, options) => t.query(api.settling.getValue, { kind, name, options }),
    async limit(name, options) {
      const result = await t.mutation(api.settling.limit, { kind, name, options });
      return result.grant ? { ...result, grant: new Grant(result.grant, settle) } : result;
    },
  };
  const bare = (limits) => new CoreRateLimiter(splitStore(t), limits, { now: () => Date.now() });
  return { t, kind, connect: () => client, bare };
}

for (const kind of ["token bucket", "fixed window"]) {
  describe(`grants in the component, ${kind}`, () => {
    // (Not calendar quotas: the component's limits take @convex-dev/rate-limiter's config, whose period is ms.)
    for (const [name, scenario] of Object.entries(SCENARIOS)) if (scenario !== calendarQuota) test(name, () => scenario(harness(kind)));

    test("the same concurrent settles over the component's table without a transaction refund more than once", async () => {
      expect((await concurrentSettlesWithoutTransaction(harness(kind))).refunded).toBeGreaterThan(300);
    });

    test("a second settle is a ConvexError { kind: \"GrantSettled\", code: \"GRANT_SETTLED\", name } and writes nothing", async () => {
      const { t } = harness(kind);
      const granted = await t.mutation(api.settling.limit, { kind, name: "llm", options: { key: "twice", count: 300, grant: true } });
      expect(granted).toMatchObject({ ok: true, grant: { name: "llm", key: "twice", count: 300, shards: [{ shard: 0, count: 300, value: 700 }] } });
      expect(await t.mutation(api.settling.settle, { kind, data: granted.grant, actual: 100 })).toEqual({ refunded: 200, charged: 0, unpaid: 0 });
      const error = await t.mutation(api.settling.settle, { kind, data: granted.grant, actual: 0 }).catch((caught) => caught);
      expect(error).toBeInstanceOf(ConvexError);
      expect(error.data).toMatchObject({ kind: "GrantSettled", code: "GRANT_SETTLED", name: "llm" });
      expect((await t.query(api.settling.getValue, { kind, name: "llm", options: { key: "twice" } })).value).toBe(900);
    });

    test("a scheduled function settles the grant later, at what the job really used", async () => {
      vi.useFakeTimers();
      vi.setSystemTime(start);
      const { t } = harness(kind);
      const granted = await t.mutation(api.settling.startJob, { kind, key: "job", estimate: 400, actual: 150, after: 1_000 });
      expect(granted.ok).toBe(true);
      expect((await t.query(api.settling.getValue, { kind, name: "llm", options: { key: "job" } })).value).toBe(600);
      await t.finishAllScheduledFunctions(vi.runAllTimers);
      const value = (await t.query(api.settling.getValue, { kind, name: "llm", options: { key: "job" } })).value;
      expect(value).toBeCloseTo(850, kind === "token bucket" ? 1 : 9);
      const again = await t.mutation(api.settling.settle, { kind, data: granted.grant, actual: 0 }).catch((caught) => caught);
      expect(again.data?.code).toBe("GRANT_SETTLED");
    });

    test("an app mutation that throws after settling rolls the component's settle back", async () => {
      const { t } = harness(kind);
      const { grant } = await t.mutation(api.settling.limit, { kind, name: "llm", options: { key: "rollback", count: 300, grant: true } });
      await expect(t.mutation(api.settling.settleThenThrow, { kind, data: grant, actual: 0 })).rejects.toThrow(/the app failed after settling/);
      expect((await t.query(api.settling.getValue, { kind, name: "llm", options: { key: "rollback" } })).value).toBe(700);
      expect(await t.mutation(api.settling.settle, { kind, data: grant, actual: 0 })).toEqual({ refunded: 300, charged: 0, unpaid: 0 });
    });
  });
}

describe("the component's grant functions", () => {
  test("a refused grant answers { ok: false, retryAfter } without data, or with throws: true the RateLimited ConvexError, taking nothing", async () => {
    const t = app();
    const ask = (options) => t.mutation(api.settling.limit, { kind: "token bucket", name: "llm", options: { key: "full", grant: true, ...options } });
    expect((await ask({ count: 900 })).ok).toBe(true);
    const refused = await ask({ count: 200 });
    expect(refused.ok).toBe(false);
    expect(refused.grant).toBeUndefined();
    const thrown = await ask({ count: 200, throws: true }).catch((caught) => caught);
    expect(thrown).toBeInstanceOf(ConvexError);
    expect(thrown.data).toMatchObject({ kind: "RateLimited", name: "llm" });
    expect((await t.query(api.settling.getValue, { kind: "token bucket", name: "llm", options: { key: "full" } })).value).toBe(100);
  });

  test("rateLimitWithGrant takes rateLimit's arguments; both it and settle are public mutations", () => {
    expect(grants.rateLimitWithGrant.isMutation && grants.rateLimitWithGrant.isPublic).toBe(true);
    expect(grants.settle.isMutation && grants.settle.isPublic).toBe(true);
    expect(JSON.parse(grants.rateLimitWithGrant.exportArgs())).toEqual(JSON.parse(lib.rateLimit.exportArgs()));
  });

  test("grant: false is a plain limit: no data, the same answer as without it", async () => {
    const t = app();
    const plain = await t.mutation(api.settling.limit, { kind: "token bucket", name: "llm", options: { key: "plain", count: 300, grant: false } });
    expect(plain).toEqual({ ok: true });
    expect((await t.query(api.settling.getValue, { kind: "token bucket", name: "llm", options: { key: "plain" } })).value).toBe(700);
  });

  test("an asynchronous limit can't grant", async () => {
    const t = app();
    const config = { ...settleLimits("token bucket", DAY).llm, applyUpdates: "asynchronously" };
    await expect(t.mutation(api.settling.limit, { kind: "token bucket", name: "inline", options: { config, grant: true } })).rejects.toThrow(/grants need applyUpdates "transactionally"/);
  });
});
