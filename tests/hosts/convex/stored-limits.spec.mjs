// Limits stored in the host on Convex (convex-test): setLimit in one mutation, obeyed by the next
// mutation's limiter; getLimit in a query; deleteLimit; a limit that changes the shards is refused
// and rolls back.
import { convexTest } from "convex-test";
import { describe, expect, test } from "vitest";
import { api } from "./app/convex/_generated/api.js";
import schema from "./app/convex/schema.js";

const modules = import.meta.glob("./app/convex/**/*.*s");
const now = 1_700_000_000_000;

describe("stored limits in Convex functions", () => {
  test("a key's stored limit is obeyed by the next mutation, the name's by other keys, and deleteLimit restores the code's", async () => {
    const t = convexTest(schema, modules);
    const at = { name: "daily", now };
    await t.mutation(api.stored.setLimit, { ...at, key: "ada", config: { kind: "token bucket", rate: 2, period: 86_400_000 } });
    await t.mutation(api.stored.setLimit, { ...at, config: { kind: "token bucket", rate: 1, period: 86_400_000 } });
    expect(await t.query(api.stored.getLimit, { ...at, key: "ada" })).toEqual({ config: { kind: "token bucket", rate: 2, period: 86_400_000, capacity: 2, shards: 1 }, source: "key" });
    expect(await t.query(api.stored.getLimit, { ...at, key: "bob" })).toMatchObject({ source: "name" });
    const ada = [];
    for (let call = 0; call < 3; call++) ada.push((await t.mutation(api.stored.limit, { ...at, key: "ada" })).ok);
    expect(ada).toEqual([true, true, false]);
    expect((await t.mutation(api.stored.limit, { ...at, key: "bob" })).ok).toBe(true);
    expect((await t.mutation(api.stored.limit, { ...at, key: "bob" })).ok).toBe(false);
    await t.mutation(api.stored.deleteLimit, at);
    expect(await t.query(api.stored.getLimit, { ...at, key: "cy" })).toMatchObject({ source: "code" });
    expect((await t.mutation(api.stored.limit, { ...at, key: "cy", count: 10 })).ok).toBe(true);
  });

  test("a grant is charged on the key's stored limit in its mutation, and settles on it in another", async () => {
    const t = convexTest(schema, modules);
    const at = { name: "daily", key: "ada", now };
    await t.mutation(api.stored.setLimit, { ...at, config: { kind: "token bucket", rate: 10, period: 86_400_000, capacity: 50 } });
    // The code's bucket holds 10: a grant of 20 passes only on ada's 50.
    const granted = await t.mutation(api.stored.grant, { ...at, count: 20 });
    expect(granted.ok).toBe(true);
    expect(await t.mutation(api.stored.settle, { now, data: granted.grant, actual: 5 })).toEqual({ refunded: 15, charged: 0, unpaid: 0 });
    // 45 left, past the code's capacity of 10.
    expect((await t.mutation(api.stored.grant, { ...at, count: 45 })).ok).toBe(true);
    expect((await t.mutation(api.stored.grant, { ...at, count: 1 })).ok).toBe(false);
  });

  test("a stored limit that changes the shards is refused and stores nothing", async () => {
    const t = convexTest(schema, modules);
    await expect(t.mutation(api.stored.setLimit, { name: "daily", now, config: { kind: "token bucket", rate: 2, period: 1000, shards: 2 } })).rejects.toThrow(/shards must be the limit's own in code/);
    expect(await t.query(api.stored.getLimit, { name: "daily", now })).toMatchObject({ source: "code" });
  });
});
