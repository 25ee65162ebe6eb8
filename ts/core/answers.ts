/**
 * What `limit`, `check`, `limitAll` and `checkAll` answer, by the options given: one generic
 * signature each (not overloads), so a subclass can override them with the same signature.
 * @module
 */
import type { GrantResult } from "./grant-handle.js";
import type { ConcurrencyValue, Lease, LeaseResult } from "./leasing.js";
import type { AcquireAnswer } from "./acquire.js";
import type { LimitOptions, Named, StoreErrorPolicy } from "./options.js";
import type { Degraded } from "./store-call.js";
import type { RateLimitFigures, RateLimitResult, RateLimitValue } from "./types.js";

/**
 * A call admitted without any decision: the store failed and the limit's `onStoreError` is
 * `"open"`. It has no figures (nothing was decided). A memory fallback's answer is a decision:
 * it has figures (and `degraded` too).
 */
export type OpenAdmission = Degraded & { ok: true; retryAfter?: undefined; figures?: undefined };

/** A decision with its figures: every answer but an {@link OpenAdmission} (a memory fallback's too). */
export type DecidedWithFigures = RateLimitResult & Partial<Degraded> & { figures: RateLimitFigures };

/**
 * A `limit`/`check` answer with `figures: true`: a decision always carries its figures, so
 * `figures` is there whenever the result is not an {@link OpenAdmission}. `MayOpen` is `false`
 * when the limit cannot be `"open"` (its own `onStoreError`, or the limiter's, declares another
 * policy): then `figures` is always there. Else narrow with `!ok` (a refusal is always decided)
 * or `figures !== undefined` first.
 *
 * @example
 * const status = await limiter.limit("api", { key, figures: true });
 * if (!status.ok) return status.figures.retryAfter; // a refusal's figures are always there
 */
export type FiguredResult<MayOpen extends boolean = true> = MayOpen extends false ? DecidedWithFigures : DecidedWithFigures | OpenAdmission;

/** Whether a policy may be `"open"`: only `"open"` itself (or a policy not known when compiling). */
type Opens<Policy> = [Policy] extends [never] ? true : "open" extends Policy ? true : false;

/**
 * Whether a call may be admitted `"open"` (undecided, without figures), as far as the types know:
 * the policy of the call's inline config, else of its named limit, else the limiter's `Default`.
 * A config whose type only says `onStoreError?: StoreErrorPolicy` may be open.
 */
export type MayOpen<Limits, Name, Options, Default> = Options extends { config: infer Config }
  ? "onStoreError" extends keyof Config
    ? Opens<Config["onStoreError" & keyof Config]>
    : Opens<Default>
  : Name extends keyof Limits
    ? "onStoreError" extends keyof Limits[Name]
      ? Opens<Limits[Name]["onStoreError" & keyof Limits[Name]]>
      : Opens<Default>
    : true;

/** A `limitAll`/`checkAll` answer with `figures: true`: each limit's figures, in the order asked, unless admitted open. */
export type FiguredBatchResult = (RateLimitResult & Partial<Degraded> & { figures: RateLimitFigures[] }) | OpenAdmission;

/** The options `limit` and `check` take: {@link LimitOptions}. */
export type LimitCallOptions = LimitOptions;

/**
 * The name a `limit`/`check` with options `Options` takes: one of the limits, or any name with an inline `config`.
 */
export type LimitName<Limits, Options> = Options extends { config: object } ? string : Named<Limits>;

/**
 * What `limit` answers for `Options`: a {@link GrantResult} with `grant: true`, figures with
 * `figures: true` (see {@link FiguredResult}; `Open` is whether the call may be admitted open).
 */
export type LimitAnswer<Options, Open extends boolean = true> = Options extends { grant: true }
  ? GrantResult
  : Options extends { figures: true }
    ? FiguredResult<Open>
    : RateLimitResult & { figures?: RateLimitFigures };

/** What `check` answers for `Options` (it takes no `grant`). */
export type CheckAnswer<Options, Open extends boolean = true> = Options extends { figures: true } ? FiguredResult<Open> : RateLimitResult & { figures?: RateLimitFigures };

/** The options of `limitAll` and `checkAll`. */
export interface BatchOptions {
  /** Throw a `RateLimitError` instead of returning `{ ok: false }`. */
  throws?: boolean;
  /** Answer with each limit's figures, in the order asked. */
  figures?: boolean;
  /** Decide every limit of the batch as a dry run: never refused, the would-be answer in `dryRun`. */
  dryRun?: boolean;
}

/** What `limitAll`/`checkAll` answer for `Options`. */
export type BatchAnswerOf<Options> = Options extends { figures: true } ? FiguredBatchResult : RateLimitResult & { figures?: RateLimitFigures[] };

/**
 * What `limiter.limit(name, options)` answers, for a limiter of `Limits` whose `onStoreError` is
 * `Policy`: the return type of `limit`'s one signature, to repeat in a subclass that overrides it.
 *
 * @example
 * class Counted<L extends Record<string, LimitConfig>> extends RateLimiter<L> {
 *   override async limit<const O extends LimitCallOptions = {}, const N extends LimitName<L, O> = LimitName<L, O>>(name: N, options?: O): Promise<LimitResultOf<L, N, O>> {
 *     return super.limit(name, options);
 *   }
 * }
 */
export type LimitResultOf<Limits, Name, Options, Policy = StoreErrorPolicy> = Options extends { config: object }
  ? LimitAnswer<Options, MayOpen<Limits, Name, Options, Policy>>
  : Name extends ConcurrencyNames<Limits>
    ? LeaseResult
    : LimitAnswer<Options, MayOpen<Limits, Name, Options, Policy>>;

/**
 * What `limiter.acquire(name, options)` answers: `{ waited, lease }` on a concurrency limit, else
 * `{ waited }` (with `grant` when asked).
 */
export type AcquireResultOf<Limits, Name, Options> = Options extends { config: object }
  ? AcquireAnswer<Options>
  : Name extends ConcurrencyNames<Limits>
    ? { waited: number; lease: Lease }
    : AcquireAnswer<Options>;

/** What `limiter.getValue(name, options)` answers: `{ held, max, ts }` on a concurrency limit, else the limit's value. */
export type ValueResultOf<Limits, Name, Options> = Options extends { config: object } ? RateLimitValue : Name extends ConcurrencyNames<Limits> ? ConcurrencyValue : RateLimitValue;

/**
 * The names of `Limits`' concurrency limits. (The answer types test a call's name against it,
 * never `Limits` itself, so that a limiter of some limits stays assignable to one of wider ones.)
 */
export type ConcurrencyNames<Limits> = { [K in keyof Limits]: Limits[K] extends { kind: "concurrency" } ? K : never }[keyof Limits];

/** What `limiter.check(name, options)` answers: as {@link LimitResultOf}, for `check`. */
export type CheckResultOf<Limits, Name, Options, Policy = StoreErrorPolicy> = CheckAnswer<Options, MayOpen<Limits, Name, Options, Policy>>;
