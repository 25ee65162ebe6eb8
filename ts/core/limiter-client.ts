/**
 * The limiter's methods answered somewhere else: the shape a Durable
 * Object's `rateLimiterClient` (`ts/stores/durable-object.ts`) returns and
 * `ratebound/http`'s guards take beside a `RateLimiter`. Defined here, below
 * both, so that neither imports the other.
 * @module
 */
import type { GrantResult } from "./grant-handle.js";
import type { BatchRequest, GetValueOptions, LimitOptions, ResetOptions, SettleOptions } from "./options.js";
import type { ConcurrencyConfig, GrantData, RateLimitConfig, RateLimitResult, RateLimitValue, SettleResult } from "./types.js";
import type { StoredLimit, StoredLimitOptions } from "./stored-limits.js";

/** A limit's name among `Limits`. */
type Named<Limits> = Extract<keyof Limits, string>;

/** A call's own config, for a limit that is not one of `Limits`. */
export type InlineConfig = { config: RateLimitConfig };

/** The limiter's methods, answered by one Durable Object: see `rateLimiterClient` in `ratebound/durable-object`. */
export interface RateLimiterClient<Limits extends Record<string, RateLimitConfig | ConcurrencyConfig>> {
  /** As `RateLimiter.limit` with `grant: true`: the handle settles in the object. */
  limit(name: Named<Limits>, options: LimitOptions & { grant: true }): Promise<GrantResult>;
  limit(name: string, options: LimitOptions & InlineConfig & { grant: true }): Promise<GrantResult>;
  /** Consumes tokens in the object: as `RateLimiter.limit`; `throws` throws a `RateLimitError` here. */
  limit(name: string, options: LimitOptions & InlineConfig): Promise<RateLimitResult>;
  // Last, so that a name that is neither one of the limits nor inline fails here, naming it and the limits.
  limit(name: Named<Limits>, options?: LimitOptions): Promise<RateLimitResult>;
  /** As `RateLimiter.check`: what `limit` would answer, writing nothing. */
  check(name: string, options: LimitOptions & InlineConfig): Promise<RateLimitResult>;
  // Last, so that a name that is neither one of the limits nor inline fails here, naming it and the limits.
  check(name: Named<Limits>, options?: LimitOptions): Promise<RateLimitResult>;
  /** As `RateLimiter.limitAll`: several limits of this object, all or none. */
  limitAll(requests: ReadonlyArray<BatchRequest<Named<Limits>> | (BatchRequest & InlineConfig)>, options?: { throws?: boolean; figures?: boolean; dryRun?: boolean }): Promise<RateLimitResult>;
  /** As `RateLimiter.checkAll`. */
  checkAll(requests: ReadonlyArray<BatchRequest<Named<Limits>> | (BatchRequest & InlineConfig)>, options?: { throws?: boolean; dryRun?: boolean }): Promise<RateLimitResult>;
  /** As `RateLimiter.getValue`. */
  getValue(name: string, options: GetValueOptions & InlineConfig): Promise<RateLimitValue>;
  // Last, so that a name that is neither one of the limits nor inline fails here, naming it and the limits.
  getValue(name: Named<Limits>, options?: GetValueOptions): Promise<RateLimitValue>;
  /** As `RateLimiter.reset`. */
  reset(name: string, options: ResetOptions & InlineConfig): Promise<void>;
  // Last, so that a name that is neither one of the limits nor inline fails here, naming it and the limits.
  reset(name: Named<Limits>, options?: ResetOptions): Promise<void>;
  /** As `RateLimiter.settle`: settles a grant's data in the object (from an alarm, a queue…). */
  settle(data: GrantData, actual: number, options?: SettleOptions): Promise<SettleResult>;
  /** As `RateLimiter.setLimit`: stores the limit in the object (for its keys, or its whole name). */
  setLimit(name: Named<Limits>, config: RateLimitConfig, options?: StoredLimitOptions): Promise<void>;
  /** As `RateLimiter.getLimit`. */
  getLimit(name: Named<Limits>, options?: StoredLimitOptions): Promise<StoredLimit>;
  /** As `RateLimiter.deleteLimit`. */
  deleteLimit(name: Named<Limits>, options?: StoredLimitOptions): Promise<void>;
}
