// The test app's grant functions: an LLM call's estimate taken with a grant through the component's
// client, settled in another mutation or a scheduled one, as an app does.
import { ConvexError, v } from "convex/values";
import { MINUTE, RateLimiter } from "ratebound/convex-component";
import { components, internal } from "./_generated/api.js";
import { internalMutation, mutation } from "./_generated/server.js";

const limiter = new RateLimiter(components.rateLimiter, {
  llmTokens: { kind: "token bucket", rate: 40_000, period: MINUTE, maxReserved: 10_000 },
  lazy: { kind: "token bucket", rate: 10, period: MINUTE, applyUpdates: "asynchronously" },
});

/** Takes `count` tokens with a grant. */
export const take = mutation({
  args: { name: v.optional(v.string()), key: v.string(), count: v.number() },
  handler: (ctx, { name, key, count }) => limiter.limit(ctx, name ?? "llmTokens", { key, count, reserve: true, grant: true }),
});

/** Settles a grant's data; a ConvexError's data is answered rather than thrown. */
export const settle = mutation({
  args: { grant: v.any(), actual: v.any() },
  handler: async (ctx, { grant, actual }) => {
    try {
      return await limiter.settle(ctx, grant, actual);
    } catch (error) {
      if (error instanceof ConvexError) return { error: error.data };
      return { error: { message: error.message } };
    }
  },
});

/** Settles later, from a scheduled function. */
export const settleLater = mutation({
  args: { grant: v.any(), actual: v.number(), after: v.number() },
  handler: (ctx, { grant, actual, after }) => ctx.scheduler.runAfter(after, internal.grants.settleScheduled, { grant, actual }),
});

export const settleScheduled = internalMutation({
  args: { grant: v.any(), actual: v.number() },
  handler: (ctx, { grant, actual }) => limiter.settle(ctx, grant, actual),
});

/** The limit's value. */
export const value = mutation({
  args: { key: v.string() },
  handler: (ctx, { key }) => limiter.getValue(ctx, "llmTokens", { key }),
});
