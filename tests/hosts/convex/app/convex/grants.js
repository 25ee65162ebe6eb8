// Grants in Convex functions (ratebound/convex): a mutation takes an estimate with a grant and
// answers its data; another mutation, or a scheduled one, settles it; a mutation that fails after
// settling rolls the settle back with everything else.
import { v } from "convex/values";
import { MINUTE, RateLimiter, convexStore } from "ratebound/convex";
import { internal } from "./_generated/api.js";
import { internalMutation, mutation } from "./_generated/server.js";

const LIMITS = { llm: { kind: "token bucket", rate: 40_000, period: MINUTE, maxReserved: 10_000 } };
const limiterAt = (db, now) => new RateLimiter(convexStore(db), LIMITS, { now: () => now });

/** Takes `count` tokens with a grant; answers the result with the grant's data (plain values). */
export const take = mutation({
  args: { key: v.string(), count: v.number(), now: v.number() },
  handler: async (ctx, { key, count, now }) => {
    const { ok, retryAfter, grant } = await limiterAt(ctx.db, now).limit("llm", { key, count, reserve: true, grant: true });
    return { ok, ...(retryAfter === undefined ? {} : { retryAfter }), ...(grant ? { grant: grant.data } : {}) };
  },
});

/** Settles a grant's data; a second settle answers the error's code instead of throwing. */
export const settle = mutation({
  args: { grant: v.any(), actual: v.any(), now: v.number() },
  handler: async (ctx, { grant, actual, now }) => {
    try {
      return await limiterAt(ctx.db, now).settle(grant, actual);
    } catch (error) {
      return { code: error.code };
    }
  },
});

/** Schedules the settle `after` ms from now, as a job that finished later would. */
export const settleLater = mutation({
  args: { grant: v.any(), actual: v.number(), now: v.number(), after: v.number() },
  handler: async (ctx, { grant, actual, now, after }) => {
    await ctx.scheduler.runAfter(after, internal.grants.settleScheduled, { grant, actual, now: now + after });
  },
});

export const settleScheduled = internalMutation({
  args: { grant: v.any(), actual: v.number(), now: v.number() },
  handler: (ctx, { grant, actual, now }) => limiterAt(ctx.db, now).settle(grant, actual),
});

/** Settles, then fails: the settle is rolled back with the rest of the mutation. */
export const settleThenFail = mutation({
  args: { grant: v.any(), now: v.number() },
  handler: async (ctx, { grant, now }) => {
    await limiterAt(ctx.db, now).settle(grant, 0);
    throw new Error("the app failed after settling");
  },
});

/** The limit's value. */
export const value = mutation({
  args: { key: v.string(), now: v.number() },
  handler: (ctx, { key, now }) => limiterAt(ctx.db, now).getValue("llm", { key }),
});
