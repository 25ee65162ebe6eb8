// Concurrency limits in ratebound's Convex component (convex-test): the client's `limit` on a
// `{ kind: "concurrency" }` limit runs the component's `leases.take` and answers the lease's data;
// `release` and `extend` run `leases.release` and `leases.extend` on it, each one app mutation. The
// scenarios of tests/concurrency/scenarios.mjs, concurrent takes granting exactly max while the same
// takes over the component's table without a transaction grant more, a take rolled back with the
// app's mutation, a release by a scheduled function, and bad input as ConvexErrors with codes.
import { convexTest } from "convex-test";
import { ConvexError } from "convex/values";
import { RateLimiter as CoreRateLimiter } from "ratebound";
import { convexStore } from "ratebound/convex";
import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import componentSchema from "../../pkg/convex-component/schema.js";
import { SCENARIOS, freshKey, overAdmitsWithoutTransaction } from "../concurrency/scenarios.mjs";
import { bareStore } from "../settle/scenarios.mjs";
import { api } from "./app/convex/_generated/api.js";
import schema from "./app/convex/schema.js";

const modules = import.meta.glob("./app/convex/**/*.*s");
const componentModules = import.meta.glob("../../pkg/convex-component/**/*.js");
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

/** A ConvexError as the scenarios read errors: its data's code (RATE_LIMITED for a refusal) on the error. */
const recoded = (error) => {
  if (error instanceof ConvexError || error?.data?.kind) {
    const { kind, code, field } = error.data;
    throw Object.assign(new Error(error.data.message ?? kind), { code: kind === "RateLimited" ? "RATE_LIMITED" : code, field });
  }
  throw error;
};

/** The scenarios' harness: each take, release and extend one app mutation; the clock is the faked Date the component reads. */
function harness() {
  const t = app();
  const clock = {
    get now() {
      return Date.now();
    },
    set now(ms) {
      vi.setSystemTime(ms);
    },
    read: () => Date.now(),
  };
  const connect = (limits) => {
    const call = (fn, given) => t.mutation(fn, { limits, ...given }).catch(recoded);
    const handle = (data, expiresAt) => {
      const lease = {
        id: data.id,
        slots: data.slots,
        expiresAt,
        release: () => call(api.leasing.release, { lease: data }),
        extend: async (ms) => {
          const extended = await call(api.leasing.extend, { lease: data, ms });
          lease.expiresAt = extended.expiresAt;
          return extended;
        },
        toJSON: () => data,
      };
      return lease;
    };
    return {
      lease: (data) => handle(data, Number.NaN),
      async limit(name, options) {
        const answer = await call(api.leasing.limit, { name, options });
        return answer.ok ? { ok: true, lease: handle(answer.lease, answer.expiresAt) } : answer;
      },
    };
  };
  /** The control: the core over the component's table, every read and write a transaction of its own. */
  const bare = (limits) =>
    new CoreRateLimiter(
      bareStore({
        read: (ref) => t.runInComponent("rateLimiter", (ctx) => convexStore(ctx.db).read(ref)),
        write: (ref, state) => t.runInComponent("rateLimiter", (ctx) => convexStore(ctx.db).write(ref, state)),
      }),
      limits,
      { now: () => Date.now() },
    );
  return { t, clock, remote: true, connect, bare };
}

const LIMITS = { jobs: { kind: "concurrency", max: 2, lease: 60_000 } };

describe("concurrency limits in the component", () => {
  // No acquire (a mutation cannot wait: schedule a retry at retryAfter); bad input and configs are
  // ConvexErrors here (tests below); the rest as on every host.
  const { acquireWaitsForASlot: _acquire, badConfigsAreInvalidConfig: _configs, countsAndBadInput: _input, ...scenarios } = SCENARIOS;
  for (const [name, scenario] of Object.entries(scenarios)) test(name, () => scenario(harness()));

  test("the same concurrent takes over the component's table without a transaction grant more than max (the control)", () => overAdmitsWithoutTransaction(harness()));

  test("counts, bad counts, unknown options and bad configs are errors that write nothing", async () => {
    const { t } = harness();
    const key = freshKey("bad");
    const limit = (options, limits = LIMITS) => t.mutation(api.leasing.limit, { limits, name: "jobs", options: { key, ...options } });
    const two = await limit({ count: 2 });
    expect(two).toMatchObject({ ok: true, lease: { name: "jobs", key, slots: [0, 1] }, expiresAt: start + 60_000 });
    expect(await limit({})).toEqual({ ok: false, retryAfter: 60_000 });
    const dataOf = async (promise) => (await promise.catch((error) => error)).data;
    expect(await dataOf(limit({ count: 3 }))).toMatchObject({ kind: "LeaseFailed", code: "COUNT_EXCEEDS_MAX", name: "jobs" });
    expect(await dataOf(limit({ count: 1.5 }))).toMatchObject({ kind: "LeaseFailed", code: "INVALID_REQUEST", name: "jobs" });
    expect(await dataOf(limit({}, { jobs: { kind: "concurrency", max: 65, lease: 1_000 } }))).toMatchObject({ kind: "LeaseFailed", code: "INVALID_CONFIG", field: "max" });
    expect(await dataOf(limit({}, { jobs: { kind: "concurrency", max: 2, lease: -1 } }))).toMatchObject({ kind: "LeaseFailed", code: "INVALID_CONFIG", field: "lease" });
    await expect(limit({ reserve: true })).rejects.toThrow(/jobs is a concurrency limit: it takes key, count and throws \(got reserve\)/);
    await expect(limit({}, { jobs: { kind: "concurrency", max: 2, lease: 1_000, rate: 1 } })).rejects.toThrow(/rate/);
    const refused = await t.mutation(api.leasing.limit, { limits: LIMITS, name: "jobs", options: { key, throws: true } }).catch((error) => error);
    expect(refused).toBeInstanceOf(ConvexError);
    expect(refused.data).toEqual({ kind: "RateLimited", name: "jobs", retryAfter: 60_000 });
    expect(await t.mutation(api.leasing.release, { limits: LIMITS, lease: two.lease })).toEqual({ released: 2 });
    const lost = await t.mutation(api.leasing.extend, { limits: LIMITS, lease: two.lease, ms: 1_000 }).catch((error) => error);
    expect(lost.data).toEqual({ kind: "LeaseLost", code: "LEASE_LOST", name: "jobs" });
    expect(await limit({ count: 2 })).toMatchObject({ ok: true, lease: { slots: [0, 1] } });
  });

  test("a take in an app mutation that then throws holds no slot", async () => {
    const { t } = harness();
    const key = freshKey("rollback");
    await expect(t.mutation(api.leasing.limitThenThrow, { limits: LIMITS, name: "jobs", options: { key, count: 2 } })).rejects.toThrow(/the app failed after the take \(.*"ok":true/);
    expect(await t.mutation(api.leasing.limit, { limits: LIMITS, name: "jobs", options: { key, count: 2 } })).toMatchObject({ ok: true, lease: { slots: [0, 1] } });
  });

  test("reset frees every slot of the key: a lease taken before it then gives back nothing", async () => {
    const { t } = harness();
    const key = freshKey("reset");
    const taken = await t.mutation(api.leasing.limit, { limits: LIMITS, name: "jobs", options: { key, count: 2 } });
    await t.mutation(api.leasing.reset, { limits: LIMITS, name: "jobs", key });
    expect(await t.mutation(api.leasing.limit, { limits: LIMITS, name: "jobs", options: { key, count: 2 } })).toMatchObject({ ok: true, lease: { slots: [0, 1] } });
    expect(await t.mutation(api.leasing.release, { limits: LIMITS, lease: taken.lease })).toEqual({ released: 0 });
  });

  test("a scheduled function releases the lease when the job ends, and the slot is free again", async () => {
    vi.useFakeTimers();
    vi.setSystemTime(start);
    const { t } = harness();
    const key = freshKey("scheduled");
    const limits = { jobs: { kind: "concurrency", max: 1, lease: 60_000 } };
    const started = await t.mutation(api.leasing.startJob, { limits, name: "jobs", options: { key }, ms: 5_000 });
    expect(started.ok).toBe(true);
    expect(await t.mutation(api.leasing.limit, { limits, name: "jobs", options: { key } })).toEqual({ ok: false, retryAfter: 60_000 });
    vi.advanceTimersByTime(5_000);
    await t.finishInProgressScheduledFunctions();
    expect(await t.mutation(api.leasing.limit, { limits, name: "jobs", options: { key } })).toMatchObject({ ok: true, lease: { slots: [0] } });
    expect(await t.mutation(api.leasing.release, { limits, lease: started.lease })).toEqual({ released: 0 });
  });
});
