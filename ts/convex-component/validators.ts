/**
 * The validators of `@convex-dev/rate-limiter` 0.3, field for field: the
 * component's functions take and return exactly what the reference's take and
 * return, so existing calls (and the rows they wrote) keep working.
 * @module
 */
import { v, type Infer } from "convex/values";

/** A token bucket: `rate` tokens per `period` ms, up to `capacity`. */
export const tokenBucketValidator = v.object({
  kind: v.literal("token bucket"),
  rate: v.number(),
  period: v.number(),
  capacity: v.optional(v.number()),
  maxReserved: v.optional(v.number()),
  shards: v.optional(v.number()),
  start: v.optional(v.null()),
});

/** A fixed window: `rate` tokens at the start of each `period` ms window, up to `capacity`. */
export const fixedWindowValidator = v.object({
  kind: v.literal("fixed window"),
  rate: v.number(),
  period: v.number(),
  capacity: v.optional(v.number()),
  maxReserved: v.optional(v.number()),
  shards: v.optional(v.number()),
  start: v.optional(v.number()),
});

/** Either kind of limit. */
export const configValidator = v.union(tokenBucketValidator, fixedWindowValidator);

/** A limit's config, as the reference types it. */
export type RateLimitConfig = Infer<typeof configValidator>;

/** The arguments of `rateLimit` and `checkRateLimit`. */
export const rateLimitArgs = {
  name: v.string(),
  key: v.optional(v.string()),
  count: v.optional(v.number()),
  reserve: v.optional(v.boolean()),
  throws: v.optional(v.boolean()),
  config: configValidator,
};

/** What `limit` and `check` are asked, as the reference types it. */
export type RateLimitArgs = {
  /** The name of the rate limit. */
  name: string;
  /** Whose limit; omit for the limit's one shared state. */
  key?: string;
  /** Tokens to consume, a finite number `>= 0`; default 1. */
  count?: number;
  /** Go into debt instead of being refused, and get `retryAfter` for when to run. */
  reserve?: boolean;
  /** Throw a `ConvexError` `{ kind: "RateLimited", name, retryAfter }` instead of returning `{ ok: false }`. */
  throws?: boolean;
  /** The limit's config. */
  config: RateLimitConfig;
};

/** `{ ok: true, retryAfter? }` (retryAfter when reserved) or `{ ok: false, retryAfter }`. */
export const rateLimitReturns = v.union(
  v.object({ ok: v.literal(true), retryAfter: v.optional(v.number()) }),
  v.object({ ok: v.literal(false), retryAfter: v.number() }),
);

/** The answer of `limit` and `check`. */
export type RateLimitReturns = Infer<typeof rateLimitReturns>;

/** The `data` of the `ConvexError` a refusal with `throws: true` raises. */
export type RateLimitError = { kind: "RateLimited"; name: string; retryAfter: number };

/** The arguments of a `hookAPI` query, as the browser sends them. */
export const getValueArgs = v.object({
  name: v.optional(v.string()),
  key: v.optional(v.string()),
  sampleShards: v.optional(v.number()),
  config: v.optional(configValidator),
});

/** What `getValue` answers: a state to project forward with `calculateRateLimit`. */
export const getValueReturns = v.object({
  value: v.number(),
  ts: v.number(),
  shard: v.number(),
  config: configValidator,
});

/** The answer of `getValue`. */
export type GetValueReturns = Infer<typeof getValueReturns>;

/** One limit of a `rateLimitAll` / `checkRateLimitAll` batch (ratebound's addition). */
export const batchItemValidator = v.object({
  name: v.string(),
  key: v.optional(v.string()),
  count: v.optional(v.number()),
  reserve: v.optional(v.boolean()),
  config: configValidator,
});

/** The arguments of `rateLimitAll` and `checkRateLimitAll`. */
export const rateLimitAllArgs = {
  requests: v.array(batchItemValidator),
  throws: v.optional(v.boolean()),
};
