/**
 * The component's functions: the same names, arguments, returns and errors as
 * `@convex-dev/rate-limiter` 0.4's, with every decision made by ratebound's
 * WebAssembly core over the component's `rateLimits` table (`convexStore`), and
 * asynchronous limits' updates queued in `pendingUpdates` for ./worker.ts.
 * @module
 */
import { v } from "convex/values";
import { calculateRateLimit } from "ratebound";
import { RateLimiter, convexStore } from "ratebound/convex";
import { clearAllReference } from "./references.js";
import { mutation, query, type DatabaseReader, type MutationCtx } from "./_generated/server.js";
import { limiterOn, queuedState } from "./queue.js";
import { pingWorker } from "./worker.js";
import {
  configValidator,
  coreConfig,
  vPendingUpdate,
  type ValidatedConfig,
  getValueReturns,
  rateLimitAllArgs,
  rateLimitArgs,
  rateLimitReturns,
  type GetValueReturns,
  type PendingUpdate,
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
  handler: async (ctx, { name, config, ...options }): Promise<RateLimitReturns> => {
    mustApplyTransactionally(name, config);
    return limiterOver(ctx.db).limit(name, { ...options, config: coreConfig(config) });
  },
});

/** What `rateLimit` would answer now, without writing. */
export const checkRateLimit = query({
  args: rateLimitArgs,
  returns: rateLimitReturns,
  handler: async (ctx, { name, config, ...options }): Promise<RateLimitReturns> =>
    limiterOver(ctx.db).check(name, { ...options, config: coreConfig(config) }),
});

/**
 * Several limits together, all or none (ratebound's addition): when any item
 * refuses, nothing is written and `retryAfter` is the longest wait.
 */
export const rateLimitAll = mutation({
  args: rateLimitAllArgs,
  returns: rateLimitReturns,
  handler: async (ctx, { requests, throws }): Promise<RateLimitReturns> => {
    for (const { name, config } of requests) mustApplyTransactionally(name, config);
    return limiterOver(ctx.db).limitAll(requests.map(withCoreConfig), { throws });
  },
});

/** What `rateLimitAll` would answer now, without writing. */
export const checkRateLimitAll = query({
  args: rateLimitAllArgs,
  returns: rateLimitReturns,
  handler: async (ctx, { requests, throws }): Promise<RateLimitReturns> =>
    limiterOver(ctx.db).checkAll(requests.map(withCoreConfig), { throws }),
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
    const report = await limiterOver(ctx.db).getValue(name, { key, config: coreConfig(config), sampleShards: sampleShards || undefined });
    const reported = { ...report.config, ...(config.applyUpdates && { applyUpdates: config.applyUpdates }) };
    return { value: report.value, ts: report.ts, shard: report.shard, config: reported as GetValueReturns["config"] };
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
    if (last !== undefined) await ctx.scheduler.runAfter(0, clearAllReference, { before: last._creationTime });
    return null;
  },
});

/**
 * Queues updates of asynchronous limits for the worker: consumptions (the
 * client has checked them against a stale snapshot) and resets. A consumption
 * whose config says `applyUpdates: "transactionally"` is refused, as the
 * reference refuses it, and so is one the core could never apply (an invalid
 * config, a negative count): the call rejects with the core's error and
 * queues nothing.
 */
export const enqueueUpdates = mutation({
  args: { updates: v.array(vPendingUpdate) },
  returns: v.null(),
  handler: async (ctx, { updates }) => {
    for (const update of updates) {
      if (update.kind === "consume" && update.config.applyUpdates === "transactionally") {
        throw new Error(`Rate limit config for ${update.name} has \`applyUpdates: "transactionally"\` and can't be enqueued.`);
      }
      // ratebound's: what the worker could never apply (a bad config, count or ts) is refused here,
      // with the core's error, rather than failing every batch it would be part of.
      if (update.kind === "consume") calculateRateLimit(null, coreConfig(update.config), update.ts, update.count);
    }
    await enqueue(ctx, updates);
    return null;
  },
});

/**
 * What an asynchronous limit would answer once everything queued for it is
 * applied (ratebound's addition): the stored state with the limit's pending
 * updates folded in, then the core's `check`. The client runs it on a stale
 * snapshot (no conflict) to decide a call on the fast path, asking for `count`
 * plus the limit's `headroom` (docs/convex.md: Asynchronous updates), and for `check`
 * with headroom. A count beyond what the limit can ever grant is refused here
 * with `retryAfter: 0` (a real refusal always waits) rather than thrown: the
 * client then asks `queuedRateLimit` or `checkRateLimit`, which throw the
 * reference's error.
 */
export const checkQueuedRateLimit = query({
  args: rateLimitArgs,
  returns: rateLimitReturns,
  handler: async (ctx, { name, key, config, ...options }): Promise<RateLimitReturns> => {
    const limiter = limiterOn(await queuedState(ctx.db, name, key));
    try {
      return await limiter.check(name, { ...options, key, config: coreConfig(config) });
    } catch (error) {
      if ((error as { code?: unknown }).code === "COUNT_EXCEEDS_MAX") return { ok: false, retryAfter: 0 };
      throw error;
    }
  },
});

/**
 * Decides an asynchronous limit's call exactly (ratebound's addition): reads the
 * stored state and the limit's queue in this transaction, decides with the
 * core, and queues the consumption when granted. It conflicts with concurrent
 * calls of the same limit and with the worker, as a transactional limit does;
 * the client uses it when the fast path lacks headroom.
 */
export const queuedRateLimit = mutation({
  args: rateLimitArgs,
  returns: rateLimitReturns,
  handler: async (ctx, { name, key, config, ...options }): Promise<RateLimitReturns> => {
    if (config.applyUpdates !== "asynchronously") {
      throw new Error(`Rate limit config for ${name} has \`applyUpdates: "${config.applyUpdates ?? "transactionally"}"\` and can't be enqueued.`);
    }
    const status = await limiterOn(await queuedState(ctx.db, name, key)).check(name, { ...options, key, config: coreConfig(config) });
    if (status.ok) await enqueue(ctx, [{ kind: "consume", name, key, count: options.count ?? 1, config, ts: Date.now() }]);
    return status;
  },
});

/** Inserts updates stamped with the commit's timestamp, and wakes the worker. */
async function enqueue(ctx: MutationCtx, updates: PendingUpdate[]): Promise<void> {
  for (const update of updates) await ctx.db.insert("pendingUpdates", { update, updatedAt: ctx.db.vars.commitTs });
  await pingWorker(ctx);
}

/** Refuses to apply an asynchronous limit's consumption in this transaction, with the reference's message. */
function mustApplyTransactionally(name: string, config: ValidatedConfig): void {
  if (config.applyUpdates === "asynchronously") {
    throw new Error(`Rate limit config for ${name} has \`applyUpdates: "asynchronously"\`. Limit consumption must be enqueued.`);
  }
}

/** A batch item with the config the core takes. */
function withCoreConfig<Item extends { config: ValidatedConfig }>(item: Item): Item {
  return { ...item, config: coreConfig(item.config) };
}

export { getServerTime } from "./time.js";
