// The test app's lease functions (tests/convex-component/leases.spec.mjs): concurrency limits of
// ratebound's component through the app-side client, the limits passed in as an argument. Each
// take, release and extend is one mutation of the app; a lease travels between them as its data.
import { v } from "convex/values";
import { RateLimiter } from "ratebound/convex-component";
import { api, components } from "./_generated/api.js";
import { mutation } from "./_generated/server.js";

const args = { limits: v.any(), name: v.optional(v.string()), options: v.optional(v.any()), lease: v.optional(v.any()), ms: v.optional(v.number()) };
const limiterOf = (limits) => new RateLimiter(components.rateLimiter, limits);

/** `limit` on a concurrency limit: the lease's data, or the wait. */
export const limit = mutation({ args, handler: (ctx, { limits, name, options }) => limiterOf(limits).limit(ctx, name, options) });

/** `release` of a lease's data. */
export const release = mutation({ args, handler: (ctx, { limits, lease }) => limiterOf(limits).release(ctx, lease) });

/** `extend` of a lease's data. */
export const extend = mutation({ args, handler: (ctx, { limits, lease, ms }) => limiterOf(limits).extend(ctx, lease, ms) });

/** Takes a lease, then throws: the component's take must roll back with the app's mutation. */
export const limitThenThrow = mutation({
  args,
  handler: async (ctx, { limits, name, options }) => {
    const taken = await limiterOf(limits).limit(ctx, name, options);
    throw new Error(`the app failed after the take (${JSON.stringify(taken)})`);
  },
});

/** Takes a lease and schedules its release `ms` later, as a job that ends then. */
export const startJob = mutation({
  args,
  handler: async (ctx, { limits, name, options, ms }) => {
    const taken = await limiterOf(limits).limit(ctx, name, options);
    if (taken.ok) await ctx.scheduler.runAfter(ms, api.leasing.release, { limits, lease: taken.lease });
    return taken;
  },
});

/** `reset` of a concurrency limit's key. */
export const reset = mutation({ args: { ...args, key: v.optional(v.string()) }, handler: (ctx, { limits, name, key }) => limiterOf(limits).reset(ctx, name, { key }) });
