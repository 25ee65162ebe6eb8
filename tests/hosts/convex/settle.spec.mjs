// Settle on ratebound/convex in real Convex functions (convex-test): the scenarios of
// tests/settle/scenarios.mjs with every limit, settle and getValue one mutation or query (each its
// own transaction), a grant passed between them as its data; concurrent settle mutations refund
// once, while an action whose reads and writes are separate transactions refunds more than once;
// a mutation that throws after settling rolls the refund back.
import { convexTest } from "convex-test";
import { Grant } from "ratebound";
import { describe, expect, test } from "vitest";
import { SCENARIOS, concurrentSettlesWithoutTransaction } from "../../settle/scenarios.mjs";
import { api } from "./app/convex/_generated/api.js";
import schema from "./app/convex/schema.js";

const modules = import.meta.glob("./app/convex/**/*.*s");
const NOW = 1_700_000_000_000;

/** The scenarios' harness over one convex-test app: a "connection" is a way to call its functions. */
function harness(kind) {
  const t = convexTest(schema, modules);
  const clock = { now: NOW };
  const limiterOver = (settleVia) => {
    const settle = (data, actual) => settleVia({ kind, now: clock.now, data, actual });
    return {
      settle,
      getValue: (name, options) => t.query(api.settle.getValue, { kind, now: clock.now, name, options }),
      async limit(name, options) {
        const result = await t.mutation(api.settle.limit, { kind, now: clock.now, name, options });
        return result.grant ? { ...result, grant: new Grant(result.grant, settle) } : result;
      },
    };
  };
  return {
    t,
    kind,
    clock,
    connect: () => limiterOver((args) => t.mutation(api.settle.settle, args)),
    bare: () => limiterOver((args) => t.action(api.settle.settleWithoutTransaction, args)),
    calendar: { connect: () => limiterOver((args) => t.mutation(api.settle.settle, args)) },
  };
}

for (const kind of ["token bucket", "fixed window"]) {
  describe(`settle in Convex mutations, ${kind}`, () => {
    for (const [name, scenario] of Object.entries(SCENARIOS)) test(name, () => scenario(harness(kind)));

    test("the same concurrent settles from actions whose reads and writes are separate transactions refund more than once", async () => {
      const seen = await concurrentSettlesWithoutTransaction(harness(kind));
      expect(seen.refunded).toBeGreaterThan(300);
    });

    test("a mutation that throws after settling rolls the refund back, and the grant settles after", async () => {
      const h = harness(kind);
      const limiter = h.connect();
      const { grant } = await limiter.limit("llm", { key: "rollback", count: 300, grant: true });
      const args = { kind, now: NOW, data: grant.data, actual: 0 };
      await expect(h.t.mutation(api.settle.settleThenThrow, args)).rejects.toThrow(/the app failed after settling/);
      expect((await limiter.getValue("llm", { key: "rollback" })).value).toBe(700);
      expect(await grant.cancel()).toEqual({ refunded: 300, charged: 0, unpaid: 0 });
    });
  });
}
