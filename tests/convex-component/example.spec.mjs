// examples/convex-component, run as it is: its schema, its convex.config installing ratebound's
// component, its send mutation under a per-user limit, and its hookAPI query, on a fake clock.
import { convexTest } from "convex-test";
import { ConvexError } from "convex/values";
import { calculateRateLimit, isRateLimitError } from "ratebound/convex-component";
import { afterEach, beforeEach, expect, test, vi } from "vitest";
import rateLimiterTest from "ratebound/convex-component/test";
import { api } from "../../examples/convex-component/convex/_generated/api.js";
import { componentConfig } from "./definitions.mjs";
import schema from "../../examples/convex-component/convex/schema.ts";

const modules = import.meta.glob("../../examples/convex-component/convex/**/*.*s");
const start = Date.UTC(2026, 0, 1);

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["Date"] });
  vi.setSystemTime(start);
});
afterEach(() => vi.useRealTimers());
const rows = (t, table) => t.runInComponent("rateLimiter", (ctx) => ctx.db.query(table).collect());

function app() {
  const t = convexTest(schema, modules);
  rateLimiterTest.register(t); // ratebound/convex-component/test, as the reference's /test is used
  return t;
}

test("convex.config.ts installs the component as rateLimiter", async () => {
  // Convex's bundler stamps each component definition with where it was found; `app.use` needs it.
  componentConfig.componentDefinitionPath = "node_modules/ratebound/convex-component";
  componentConfig.defaultName = componentConfig._name;
  const { default: appConfig } = await import("../../examples/convex-component/convex/convex.config.ts");
  expect(appConfig._childComponents.map(([name, definition]) => [name, definition._name])).toEqual([["rateLimiter", "rateLimiter"]]);
});

test("sending takes a token with the insert; the fourth quick message is refused with a ConvexError and not stored", async () => {
  const t = app();
  for (const body of ["one", "two", "three"]) await t.mutation(api.messages.send, { user: "ada", body });
  expect(await t.query(api.messages.canSend, { user: "ada" })).toEqual({ ok: false, retryAfter: 6000 });
  const error = await t.mutation(api.messages.send, { user: "ada", body: "four" }).catch((caught) => caught);
  expect(error).toBeInstanceOf(ConvexError);
  expect(isRateLimitError(error)).toBe(true);
  expect(error.data).toEqual({ kind: "RateLimited", name: "sendMessage", retryAfter: 6000 });
  expect(await t.query(api.messages.list, { user: "ada" })).toEqual(["one", "two", "three"]);
  await t.mutation(api.messages.send, { user: "bob", body: "hello" }); // another user's own limit

  vi.setSystemTime(start + 6000);
  await t.mutation(api.messages.send, { user: "ada", body: "four" });
  expect(await t.query(api.messages.list, { user: "ada" })).toEqual(["one", "two", "three", "four"]);
});

test("the hookAPI query reports the value and config the browser projects forward; getServerTime is the server's clock", async () => {
  const t = app();
  await t.mutation(api.messages.send, { user: "ada", body: "hi" });
  const { value, ts, config } = await t.query(api.rateLimits.getRateLimit, { key: "ada" });
  expect({ value, ts }).toEqual({ value: 2, ts: start });
  expect(config).toEqual({ kind: "token bucket", rate: 10, period: 60_000, capacity: 3, shards: 1 });
  expect(calculateRateLimit({ value, ts }, config, start + 6000).value).toBe(3);
  vi.setSystemTime(start + 1234);
  expect(await t.mutation(api.rateLimits.getServerTime, {})).toBe(start + 1234);
});

test("reactions are limited asynchronously: one after another, 100 a minute are granted and the 101st refused before the worker has run; the worker then applies them", async () => {
  vi.useFakeTimers();
  vi.setSystemTime(start);
  const t = app();
  const statuses = [];
  for (let i = 0; i < 101; i++) statuses.push(await t.mutation(api.messages.react, { user: `user${i}`, emoji: "+1" }));
  expect(statuses.filter((status) => status.ok)).toHaveLength(100);
  expect(statuses[100]).toEqual({ ok: false, retryAfter: 600 });
  expect(await rows(t, "rateLimits")).toEqual([]); // nothing applied yet: 100 tokens queued
  expect(await rows(t, "pendingUpdates")).toHaveLength(100);
  await t.finishAllScheduledFunctions(vi.runAllTimers);
  expect(await rows(t, "pendingUpdates")).toEqual([]);
  expect((await rows(t, "rateLimits")).map(({ name, value, ts }) => ({ name, value, ts }))).toEqual([{ name: "reactions", value: 0, ts: start }]);
  expect(await t.run((ctx) => ctx.db.query("reactions").collect())).toHaveLength(100);
});
