/**
 * The component's functions: the same names, arguments, returns and errors as
 * `@convex-dev/rate-limiter` 0.3's, with every decision made by ratebound's
 * WebAssembly core over the component's `rateLimits` table (`convexStore`).
 * @module
 */
import { v } from "convex/values";
import { RateLimiter, convexStore } from "ratebound/convex";
import { api } from "./_generated/api.js";
import { mutation, query, type DatabaseReader } from "./_generated/server.js";
import {
  configValidator,
  getValueReturns,
  rateLimitAllArgs,
  rateLimitArgs,
  rateLimitReturns,
  type GetValueReturns,
  type RateLimitReturns,
} from "./validators.js";

/**
 * A limiter over this component's table, with no named limits: every call
 * passes its config inline, as the reference's client does. Randomness (a
 * shard, a fixed window's start) comes from `Math.random`, which Convex seeds
 * per function run.
 */
function limiterOver(db: DatabaseReader): RateLimiter {
  return new RateLimiter(convexStore(db), {}, { random: () => Math.random() });
}

/**
 * Takes `count` tokens if the limit allows and writes the new state.
 * With `throws: true`, a refusal is a `ConvexError` `{ kind: "RateLimited", name, retryAfter }`.
 */
export const rateLimit = mutation({
  args: rateLimitArgs,
  returns: rateLimitReturns,
  handler: async (ctx, { name, ...options }): Promise<RateLimitReturns> => limiterOver(ctx.db).limit(name, options),
});

/** What `rateLimit` would answer now, without writing. */
export const checkRateLimit = query({
  args: rateLimitArgs,
  returns: rateLimitReturns,
  handler: async (ctx, { name, ...options }): Promise<RateLimitReturns> => limiterOver(ctx.db).check(name, options),
});

/**
 * Several limits together, all or none (ratebound's addition): when any item
 * refuses, nothing is written and `retryAfter` is the longest wait.
 */
export const rateLimitAll = mutation({
  args: rateLimitAllArgs,
  returns: rateLimitReturns,
  handler: async (ctx, { requests, throws }): Promise<RateLimitReturns> => limiterOver(ctx.db).limitAll(requests, { throws }),
});

/** What `rateLimitAll` would answer now, without writing. */
export const checkRateLimitAll = query({
  args: rateLimitAllArgs,
  returns: rateLimitReturns,
  handler: async (ctx, { requests, throws }): Promise<RateLimitReturns> => limiterOver(ctx.db).checkAll(requests, { throws }),
});

/**
 * The limit's value, to show or to project forward with `calculateRateLimit`:
 * `{ value, ts, shard, config }`, with the config's defaults filled in. For a
 * sharded limit, `value` is the whole limit's (the sampled shards' mean times
 * the shard count).
 */
export const getValue = query({
  args: {
    name: v.string(),
    key: v.optional(v.string()),
    config: configValidator,
    sampleShards: v.optional(v.number()),
  },
  returns: getValueReturns,
  handler: async (ctx, { name, key, config, sampleShards }): Promise<GetValueReturns> => {
    // The reference reads a falsy sampleShards (absent or 0) as 1.
    const report = await limiterOver(ctx.db).getValue(name, { key, config, sampleShards: sampleShards || undefined });
    return { value: report.value, ts: report.ts, shard: report.shard, config: report.config as GetValueReturns["config"] };
  },
});

/**
 * Deletes every shard's state for `name` and `key` (no key: the shared state).
 * Takes no config, as the reference's does, so it deletes every shard there is.
 */
export const resetRateLimit = mutation({
  args: { name: v.string(), key: v.optional(v.string()) },
  returns: v.null(),
  handler: async (ctx, { name, key }) => {
    const shards = await ctx.db
      .query("rateLimits")
      .withIndex("name", (q) => q.eq("name", name).eq("key", key))
      .collect();
    for (const shard of shards) await ctx.db.delete(shard._id);
    return null;
  },
});

/**
 * Deletes every state created at or before `before` (default: now), 100 per
 * run, scheduling itself again while there are more.
 */
export const clearAll = mutation({
  args: { before: v.optional(v.number()) },
  returns: v.null(),
  handler: async (ctx, args) => {
    const results = await ctx.db
      .query("rateLimits")
      .withIndex("by_creation_time", (q) => q.lte("_creationTime", args.before ?? Date.now()))
      .order("desc")
      .take(100);
    for (const row of results) await ctx.db.delete(row._id);
    const last = results[99];
    if (last !== undefined) await ctx.scheduler.runAfter(0, api.lib.clearAll, { before: last._creationTime });
    return null;
  },
});

export { getServerTime } from "./time.js";
