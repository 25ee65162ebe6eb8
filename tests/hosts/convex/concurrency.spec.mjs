// Concurrency limits with leases on ratebound/convex in real Convex functions (convex-test): the
// scenarios of tests/concurrency/scenarios.mjs with every take, release and extend one mutation
// (its own transaction), a lease passed between them as its data; concurrent take mutations grant
// exactly max, while actions whose reads and writes are separate transactions grant more.
import { convexTest } from "convex-test";
import { ConvexError } from "convex/values";
import { describe, test } from "vitest";
import { SCENARIOS, overAdmitsWithoutTransaction } from "../../concurrency/scenarios.mjs";
import { api } from "./app/convex/_generated/api.js";
import schema from "./app/convex/schema.js";

const modules = import.meta.glob("./app/convex/**/*.*s");

/** A ConvexError from a core error as the scenarios expect it: its code and field on the error. */
const recoded = (error) => {
  if (error instanceof ConvexError || error?.data?.code) throw Object.assign(new Error(error.data?.message ?? String(error)), { code: error.data?.code, field: error.data?.field ?? undefined });
  throw error;
};

function harness() {
  const t = convexTest(schema, modules);
  const clock = { now: 1_700_000_000_000, read: () => clock.now };
  const limiterVia = (limits, limitFn) => {
    const call = (fn, given) => t.mutation(fn, { limits, now: clock.now, ...given }).catch(recoded);
    const handle = (data, expiresAt) => {
      const lease = {
        id: data.id,
        slots: data.slots,
        expiresAt,
        release: () => call(api.concurrency.release, { lease: data }),
        extend: async (ms) => {
          const extended = await call(api.concurrency.extend, { lease: data, ms });
          lease.expiresAt = extended.expiresAt;
          return extended;
        },
        toJSON: () => data,
      };
      return lease;
    };
    return {
      lease: (data) => handle(data, Number.NaN),
      async limit(name, options = {}) {
        const { throws, ...rest } = options;
        const result = await limitFn({ limits, now: clock.now, name, options: rest }).catch(recoded);
        if (!result.ok && throws) throw Object.assign(new Error("refused"), { code: "RATE_LIMITED" });
        return result.ok ? { ok: true, lease: handle(result.lease, result.expiresAt) } : result;
      },
    };
  };
  return {
    remote: true,
    clock,
    connect: (limits) => limiterVia(limits, (args) => t.mutation(api.concurrency.limit, args)),
    bare: (limits) => limiterVia(limits, (args) => t.action(api.concurrency.limitWithoutTransaction, args)),
  };
}

describe("concurrency limits in Convex mutations", () => {
  // acquire is the in-process limiter's; bad configs fail at the first call here, not when a limiter is made.
  const { acquireWaitsForASlot: _acquire, badConfigsAreInvalidConfig: _bad, ...scenarios } = SCENARIOS;
  for (const [name, scenario] of Object.entries(scenarios)) test(name, () => scenario(harness()));
  test("the same concurrent takes from actions whose reads and writes are separate transactions grant more than max", () => overAdmitsWithoutTransaction(harness()));
});
