// Asynchronous limits (applyUpdates: "asynchronously") through ratebound's client. A burst is N
// calls inside one mutation: each decides on the mutation's stale snapshot, which holds none of the
// burst's own queued updates, so the N calls are exactly N callers racing on one snapshot.
import { v } from "convex/values";
import { HOUR, RateLimiter } from "ratebound/convex-component";
import { components } from "./_generated/api.js";
import { mutation, query } from "./_generated/server.js";

const start = Date.UTC(2026, 0, 1);
/** 10 tokens an hour, for both algorithms, queued or transactional. */
const limitOf = (kind, applyUpdates) => ({
  kind,
  rate: 10,
  period: HOUR,
  ...(kind === "fixed window" ? { start } : {}),
  ...(applyUpdates ? { applyUpdates } : {}),
});
export const LIMITS = {
  queuedBucket: limitOf("token bucket", "asynchronously"),
  queuedWindow: limitOf("fixed window", "asynchronously"),
  exactBucket: limitOf("token bucket"),
  exactWindow: limitOf("fixed window"),
  cappedBucket: limitOf("token bucket", "asynchronously"),
  cappedWindow: limitOf("fixed window", "asynchronously"),
};
/** The capped limits decide on the fast path only with 4 tokens to spare. */
export const HEADROOM = 4;
/** For the overdraft grid: `headroom<H><Kind>` has headroom H. */
export const GRID_HEADROOMS = [0, 2, 4];
const headroom = { cappedBucket: HEADROOM, cappedWindow: HEADROOM };
for (const tokens of GRID_HEADROOMS) {
  for (const [kind, suffix] of [["token bucket", "Bucket"], ["fixed window", "Window"]]) {
    LIMITS[`headroom${tokens}${suffix}`] = limitOf(kind, "asynchronously");
    headroom[`headroom${tokens}${suffix}`] = tokens;
  }
}
const limiter = new RateLimiter(components.rateLimiter, LIMITS, { headroom });

const limitName = v.union(...Object.keys(LIMITS).map((name) => v.literal(name)));

/** `callers` calls of `count` tokens racing on one snapshot; their results, in order. */
export const burst = mutation({
  args: { name: limitName, callers: v.number(), count: v.optional(v.number()), key: v.optional(v.string()) },
  handler: async (ctx, { name, callers, count, key }) => {
    const results = [];
    for (let i = 0; i < callers; i++) results.push(await limiter.limit(ctx, name, { key, count }));
    return results;
  },
});

/** One call, in a mutation of its own. */
export const limit = mutation({
  args: { name: limitName, count: v.optional(v.number()), key: v.optional(v.string()), throws: v.optional(v.boolean()) },
  handler: (ctx, { name, ...options }) => limiter.limit(ctx, name, options),
});

/** `check` in a query. */
export const check = query({
  args: { name: limitName, count: v.optional(v.number()), key: v.optional(v.string()) },
  handler: (ctx, { name, ...options }) => limiter.check(ctx, name, options),
});

/** `getValue` in a query. */
export const getValue = query({
  args: { name: limitName, key: v.optional(v.string()) },
  handler: (ctx, { name, key }) => limiter.getValue(ctx, name, { key }),
});

/** `reset` in a mutation: queued for an asynchronous limit. */
export const reset = mutation({
  args: { name: limitName, key: v.optional(v.string()) },
  handler: (ctx, { name, key }) => limiter.reset(ctx, name, { key }),
});
