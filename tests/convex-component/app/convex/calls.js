// The test app's functions: each calls the component through the app-side client, as an app does.
// `impl: "reference"` makes the same call through @convex-dev/rate-limiter's own client and
// component (installed as `reference`), so the two can be compared call for call.
import { RateLimiter as ReferenceRateLimiter } from "@convex-dev/rate-limiter";
import { v } from "convex/values";
import { HOUR, MINUTE, RateLimiter, SECOND, isRateLimitError } from "ratebound/convex-component";
import { components } from "./_generated/api.js";
import { mutation, query } from "./_generated/server.js";

export const LIMITS = {
  sendMessage: { kind: "token bucket", rate: 10, period: MINUTE, capacity: 3 },
  freeTrialSignUp: { kind: "fixed window", rate: 100, period: HOUR, start: 0 },
  perSecond: { kind: "token bucket", rate: 2, period: SECOND },
};

const limiters = {
  ratebound: new RateLimiter(components.rateLimiter, LIMITS),
  reference: new ReferenceRateLimiter(components.reference, LIMITS),
};
const limiterFor = (impl) => limiters[impl ?? "ratebound"];

const impl = v.optional(v.union(v.literal("ratebound"), v.literal("reference")));
const config = v.optional(v.any()); // passed through to the client untouched: the component validates it
const request = {
  impl,
  name: v.string(),
  key: v.optional(v.string()),
  count: v.optional(v.number()),
  reserve: v.optional(v.boolean()),
  throws: v.optional(v.boolean()),
  config,
};

/** `limit` in a mutation. */
export const limit = mutation({
  args: request,
  handler: (ctx, { impl, name, ...options }) => limiterFor(impl).limit(ctx, name, options),
});

/** `check` in a query. */
export const check = query({
  args: request,
  handler: (ctx, { impl, name, ...options }) => limiterFor(impl).check(ctx, name, options),
});

/** `getValue` in a query. */
export const getValue = query({
  args: { impl, name: v.string(), key: v.optional(v.string()), sampleShards: v.optional(v.number()), config },
  handler: (ctx, { impl, name, ...options }) => limiterFor(impl).getValue(ctx, name, options),
});

/** `reset` in a mutation. */
export const reset = mutation({
  args: { impl, name: v.string(), key: v.optional(v.string()) },
  handler: (ctx, { impl, name, key }) => limiterFor(impl).reset(ctx, name, key === undefined ? undefined : { key }),
});

/** `limitAll` in a mutation (ratebound only). */
export const limitAll = mutation({
  args: { requests: v.array(v.any()), throws: v.optional(v.boolean()) },
  handler: (ctx, { requests, throws }) => limiters.ratebound.limitAll(ctx, requests, { throws }),
});

/** `checkAll` in a query (ratebound only). */
export const checkAll = query({
  args: { requests: v.array(v.any()), throws: v.optional(v.boolean()) },
  handler: (ctx, { requests, throws }) => limiters.ratebound.checkAll(ctx, requests, { throws }),
});

/** Takes a token and stores a message in one transaction. */
export const send = mutation({
  args: { user: v.string(), body: v.string() },
  handler: async (ctx, { user, body }) => {
    await limiters.ratebound.limit(ctx, "sendMessage", { key: user, throws: true });
    return await ctx.db.insert("messages", { user, body });
  },
});

/** Takes tokens from two limits, stores a message, then fails: everything must roll back. */
export const limitThenThrow = mutation({
  args: { user: v.string() },
  handler: async (ctx, { user }) => {
    const status = await limiters.ratebound.limit(ctx, "sendMessage", { key: user });
    await limiters.ratebound.limitAll(ctx, [{ name: "perSecond", key: user }, { name: "freeTrialSignUp" }]);
    await ctx.db.insert("messages", { user, body: "never stored" });
    throw new Error(`failed after taking tokens (ok: ${status.ok})`);
  },
});

/** Catches a refusal thrown by the component inside the app's mutation, as apps do. */
export const limitAndCatch = mutation({
  args: { name: v.string(), key: v.optional(v.string()) },
  handler: async (ctx, { name, key }) => {
    try {
      await limiters.ratebound.limit(ctx, name, { key, throws: true });
      return "granted";
    } catch (error) {
      if (isRateLimitError(error)) return { refused: error.data };
      throw error;
    }
  },
});

/** The component's other functions, called directly by reference as an app may. */
export const clearAll = mutation({
  args: { impl, before: v.optional(v.number()) },
  handler: (ctx, { impl, before }) =>
    ctx.runMutation((impl === "reference" ? components.reference : components.rateLimiter).lib.clearAll, { before }),
});
export const serverTime = mutation({
  args: { impl, module: v.union(v.literal("lib"), v.literal("time")) },
  handler: (ctx, { impl, module }) =>
    ctx.runMutation((impl === "reference" ? components.reference : components.rateLimiter)[module].getServerTime, {}),
});

/** The browser's query and server-time mutation, keyed by the client's key. */
export const { getRateLimit, getServerTime } = limiters.ratebound.hookAPI("sendMessage", {
  key: (_ctx, keyFromClient) => keyFromClient ?? "anonymous",
});
/** The same query through the reference, to compare. */
export const referenceGetRateLimit = limiters.reference.hookAPI("sendMessage", {
  key: (_ctx, keyFromClient) => keyFromClient ?? "anonymous",
}).getRateLimit;
