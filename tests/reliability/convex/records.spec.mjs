// The records scenarios (tests/settle/scenarios.mjs, RECORD_SCENARIOS) in real Convex functions
// (convex-test): every limit, settle and getValue one mutation or query, a grant passed between
// them as its data; a rolled-back charge is a mutation that throws after `limit(…, { grant: true })`,
// its grant's data carried out in the ConvexError. Run by tests/reliability/hostile-records.test.mjs.
import { convexTest } from "convex-test";
import { Grant } from "ratebound";
import { describe, expect, test } from "vitest";
import { RECORD_SCENARIOS } from "../../settle/scenarios.mjs";
import { api } from "../../hosts/convex/app/convex/_generated/api.js";
import schema from "../../hosts/convex/app/convex/schema.js";

const modules = import.meta.glob("../../hosts/convex/app/convex/**/*.*s");
const NOW = 1_700_000_000_000;

function harness(kind) {
  const t = convexTest(schema, modules);
  const clock = { now: NOW };
  const connect = () => {
    const settle = (data, actual) => t.mutation(api.settle.settle, { kind, now: clock.now, data, actual });
    return {
      settle,
      getValue: (name, options) => t.query(api.settle.getValue, { kind, now: clock.now, name, options }),
      async limit(name, options) {
        const result = await t.mutation(api.settle.limit, { kind, now: clock.now, name, options });
        return result.grant ? { ...result, grant: new Grant(result.grant, settle) } : result;
      },
    };
  };
  const rollBack = async (limits, name, options) => {
    const error = await t.mutation(api.settle.limitThenThrow, { kind, now: clock.now, name, options }).catch((caught) => caught);
    expect(error?.data?.grant?.id).toBeTypeOf("string");
    return error.data.grant;
  };
  return { kind, clock, connect, rollBack };
}

for (const kind of ["token bucket", "fixed window"]) {
  describe(`records in Convex mutations, ${kind}`, () => {
    for (const [name, scenario] of Object.entries(RECORD_SCENARIOS)) test(name, () => scenario(harness(kind)));
  });
}
