// examples/convex, run as it is: its schema, its component-style functions and its app mutation,
// in convex-test, on a fake clock.
import { convexTest } from "convex-test";
import { ConvexError } from "convex/values";
import { calculateRateLimit, isRateLimitError } from "ratebound";
import { afterEach, beforeEach, expect, test, vi } from "vitest";
import { api } from "../../../examples/convex/convex/_generated/api.js";
import schema from "../../../examples/convex/convex/schema.ts";

const modules = import.meta.glob("../../../examples/convex/convex/**/*.*s");
const start = Date.UTC(2026, 0, 1);

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["Date"] });
  vi.setSystemTime(start);
});
afterEach(() => vi.useRealTimers());

test("sending takes a token with the insert; the fourth quick message is refused with a ConvexError and not stored", async () => {
  const t = convexTest(schema, modules);
  for (const body of ["one", "two", "three"]) await t.mutation(api.messages.send, { user: "ada", body });
  const error = await t.mutation(api.messages.send, { user: "ada", body: "four" }).catch((caught) => caught);
  expect(error).toBeInstanceOf(ConvexError);
  expect(isRateLimitError(error)).toBe(true);
  expect(error.data).toEqual({ kind: "RateLimited", name: "sendMessage", retryAfter: 6000 });
  expect(await t.query(api.messages.list, { user: "ada" })).toEqual(["one", "two", "three"]);

  vi.setSystemTime(start + 6000);
  await t.mutation(api.messages.send, { user: "ada", body: "four" });
  expect(await t.query(api.messages.list, { user: "ada" })).toEqual(["one", "two", "three", "four"]);
});

test("the getValue query reports the value and config a client projects forward", async () => {
  const t = convexTest(schema, modules);
  await t.mutation(api.messages.send, { user: "ada", body: "hi" });
  const { value, ts, config } = await t.query(api.rateLimits.getValue, { name: "sendMessage", key: "ada" });
  expect({ value, ts }).toEqual({ value: 2, ts: start });
  expect(calculateRateLimit({ value, ts }, config, start + 6000).value).toBe(3);
});

test("rateLimit, checkRateLimit and resetRateLimit work as the component's functions do", async () => {
  const t = convexTest(schema, modules);
  expect(await t.mutation(api.rateLimits.rateLimit, { name: "freeTrialSignUp", count: 100 })).toEqual({ ok: true });
  expect((await t.query(api.rateLimits.checkRateLimit, { name: "freeTrialSignUp" })).ok).toBe(false);
  await t.mutation(api.rateLimits.resetRateLimit, { name: "freeTrialSignUp" });
  expect(await t.query(api.rateLimits.checkRateLimit, { name: "freeTrialSignUp", count: 100 })).toEqual({ ok: true });

  // A sharded budget: reserve more than is left and be told when to run.
  const reserved = await t.mutation(api.rateLimits.rateLimit, { name: "llmTokens", count: 6000, reserve: true });
  expect(reserved.ok).toBe(true);
  expect(reserved.retryAfter).toBeGreaterThan(0);
});
