// Convex functions of the concurrency host tests (tests/hosts/convex/concurrency.spec.mjs):
// ratebound/convex over this app's `rateLimits` table, the limits and the clock passed in as
// arguments. Every take, release and extend is one mutation (one transaction); a lease travels
// between them as its data. A core error crosses as a ConvexError carrying its code.
import { ConvexError, v } from "convex/values";
import { RateLimiter, convexStore } from "ratebound/convex";
import { bareStore } from "../../../../settle/scenarios.mjs";
import { internal } from "./_generated/api.js";
import { action, mutation } from "./_generated/server.js";

const args = { limits: v.any(), now: v.number(), name: v.optional(v.string()), options: v.optional(v.any()), lease: v.optional(v.any()), ms: v.optional(v.number()) };
const limiterAt = (store, limits, now) => new RateLimiter(store, limits, { now: () => now });

/** Runs `work`, a core error becoming a ConvexError with its code (the mutation writes nothing then). */
async function coded(work) {
  try {
    return await work();
  } catch (error) {
    if (typeof error?.code === "string") throw new ConvexError({ code: error.code, field: error.field ?? null, message: error.message });
    throw error;
  }
}

/** What `limit` answers, with a lease as its data. */
const answered = (result) => (result.ok && result.lease ? { ok: true, lease: result.lease.toJSON(), expiresAt: result.lease.expiresAt } : result);

/** `limit` on a concurrency limit in a mutation. */
export const limit = mutation({
  args,
  handler: (ctx, { limits, now, name, options }) => coded(async () => answered(await limiterAt(convexStore(ctx.db), limits, now).limit(name, options))),
});

/** A lease's `release` in a mutation. */
export const release = mutation({
  args,
  handler: (ctx, { limits, now, lease }) => coded(() => limiterAt(convexStore(ctx.db), limits, now).lease(lease).release()),
});

/** A lease's `extend` in a mutation. */
export const extend = mutation({
  args,
  handler: (ctx, { limits, now, lease, ms }) => coded(() => limiterAt(convexStore(ctx.db), limits, now).lease(lease).extend(ms)),
});

/** `limit` from an action over a store whose every read and write is a transaction of its own: the control. */
export const limitWithoutTransaction = action({
  args,
  handler: (ctx, { limits, now, name, options }) => {
    const store = {
      read: (ref) => ctx.runQuery(internal.limits.readState, { ref }),
      write: (ref, state) => ctx.runMutation(internal.limits.writeState, { ref, state }),
    };
    return coded(async () => answered(await limiterAt(bareStore(store), limits, now).limit(name, options)));
  },
});
