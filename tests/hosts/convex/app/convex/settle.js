// Convex functions of the settle host tests (tests/hosts/convex/settle.spec.mjs): ratebound/convex
// over this app's `rateLimits` table, the limits of tests/settle/scenarios.mjs for the algorithm
// `kind`, and the clock passed in as an argument. Every call is one mutation (one transaction); a
// grant travels between them as its data.
import { ConvexError, v } from "convex/values";
import { RateLimiter, convexStore } from "ratebound/convex";
import { CALENDAR_ANCHOR, bareStore, calendarLimits, settleLimits } from "../../../../settle/scenarios.mjs";
import { internal } from "./_generated/api.js";
import { action, mutation, query } from "./_generated/server.js";

const kind = v.union(v.literal("token bucket"), v.literal("fixed window"));
// With the calendar quota of scenarios.calendarQuota (a fixed window whatever `kind`).
const limits = (kind) => ({ ...settleLimits(kind, 60_000), ...calendarLimits("fixed window", CALENDAR_ANCHOR) });
const limiterAt = (store, kind, now) => new RateLimiter(store, limits(kind), { now: () => now });
const limitArgs = { kind, now: v.number(), name: v.string(), options: v.any() };
const settleArgs = { kind, now: v.number(), data: v.any(), actual: v.number() };

/** `limit` in a mutation; a grant comes back as its data. */
export const limit = mutation({
  args: limitArgs,
  handler: async (ctx, { kind, now, name, options }) => {
    const result = await limiterAt(convexStore(ctx.db), kind, now).limit(name, options);
    return result.grant ? { ...result, grant: result.grant.data } : result;
  },
});

/** `settle` of a grant's data in a mutation. */
export const settle = mutation({
  args: settleArgs,
  handler: (ctx, { kind, now, data, actual }) => limiterAt(convexStore(ctx.db), kind, now).settle(data, actual),
});

/** `getValue` in a query. */
export const getValue = query({
  args: limitArgs,
  handler: (ctx, { kind, now, name, options }) => limiterAt(convexStore(ctx.db), kind, now).getValue(name, options),
});

/** A mutation that settles, then throws: the settle must roll back with it. */
export const settleThenThrow = mutation({
  args: settleArgs,
  handler: async (ctx, { kind, now, data, actual }) => {
    await limiterAt(convexStore(ctx.db), kind, now).settle(data, actual);
    throw new Error("the app failed after settling");
  },
});

/** `settle` from an action over a store whose every read and write is a transaction of its own. */
export const settleWithoutTransaction = action({
  args: settleArgs,
  handler: (ctx, { kind, now, data, actual }) => {
    const store = {
      read: (ref) => ctx.runQuery(internal.limits.readState, { ref }),
      write: (ref, state) => ctx.runMutation(internal.limits.writeState, { ref, state }),
    };
    return limiterAt(bareStore(store), kind, now).settle(data, actual);
  },
});

/** A grant taken in a mutation that then throws: the charge rolls back, and the client gets the grant's data in the error. */
export const limitThenThrow = mutation({
  args: limitArgs,
  handler: async (ctx, { kind, now, name, options }) => {
    const result = await limiterAt(convexStore(ctx.db), kind, now).limit(name, options);
    throw new ConvexError({ grant: result.grant?.data ?? null });
  },
});
