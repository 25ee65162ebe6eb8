// The rate limits of the app, and the component-style functions over them: consume, check, read
// the value (for a UI that shows when the next action is allowed) and reset. Every decision reads
// and writes the `rateLimits` table inside the calling function's transaction.
import { v } from "convex/values";
import { HOUR, MINUTE, RateLimiter, convexStore, type RateLimitConfig } from "ratebound/convex";
import { mutation, query, type DatabaseReader } from "./_generated/server";

export const LIMITS = {
  // One message every ~6 s per user, up to 3 in quick succession.
  sendMessage: { kind: "token bucket", rate: 10, period: MINUTE, capacity: 3 },
  // 100 sign-ups an hour for the whole app.
  freeTrialSignUp: { kind: "fixed window", rate: 100, period: HOUR },
  // A global token budget, spread over 10 shards so that writers rarely collide.
  llmTokens: { kind: "token bucket", rate: 40000, period: MINUTE, shards: 10 },
} satisfies Record<string, RateLimitConfig>;

/** The limiter over this function's `ctx.db`: a mutation's writes, or a query's reads only. */
export const rateLimiter = (db: DatabaseReader) => new RateLimiter(convexStore(db), LIMITS);

const name = v.union(v.literal("sendMessage"), v.literal("freeTrialSignUp"), v.literal("llmTokens"));
const request = {
  name,
  key: v.optional(v.string()),
  count: v.optional(v.number()),
  reserve: v.optional(v.boolean()),
  throws: v.optional(v.boolean()),
};

/** Consumes tokens: `{ ok: true, retryAfter? }` or `{ ok: false, retryAfter }` (a ConvexError with `throws`). */
export const rateLimit = mutation({
  args: request,
  handler: (ctx, { name, ...options }) => rateLimiter(ctx.db).limit(name, options),
});

/** What `rateLimit` would answer now, without consuming anything. */
export const checkRateLimit = query({
  args: request,
  handler: (ctx, { name, ...options }) => rateLimiter(ctx.db).check(name, options),
});

/** The limit's value now, with its config, to project forward on the client with `calculateRateLimit`. */
export const getValue = query({
  args: { name, key: v.optional(v.string()), sampleShards: v.optional(v.number()) },
  handler: (ctx, { name, ...options }) => rateLimiter(ctx.db).getValue(name, options),
});

/** Makes the limit full again for `key`. */
export const resetRateLimit = mutation({
  args: { name, key: v.optional(v.string()) },
  handler: (ctx, { name, key }) => rateLimiter(ctx.db).reset(name, { key }),
});
