// Coalescing in real Convex functions (convex-test), issue 22 item 3: calls made at once on one key
// inside one mutation share its ctx.db; through one convexStore they are decided together, in
// arrival order, so they answer exactly as the same calls one at a time and write each state once.
// Through stores that do not share their turns, the same calls decide on states another of them is
// about to write: they all admit and each inserts a row of its own (the control).
import { convexTest } from "convex-test";
import { describe, expect, test } from "vitest";
import { admitted, COALESCE_LIMITS, COALESCE_NAMES } from "../coalesce-traffic.mjs";
import { api } from "./app/convex/_generated/api.js";
import schema from "./app/convex/schema.js";

const modules = import.meta.glob("./app/convex/**/*.*s");
const app = () => convexTest(schema, modules);

describe("calls at once on one key in one mutation", () => {
  test("60 limits through one convexStore admit exactly the bound of 10, as 60 one at a time do, writing the state twice", async () => {
    const seen = await app().mutation(api.coalesce.atOnce, { n: 60, key: "ada" });
    expect(admitted(seen.answers)).toBe(10);
    expect(seen.answers).toEqual(seen.serial);
    expect(seen.writes).toBe(2); // the first call's write, then one for the 59 that waited
    expect(seen.rows).toEqual(seen.serialRows);
    expect(seen.rows).toHaveLength(1);
  });

  for (const name of COALESCE_NAMES) {
    test(`${name}: 40 limits and checks of 1 to 3 tokens, reserving or not, with figures or not, answer exactly as one at a time`, async () => {
      const seen = await app().mutation(api.coalesce.atOnce, { n: 40, key: "ada", mixed: true, name });
      expect(seen.answers).toEqual(seen.serial);
      expect(seen.answers.some((answer) => answer.ok === false)).toBe(true);
      // Two batches at most, each writing a state once: a sliding window's two windows are two states.
      expect(seen.writes).toBeLessThanOrEqual(COALESCE_LIMITS[name].kind === "sliding window" ? 4 : 2);
      expect(seen.rows).toEqual(seen.serialRows);
    });
  }

  test("the same 60 calls through a store each (nothing coalesces them) all read the state before any writes: every one is admitted, each inserting its own row (so the tests above can fail)", async () => {
    const seen = await app().mutation(api.coalesce.atOnce, { n: 60, key: "ada", coalesce: false });
    expect(admitted(seen.answers)).toBeGreaterThan(10);
    expect(seen.rows.length).toBeGreaterThan(1);
  });
});
