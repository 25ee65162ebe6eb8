// Convex functions of the host tests: ratebound/convex over this app's `rateLimits` table, with
// the clock passed in as an argument so that every answer is exact.
import { ConvexError, v } from "convex/values";
import { RateLimiter as CoreRateLimiter } from "ratebound";
import { DAY, RateLimiter, SECOND, convexStore, isRateLimitError } from "ratebound/convex";
import { internal } from "./_generated/api.js";
import { action, internalMutation, internalQuery, mutation, query } from "./_generated/server.js";

export const LIMITS = {
  sendMessage: { kind: "token bucket", rate: 2, period: SECOND },
  daily: { kind: "token bucket", rate: 10, period: DAY },
  dailySharded: { kind: "token bucket", rate: 20, period: DAY, shards: 5 },
  perUser: { kind: "token bucket", rate: 3, period: DAY },
  global: { kind: "fixed window", rate: 2, period: DAY, start: 0 },
  legacy: { kind: "token bucket", rate: 1, period: DAY, capacity: 5 }, // as the component is asked for it below
};

const limiterAt = (db, now) => new RateLimiter(convexStore(db), LIMITS, { now: () => now });

const request = {
  name: v.string(),
  key: v.optional(v.string()),
  count: v.optional(v.number()),
  reserve: v.optional(v.boolean()),
  throws: v.optional(v.boolean()),
  dryRun: v.optional(v.boolean()),
  now: v.number(),
};
const refValidator = v.object({ name: v.string(), key: v.optional(v.string()), shard: v.number() });
const stateValidator = v.union(v.null(), v.object({ value: v.number(), ts: v.number() }));

/** `limit` in a mutation. */
export const limit = mutation({
  args: request,
  handler: (ctx, { name, now, ...options }) => limiterAt(ctx.db, now).limit(name, options),
});

/** `check` in a query. */
export const check = query({
  args: request,
  handler: (ctx, { name, now, ...options }) => limiterAt(ctx.db, now).check(name, options),
});

/** `getValue` in a query. */
export const getValue = query({
  args: { name: v.string(), key: v.optional(v.string()), sampleShards: v.optional(v.number()), now: v.number() },
  handler: (ctx, { name, now, ...options }) => limiterAt(ctx.db, now).getValue(name, options),
});

/** `reset` in a mutation. */
export const reset = mutation({
  args: { name: v.string(), key: v.optional(v.string()) },
  handler: (ctx, { name, key }) => limiterAt(ctx.db, 0).reset(name, { key }),
});

/** `limit` in a query: must fail, granted or not. */
export const limitInQuery = query({
  args: request,
  handler: (ctx, { name, now, ...options }) => limiterAt(ctx.db, now).limit(name, options),
});

/** `reset` in a query: must fail. */
export const resetInQuery = query({
  args: { name: v.string(), key: v.optional(v.string()) },
  handler: (ctx, { name, key }) => limiterAt(ctx.db, 0).reset(name, { key }),
});

/** The core's RateLimiter (not ratebound/convex's) over a query's convexStore: its write must fail clearly. */
export const coreLimitInQuery = query({
  args: request,
  handler: (ctx, { name, now, ...options }) => new CoreRateLimiter(convexStore(ctx.db), LIMITS, { now: () => now }).limit(name, options),
});

/** A refusal with `throws: true`, caught inside the function: what the app's own code sees. */
export const limitCatching = mutation({
  args: request,
  handler: async (ctx, { name, now, ...options }) => {
    try {
      return { result: await limiterAt(ctx.db, now).limit(name, { ...options, throws: true }) };
    } catch (error) {
      return { isConvexError: error instanceof ConvexError, isRateLimitError: isRateLimitError(error), data: error.data };
    }
  },
});

/** Sends a message after taking a token, then fails: the token must come back with the message. */
export const sendThenFail = mutation({
  args: { user: v.string(), now: v.number() },
  handler: async (ctx, { user, now }) => {
    const status = await limiterAt(ctx.db, now).limit("perUser", { key: user, throws: true });
    await ctx.db.insert("messages", { user, body: "never sent" });
    throw new Error(`failing after the limit granted ${JSON.stringify(status)}`);
  },
});

/** Takes `perUser` and `global` for one message, as a batch or as two calls; all or nothing either way. */
export const sendWithTwoLimits = mutation({
  args: { user: v.string(), now: v.number(), batch: v.boolean() },
  handler: async (ctx, { user, now, batch }) => {
    const limiter = limiterAt(ctx.db, now);
    if (batch) {
      await limiter.limitAll([{ name: "perUser", key: user }, { name: "global" }], { throws: true });
    } else {
      await limiter.limit("perUser", { key: user, throws: true });
      await limiter.limit("global", { throws: true });
    }
    await ctx.db.insert("messages", { user, body: "hello" });
  },
});

/** Every stored row and message, to see what a test left behind. */
export const everything = query({
  args: {},
  handler: async (ctx) => ({
    rateLimits: (await ctx.db.query("rateLimits").collect()).map(({ name, key, shard, value, ts }) => ({ name, key, shard, value, ts })),
    messages: (await ctx.db.query("messages").collect()).map(({ user, body }) => ({ user, body })),
  }),
});

/** Writes each ref's state through convexStore, then reads every ref back in the same mutation. */
export const writeAndReadRefs = mutation({
  args: { refs: v.array(refValidator), states: v.array(stateValidator) },
  handler: async (ctx, { refs, states }) => {
    const store = convexStore(ctx.db);
    for (const [index, ref] of refs.entries()) await store.write(ref, states[index]);
    return Promise.all(refs.map((ref) => store.read(ref)));
  },
});

/** Reads each ref through a query's convexStore. */
export const readRefs = query({
  args: { refs: v.array(refValidator) },
  handler: (ctx, { refs }) => Promise.all(refs.map((ref) => convexStore(ctx.db).read(ref))),
});

// A deliberately non-transactional host: an action whose store reads and writes in separate
// transactions (one query per read, one mutation per write). Concurrent actions then decide on
// stale reads, so the concurrency harness must see it admit more than the bound.

/** One read, as its own transaction. */
export const readState = internalQuery({
  args: { ref: refValidator },
  handler: (ctx, { ref }) => convexStore(ctx.db).read(ref),
});

/** One write, as its own transaction. */
export const writeState = internalMutation({
  args: { ref: refValidator, state: stateValidator },
  handler: (ctx, { ref, state }) => convexStore(ctx.db).write(ref, state),
});

/** `limit` from an action over the split store. */
export const limitWithoutTransaction = action({
  args: request,
  handler: (ctx, { name, now, ...options }) => {
    const store = {
      read: (ref) => ctx.runQuery(internal.limits.readState, { ref }),
      write: (ref, state) => ctx.runMutation(internal.limits.writeState, { ref, state }),
    };
    return new RateLimiter(store, LIMITS, { now: () => now }).limit(name, options);
  },
});
