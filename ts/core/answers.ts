/**
 * What `limit`, `check`, `limitAll` and `checkAll` answer, by the options given: one generic
 * signature each (not overloads), so a subclass can override them with the same signature.
 * @module
 */
import type { GrantResult } from "./grant-handle.js";
import type { LimitOptions, Named } from "./options.js";
import type { Degraded } from "./store-call.js";
import type { RateLimitFigures, RateLimitResult } from "./types.js";

/**
 * A call admitted without any decision: the store failed and the limit's `onStoreError` is
 * `"open"`. It has no figures (nothing was decided). A memory fallback's answer is a decision:
 * it has figures (and `degraded` too).
 */
export type OpenAdmission = Degraded & { ok: true; retryAfter?: undefined; figures?: undefined };

/**
 * A `limit`/`check` answer with `figures: true`: a decision always carries its figures, so
 * `figures` is there whenever the result is not an {@link OpenAdmission}. Narrow with `!ok`
 * (a refusal is always decided), `figures !== undefined`, or `degraded !== undefined` first.
 *
 * @example
 * const status = await limiter.limit("api", { key, figures: true });
 * if (!status.ok) return status.figures.retryAfter; // a refusal's figures are always there
 */
export type FiguredResult = (RateLimitResult & Partial<Degraded> & { figures: RateLimitFigures }) | OpenAdmission;

/** A `limitAll`/`checkAll` answer with `figures: true`: each limit's figures, in the order asked, unless admitted open. */
export type FiguredBatchResult = (RateLimitResult & Partial<Degraded> & { figures: RateLimitFigures[] }) | OpenAdmission;

/** The options `limit` and `check` take: {@link LimitOptions}. */
export type LimitCallOptions = LimitOptions;

/**
 * The name a `limit`/`check` with options `Options` takes: one of the limits, or any name with an inline `config`.
 */
export type LimitName<Limits, Options> = Options extends { config: object } ? string : Named<Limits>;

/** What `limit` answers for `Options`: a {@link GrantResult} with `grant: true`, figures with `figures: true`. */
export type LimitAnswer<Options> = Options extends { grant: true }
  ? GrantResult
  : Options extends { figures: true }
    ? FiguredResult
    : RateLimitResult & { figures?: RateLimitFigures };

/** What `check` answers for `Options` (it takes no `grant`). */
export type CheckAnswer<Options> = Options extends { figures: true } ? FiguredResult : RateLimitResult & { figures?: RateLimitFigures };

/** The options of `limitAll` and `checkAll`. */
export interface BatchOptions {
  /** Throw a `RateLimitError` instead of returning `{ ok: false }`. */
  throws?: boolean;
  /** Answer with each limit's figures, in the order asked. */
  figures?: boolean;
}

/** What `limitAll`/`checkAll` answer for `Options`. */
export type BatchAnswerOf<Options> = Options extends { figures: true } ? FiguredBatchResult : RateLimitResult & { figures?: RateLimitFigures[] };
