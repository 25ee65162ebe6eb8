/**
 * The validators of `@convex-dev/rate-limiter` 0.4, field for field: the
 * component's functions take and return exactly what the reference's take and
 * return, so existing calls (and the rows they wrote) keep working.
 * @module
 */
import { v, type Infer } from "convex/values";

/**
 * How a limit's consumption is stored (0.4): `"transactionally"` (the default) in the
 * caller's mutation, conflicting with concurrent callers of the same key; or
 * `"asynchronously"`: checked against a stale snapshot (no conflict) and queued
 * in `pendingUpdates` for the worker, so a concurrent burst can overdraw (docs/convex.md:
 * Asynchronous updates).
 */
export const applyUpdatesValidator = v.union(v.literal("transactionally"), v.literal("asynchronously"));

/** A token bucket: `rate` tokens per `period` ms, up to `capacity`. */
export const tokenBucketValidator = v.object({
  kind: v.literal("token bucket"),
  rate: v.number(),
  period: v.number(),
  capacity: v.optional(v.number()),
  maxReserved: v.optional(v.number()),
  shards: v.optional(v.number()),
  applyUpdates: v.optional(applyUpdatesValidator),
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
  applyUpdates: v.optional(applyUpdatesValidator),
  start: v.optional(v.number()),
});

/** Either kind of limit. */
export const configValidator = v.union(tokenBucketValidator, fixedWindowValidator);

/** Any config the validators accept (an asynchronous one may carry `shards`; the client refuses it). */
export type ValidatedConfig = Infer<typeof configValidator>;

/**
 * A limit's config, as the reference types it: a limit whose updates are
 * applied asynchronously can't be sharded (a type error, and the client's
 * runtime error `Rate limit NAME applies updates asynchronously and can't be sharded.`).
 */
export type RateLimitConfig =
  | (TokenBucketConfig & ShardedConfig)
  | (TokenBucketConfig & AsyncConfig)
  | (FixedWindowConfig & ShardedConfig)
  | (FixedWindowConfig & AsyncConfig);
type ShardedConfig = { shards?: number; applyUpdates?: "transactionally" };
type AsyncConfig = { applyUpdates?: "asynchronously"; shards?: never };
type TokenBucketConfig = { kind: "token bucket"; rate: number; period: number; capacity?: number; maxReserved?: number; start?: null };
type FixedWindowConfig = { kind: "fixed window"; rate: number; period: number; capacity?: number; maxReserved?: number; start?: number };

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
  config: ValidatedConfig;
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

/** The arguments of a `hookAPI` query (the browser's `useRateLimit` sends them). */
export type GetValueArgs = Infer<typeof getValueArgs>;

/**
 * The shard every asynchronously applied limit lives on: such limits are never
 * sharded, and the worker writes only this shard.
 */
export const SINGLETON_SHARD = 0;

/**
 * One queued update of an asynchronous limit, as `enqueueUpdates` takes it and
 * the `pendingUpdates` table stores it: a consumption of `count` tokens at `ts`
 * (the caller's clock, ms), or a reset of the limit's state.
 */
export const vPendingUpdate = v.union(
  v.object({
    kind: v.literal("consume"),
    name: v.string(),
    key: v.optional(v.string()),
    count: v.number(),
    config: configValidator,
    ts: v.number(),
  }),
  v.object({
    kind: v.literal("reset"),
    name: v.string(),
    key: v.optional(v.string()),
  }),
);

/** A queued update. */
export type PendingUpdate = Infer<typeof vPendingUpdate>;

/**
 * The config the core is given: the component's config without the fields
 * that only say how updates are stored (ratebound's core rejects unknown fields).
 *
 * @param config A config the validators accepted.
 * @returns The same limit, without `applyUpdates`.
 * @example
 * coreConfig({ kind: "token bucket", rate: 1, period: 1000, applyUpdates: "asynchronously" });
 * // { kind: "token bucket", rate: 1, period: 1000 }
 */
export function coreConfig<Config extends ValidatedConfig>(config: Config): WithoutApplyUpdates<Config> {
  const { applyUpdates: _, ...rest } = config;
  return rest as WithoutApplyUpdates<Config>;
}

/** A config type without `applyUpdates`, kind by kind. */
export type WithoutApplyUpdates<Config> = Config extends unknown ? Omit<Config, "applyUpdates"> : never;
