// Outages of the Convex host (issue 24, "Also"), in real Convex functions (convex-test):
// ratebound/convex over a ctx.db whose reads of the rateLimits table throw or hang, or whose writes
// throw. Under "closed" (the default) a call rejects with CONVEX_DB_FAILED (its cause ctx.db's
// error) and, even when the app catches it and the mutation commits, nothing is written; "open"
// admits degraded; the memory fallback admits exactly the bound within the function. Convex refuses
// setTimeout in mutations, so a limiter's `timeout` fails every call there with INVALID_ARGUMENT
// (Convex bounds a function's time itself). Grants, getValue and reset fail closed whatever the
// policy. Uncaught, the error fails the mutation.
import { convexTest } from "convex-test";
import { describe, expect, test } from "vitest";
import { api } from "../../hosts/convex/app/convex/_generated/api.js";
import schema from "../../hosts/convex/app/convex/schema.js";

const modules = import.meta.glob("../../hosts/convex/app/convex/**/*.*s");
const NOW = 1_700_000_000_000;
const TAKEN = [{ name: "api", key: "ada", shard: 0, value: 3, ts: NOW }];

/** An app where ada has taken 2 of api's 5 tokens through a healthy ctx.db. */
async function prepared() {
  const t = convexTest(schema, modules);
  await t.mutation(api.outage.calls, { read: "up", write: "up", options: {}, calls: [{ op: "limit", name: "api", options: { key: "ada", count: 2 } }] });
  const rows = () => t.run(async (ctx) => (await ctx.db.query("rateLimits").collect()).map(({ name, key, shard, value, ts }) => ({ name, key, shard, value, ts })));
  expect(await rows()).toEqual(TAKEN);
  return { t, rows };
}

const FAILURES = {
  "reads throw": { read: "throws", write: "up" },
  "writes throw": { read: "up", write: "throws" },
};

for (const [failure, faults] of Object.entries(FAILURES)) {
  describe(`ctx.db ${failure}`, () => {
    test('"closed" (the default): limit, limitAll and a grant reject with CONVEX_DB_FAILED, and nothing is written though the mutation commits', async () => {
      const { t, rows } = await prepared();
      const answers = await t.mutation(api.outage.calls, {
        ...faults,
        options: {},
        calls: [
          { op: "limit", name: "api", options: { key: "ada" } },
          { op: "limitAll", requests: [{ name: "api", key: "ada" }] },
          { op: "limit", name: "api", options: { key: "ada", grant: true } },
        ],
      });
      for (const { error } of answers) {
        expect(error?.code).toBe("CONVEX_DB_FAILED");
        expect(error.cause).toMatch(/Too many reads/);
      }
      expect(await rows()).toEqual(TAKEN);
    });

    test('"open" admits limit and limitAll degraded; getValue and reset fail closed where their half fails', async () => {
      const { t, rows } = await prepared();
      const [limit, all, value, reset] = await t.mutation(api.outage.calls, {
        ...faults,
        options: { onStoreError: "open" },
        calls: [
          { op: "limit", name: "api", options: { key: "ada" } },
          { op: "limitAll", requests: [{ name: "api", key: "ada" }] },
          { op: "getValue", name: "api", options: { key: "ada" } },
          { op: "reset", name: "api", options: { key: "ada" } },
        ],
      });
      for (const { result } of [limit, all]) expect([result.ok, result.degraded, result.cause?.code]).toEqual([true, "store-error", "CONVEX_DB_FAILED"]);
      if (failure === "reads throw") expect(value.error?.code).toBe("CONVEX_DB_FAILED");
      else expect(value.result.value).toBe(3);
      expect(reset.error?.code).toBe("CONVEX_DB_FAILED"); // reset finds each row before deleting it
      expect(await rows()).toEqual(TAKEN);
    });

    test("the memory fallback admits exactly the limit's bound over 20 calls in one function, and nothing is written", async () => {
      const { t, rows } = await prepared();
      const answers = await t.mutation(api.outage.calls, {
        ...faults,
        options: {},
        calls: Array.from({ length: 20 }, () => ({ op: "limit", name: "guarded", options: { key: "ada" } })),
      });
      expect(answers.every(({ result }) => result?.degraded === "store-error")).toBe(true);
      expect(answers.filter(({ result }) => result.ok)).toHaveLength(5);
      expect(await rows()).toEqual(TAKEN);
    });
  });
}

test("timeout cannot work in a Convex mutation (Convex refuses setTimeout there): every call with it fails INVALID_ARGUMENT naming the option, whatever its policy, before ctx.db is touched", async () => {
  const { t, rows } = await prepared();
  const answers = await t.mutation(api.outage.calls, {
    read: "hangs",
    write: "up",
    options: { timeout: 60 },
    calls: ["api", "loose", "guarded"].map((name) => ({ op: "limit", name, options: { key: "ada" } })),
  });
  for (const { error } of answers) {
    expect(error?.code).toBe("INVALID_ARGUMENT");
    expect(error.message).toMatch(/timeout needs setTimeout, which this runtime refuses/);
  }
  const healthy = await t.mutation(api.outage.calls, { read: "up", write: "up", options: { timeout: 60 }, calls: [{ op: "limit", name: "api", options: { key: "ada" } }] });
  expect(healthy[0].error?.code).toBe("INVALID_ARGUMENT");
  expect(await rows()).toEqual(TAKEN);
});

test("uncaught, the store's error fails the mutation with CONVEX_DB_FAILED's message, and the mutation writes nothing", async () => {
  const { t, rows } = await prepared();
  await expect(t.mutation(api.outage.uncaught, { key: "ada" })).rejects.toThrow(/ratebound\/convex: ctx\.db failed a write of the rateLimits table/);
  expect(await rows()).toEqual(TAKEN);
});

test('a write over a query\'s ctx.db is INVALID_ARGUMENT (the wrong store), which "open" does not turn into an admission', async () => {
  const { t } = await prepared();
  const error = await t.query(api.outage.limitInQueryOpen, {}).catch((caught) => caught);
  expect(error?.message).toMatch(/limit writes rate limit state, which needs a mutation/);
});
