/**
 * The package's public shapes, each defined once: states and where they
 * live, configs, results, grants, and the store a host supplies.
 * @module
 */

/**
 * The whole state of one shard of one limit.
 *
 * Token bucket: `value` tokens were available at `ts`. Fixed window: `value`
 * tokens were available in the window that starts at `ts`. `value` is
 * negative while reserved tokens are owed. Both are finite; `ts` is in ms.
 */
export interface RateLimitState {
  /** Tokens available (negative: reserved debt). */
  value: number;
  /** Milliseconds since the epoch. */
  ts: number;
}

/**
 * Where one shard's state lives: the limit's name, its key (absent for the
 * shared state) and the shard. Shards from 1024 on hold the library's own
 * records (refund ledgers, grants' records) beside the states they belong
 * to: a store keeps them like any state, and no call can reach them.
 */
export type StateRef = { name: string; key?: string; shard: number };

/**
 * What a write knows besides the state: the call's clock (`now`, ms) and the instant (`fullAt`, ms)
 * from which the state is full again, so that deleting it changes no decision (`Infinity`: never,
 * as for a fixed window with a random start). Stores may use it for a TTL or to make room.
 */
export type WriteInfo = { now: number; fullAt: number };

/** The literal `"token bucket"`. */
export type TokenBucketKind = "token bucket";

/** The literal `"fixed window"`. */
export type FixedWindowKind = "fixed window";

/** The literal `"sliding window"`. */
export type SlidingWindowKind = "sliding window";

/** Tokens flow in continuously, `rate` per `period` ms, up to `capacity`. */
export interface TokenBucketConfig {
  kind: TokenBucketKind;
  /** Tokens added per period. */
  rate: number;
  /** The period in milliseconds. */
  period: number;
  /** The most tokens that can accumulate (default: `rate`). */
  capacity?: number;
  /** The most tokens that may be reserved ahead (default: unlimited; 0: none). */
  maxReserved?: number;
  /** How many shards to split the capacity across, 1 to 1024 (default 1). */
  shards?: number;
  /** Token buckets have no windows. */
  start?: null;
}

/**
 * A fixed window of calendar time (UTC): a day, a week, a month or a year, starting at the
 * `start` anchor's time of day, weekday, day of the month (clamped to the month's last day) or
 * date (Feb 29: Feb 28 in common years). Without `start`: midnight, Monday, the 1st, Jan 1.
 */
export type CalendarPeriod = "day" | "week" | "month" | "year";

/**
 * At most `max` slots held at once, each by a lease that ends when it is released or after
 * `lease` ms (unless extended): a concurrency limit (`limit` answers a lease; see
 * docs/concurrency.md).
 *
 * @example
 * const exports: ConcurrencyConfig = { kind: "concurrency", max: 4, lease: 30_000 };
 */
export interface ConcurrencyConfig {
  kind: "concurrency";
  /** How many slots may be held at once: an integer from 1 to 64. */
  max: number;
  /** How long a lease holds its slots unless released or extended, in ms. */
  lease: number;
}

/** `rate` tokens arrive at the start of every `period` ms window, up to `capacity`. */
export interface FixedWindowConfig {
  kind: FixedWindowKind;
  /** Tokens added per window. */
  rate: number;
  /**
   * The window length in milliseconds, or a calendar period (`"day"`, `"week"`, `"month"`,
   * `"year"`, UTC: see {@link CalendarPeriod}; unsharded only).
   */
  period: number | CalendarPeriod;
  /** The most tokens that can accumulate (default: `rate`). */
  capacity?: number;
  /** The most tokens that may be reserved ahead (default: unlimited; 0: none). */
  maxReserved?: number;
  /** How many shards to split the capacity across, 1 to 1024 (default 1). */
  shards?: number;
  /**
   * Windows start at `start + n × period` (ms since the epoch); random per key when absent. For a
   * calendar period, the anchor its windows start from (default: the Unix epoch, Monday
   * 1970-01-05 for weeks); never random.
   */
  start?: number;
}

/**
 * `@upstash/ratelimit`'s sliding window: at most `rate` tokens in any `period`, counted as the
 * current window's tokens plus the previous window's, weighted by the part of it the sliding
 * period still covers (rounded down). Windows are aligned to the epoch. It takes no `capacity`,
 * `maxReserved`, `shards` or `start`, and never goes into debt: `reserve: true` is decided as
 * without, as with `maxReserved: 0` (see docs/concepts.md).
 */
export interface SlidingWindowConfig {
  kind: SlidingWindowKind;
  /** The most tokens in any sliding period. */
  rate: number;
  /** The window length in milliseconds. */
  period: number;
  /** A sliding window holds `rate`: no other capacity (refused with INVALID_CONFIG). */
  capacity?: never;
  /** A sliding window never goes into debt (refused with INVALID_CONFIG). */
  maxReserved?: never;
  /** A sliding window's two states are its two windows (refused with INVALID_CONFIG). */
  shards?: never;
  /** Its windows are aligned to the epoch (refused with INVALID_CONFIG). */
  start?: never;
}

/** A rate limit's configuration. */
export type RateLimitConfig = TokenBucketConfig | FixedWindowConfig | SlidingWindowConfig;

/**
 * What enforcing would have answered, on the answer of a dry run (a limit or call with `dryRun: true`):
 * `{ ok: false, retryAfter }` is a would-be refusal (nothing was charged), `{ ok: true }` a grant
 * (charged as usual).
 */
export interface DryRunReport {
  /** Whether enforcing would have granted. */
  ok: boolean;
  /** The wait enforcing would have answered, in ms: a would-be refusal's, or a reservation's. */
  retryAfter?: number;
}

/**
 * The answer to `limit` and `check` (and, for a whole batch, `limitAll` and `checkAll`). A dry
 * run is `ok: true` with `dryRun` (a batch that mixes dry-run and enforced limits may be refused by
 * its enforced ones, and carries the dry-run limits' report too).
 */
export type RateLimitResult = { ok: true; retryAfter?: number; dryRun?: DryRunReport } | { ok: false; retryAfter: number; dryRun?: DryRunReport };

/** The state after a transition, and how long to wait if it went negative. */
export interface RateLimitTransition {
  /** Tokens left after consuming `count` (negative: short by that much). */
  value: number;
  /** The new `ts`: `now` for a token bucket, the current window's start for a fixed window. */
  ts: number;
  /** When `value < 0`: ms from `now` until enough tokens will have arrived. */
  retryAfter?: number;
  /** Fixed window only: the `ts` of the state it started from. */
  windowStart?: number;
}

/** `getValue`'s report: `calculateRateLimit({ value, ts }, config, now)` projects the whole limit forward. */
export interface RateLimitValue {
  /** Tokens available in the whole limit at `ts` (negative: reserved debt; a sliding window: what it grants at `ts`). */
  value: number;
  /** When `value` was true, in ms since the epoch. */
  ts: number;
  /** The best sampled shard. */
  shard: number;
  /** The limit's config with `capacity`, `shards` and a fixed window's `start` filled in. */
  config: RateLimitConfig;
}

/**
 * A limit's figures at one instant, for headers.
 *
 * Whole-limit figures: for a sharded limit they rest on the shards read
 * (by the decision, or `getValue`'s sample), so they are an estimate, and
 * `sampled` says of how many.
 */
export interface RateLimitFigures {
  /** The quota `q`: the most tokens the limit holds (its capacity). */
  limit: number;
  /** `r`: whole tokens available now, never below 0. */
  remaining: number;
  /** draft-10's `t`: whole seconds until the limit is full again (token bucket) or its current window ends (fixed and sliding window), rounded up; 0 when full. */
  reset: number;
  /** `w`: the period in whole seconds, rounded up. */
  window: number;
  /** `Retry-After`: whole seconds until a refused request can succeed, rounded up (never early); absent when nothing was refused. */
  retryAfter?: number;
  /** How many shards the figures rest on (the limit's shard count when all were read). */
  sampled: number;
  /**
   * draft-11's `t`, the effective window: whole seconds within which no more than `remaining`
   * tokens can be spent, rounded up. A token bucket: until its next whole token; a fixed window:
   * until its window ends. Never more than `retryAfter`.
   */
  effectiveWindow: number;
}

/** What one shard gave to a grant. */
export interface GrantShard {
  /** The shard. */
  shard: number;
  /** The tokens it gave. */
  count: number;
  /** The shard's value right after the charge. */
  value: number;
  /** The shard's `ts` right after the charge. */
  ts: number;
  /** The shard's refund ledger when the charge was made: all tokens settles had given back to it. */
  refunded: number;
}

/**
 * A grant's serialisable form: settle it in another request, a queue
 * consumer or a scheduled function with `limiter.settle(data, actual)`.
 */
export interface GrantData {
  /** The limit's name. */
  name: string;
  /** The key, if any. */
  key?: string;
  /** Tells this grant from others of the same key (hex: the charge's ms, then 64 random bits); it also names the grant's record. */
  id: string;
  /** The tokens charged (the estimate). */
  count: number;
  /** The `now` of the charge, in ms. */
  chargedAt: number;
  /** The shards the tokens came from (one, or two for a sharded request served by both). */
  shards: GrantShard[];
}

/** What a settle did. */
export interface SettleResult {
  /** Tokens given back (unused tokens the refund rule allowed). */
  refunded: number;
  /** Tokens taken beyond the estimate. */
  charged: number;
  /** Tokens used beyond the estimate that `maxReserved` left untaken. */
  unpaid: number;
  /** When the extra left the limit in debt: ms until it is paid off. */
  retryAfter?: number;
}

/** Clock and randomness of a `RateLimiter`, injectable for deterministic tests and replays. */
export interface RateLimiterOptions {
  /** Milliseconds since the epoch; default `Date.now`. */
  now?: () => number;
  /** Numbers in `[0, 1)`; default: the runtime's cryptographic source, drawn inside each call. */
  random?: () => number;
}

/** Options of `decideRateLimit`. */
export interface DecideOptions {
  /** Tokens to take (default 1). */
  count?: number;
  /** Reserve instead of being refused. */
  reserve?: boolean;
  /** The limit's name, for error messages (default "preview"). */
  name?: string;
}

/** What `decideRateLimit` answers: the decision, and the state a grant would write. */
export type RateLimitDecision = RateLimitResult & { value: number; ts: number };

/**
 * One decision a store runs next to its data (see {@link RateLimitStore.decide}):
 * the plan's numbers, per shard, as the core made them.
 */
export interface RemoteItem {
  /** Indexes into {@link RemoteBatch.refs}: the shard it reads, or two for a sharded limit. */
  reads: number[];
  /** 0 token bucket, 1 fixed window (a sliding window is never sent: the driver decides it in the store's transaction). */
  kind: 0 | 1;
  /** Tokens per period, per shard. */
  rate: number;
  /** The period in ms (a calendar period's mean length, which windows passed are counted in). */
  period: number;
  /**
   * A calendar period's window that holds `now`, as the core computed it, and the longest window
   * of its unit (waits and fills past `end` are counted in those); `null` for a period in ms.
   */
  window: { start: number; end: number; longest: number } | null;
  /** The capacity per shard. */
  capacity: number;
  /** `maxReserved` per shard; `null`: unlimited, 0: no reservation at all. */
  maxReserved: number | null;
  /** The limit's shard count. */
  shards: number;
  /** A fixed window's `start`, or `null`. */
  start: number | null;
  /** Tokens asked. */
  count: number;
  /** Whether it reserves. */
  reserve: boolean;
  /** `limit` (true) or `check`. */
  write: boolean;
  /** The call's clock, ms. */
  now: number;
  /** Per read: the state it starts from when it has none. */
  fresh: RateLimitState[];
}

/** Decisions a store runs next to its data, atomically. */
export interface RemoteBatch {
  /** Every state the batch reads, each once. */
  refs: StateRef[];
  /** The decisions, in order: each sees the states the earlier ones left. */
  items: RemoteItem[];
  /** `limitAll`: every item is granted and written, or none is written. */
  all: boolean;
  /**
   * The records of stored limits the items were planned on (`null`: none), for the last
   * `limits.length` refs (which no item reads): when any of those refs holds another state, the
   * store decides and writes nothing and answers `replan: true` with what they hold. Sent only to
   * a store with `checksStoredLimits: true`.
   */
  limits?: (RateLimitState | null)[];
}

/** What a store that decided next to its data answers. */
export interface RemoteAnswer {
  /** Per ref: what it held when read (`null`: nothing); a value that is not a state, as it is. */
  stored: unknown[];
  /** Per item: whether its grant was written. */
  wrote: boolean[];
  /**
   * Optional: how many calls the store decided in the same round trip, this batch's among them
   * (a store that groups concurrent batches into one script call says so); reported as
   * `batchSize` to the limiter's `onDecision` hook. Absent: the batch went alone.
   */
  batchSize?: number;
  /** The records of {@link RemoteBatch.limits} differed from the batch's: nothing was decided or written. */
  replan?: boolean;
}

/**
 * The host's persistence. Either method may answer directly or with a Promise.
 * `write(ref, null)` deletes. A method that throws or rejects makes the call fail (fail closed).
 *
 * @example
 * const store: RateLimitStore = {
 *   read: (ref) => states.get(JSON.stringify(ref)) ?? null,
 *   write: (ref, state) => void (state === null ? states.delete(JSON.stringify(ref)) : states.set(JSON.stringify(ref), state)),
 * };
 */
export interface RateLimitStore {
  /** The state at `ref`, or `null`/`undefined` when there is none; `info.now` is the call's clock. */
  read(ref: StateRef, info?: { now: number }): RateLimitState | null | undefined | Promise<RateLimitState | null | undefined>;
  /** Replaces the state at `ref` (`null` deletes it); `info` gives the call's clock and when the state is full again. */
  write(ref: StateRef, state: RateLimitState | null, info?: WriteInfo): void | Promise<void>;
  /**
   * Optional: reads several refs at once (one `MGET`, one `SELECT … IN`, one `getMany`).
   * Answers in the order asked.
   */
  readMany?(refs: StateRef[], info?: { now: number }): Array<RateLimitState | null | undefined> | Promise<Array<RateLimitState | null | undefined>>;
  /**
   * Optional: how the host makes one limiter call a transaction. When present, every call
   * (`limit`, `check`, `limitAll`, `checkAll`, `getValue`, `reset`, a grant, a settle) runs as
   * `transaction(body)`: the host hands `body` a store for one attempt and commits what
   * `body` wrote, atomically, when it resolves; an optimistic host may run `body` again on
   * a conflict. When `body` rejects, nothing is committed and the call rejects.
   */
  transaction?<T>(body: (store: RateLimitStore) => Promise<T>): Promise<T>;
  /**
   * Optional: runs `limit`, `check`, `limitAll` and `checkAll` next to the data, in one round
   * trip (a Redis script, a PostgreSQL statement), as `docs/internals.md` specifies. The
   * limiter replays the decision on what the store read, answers with the core's decision, and
   * fails closed when the store's writes differ from it.
   */
  decide?(batch: RemoteBatch): Promise<RemoteAnswer>;
  /**
   * Optional: `decide` honours {@link RemoteBatch.limits}. Without it, a limiter made with
   * `storedLimits: true` runs its calls as transactions of reads and writes instead.
   */
  readonly checksStoredLimits?: boolean;
}
