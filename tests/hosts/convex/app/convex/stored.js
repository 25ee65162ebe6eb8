// Convex functions of the stored-limits test: a limiter over this app's `rateLimits` table that
// reads the limits stored in it, with the clock passed in as an argument.
import { v } from "convex/values";
import { RateLimiter, convexStore } from "ratebound/convex";
import { mutation, query } from "./_generated/server.js";
import { LIMITS } from "./limits.js";

const limiterAt = (db, now) => new RateLimiter(convexStore(db), LIMITS, { now: () => now, storedLimits: true });
const target = { name: v.string(), key: v.optional(v.string()), now: v.number() };

/** `setLimit` in a mutation. */
export const setLimit = mutation({
  args: { ...target, config: v.any() },
  handler: (ctx, { name, key, now, config }) => limiterAt(ctx.db, now).setLimit(name, config, { key }),
});

/** `getLimit` in a query. */
export const getLimit = query({
  args: target,
  handler: (ctx, { name, key, now }) => limiterAt(ctx.db, now).getLimit(name, { key }),
});

/** `deleteLimit` in a mutation. */
export const deleteLimit = mutation({
  args: target,
  handler: (ctx, { name, key, now }) => limiterAt(ctx.db, now).deleteLimit(name, { key }),
});

/** `limit` in a mutation, on the stored limits. */
export const limit = mutation({
  args: { ...target, count: v.optional(v.number()) },
  handler: (ctx, { name, key, now, count }) => limiterAt(ctx.db, now).limit(name, { key, count }),
});

/** `limit` with `grant: true` in a mutation, on the stored limits; the grant comes back as its data. */
export const grant = mutation({
  args: { ...target, count: v.number() },
  handler: async (ctx, { name, key, now, count }) => {
    const result = await limiterAt(ctx.db, now).limit(name, { key, count, grant: true });
    return result.grant ? { ...result, grant: result.grant.data } : result;
  },
});

/** `settle` of a grant's data in a mutation, on the limit stored now. */
export const settle = mutation({
  args: { now: v.number(), data: v.any(), actual: v.number() },
  handler: (ctx, { now, data, actual }) => limiterAt(ctx.db, now).settle(data, actual),
});
