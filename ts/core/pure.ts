/**
 * The pure functions: the core's transition and decision on a state you
 * hold, a batch of transitions, and jitter.
 * @module
 */
import {
  CompiledConfig,
  calculateRateLimit as coreCalculateRateLimit,
  rateLimitFigures as coreRateLimitFigures,
  withJitter as coreWithJitter,
} from "../wasm/ratebound.js";
import type {
  DecideOptions,
  RateLimitConfig,
  RateLimitDecision,
  RateLimitFigures,
  RateLimitState,
  RateLimitTransition,
  RateLimitValue,
} from "../wasm/ratebound.js";
/** A config object's compiled form and the fields it was compiled from. */
type Compiled = { compiled: CompiledConfig; fields: unknown[]; fieldCount: number };

const CONFIG_FIELDS = ["kind", "rate", "period", "capacity", "maxReserved", "shards", "start"] as const;
const compiledConfigs = new WeakMap<object, Compiled>();

/**
 * The config compiled by the core: validated once per config object, then
 * reused while its fields are unchanged (a changed field compiles it again).
 */
function compiledFor(config: RateLimitConfig): CompiledConfig {
  if (typeof config !== "object" || config === null) return new CompiledConfig(config);
  const cached = compiledConfigs.get(config);
  const fields = config as Record<(typeof CONFIG_FIELDS)[number], unknown>;
  // A field added after first use (an unknown one, say) changes the count: compiled again, and refused.
  const fieldCount = Object.keys(config).length;
  if (
    cached !== undefined &&
    cached.fieldCount === fieldCount &&
    CONFIG_FIELDS.every((field, index) => Object.is(fields[field], cached.fields[index]))
  ) {
    return cached.compiled;
  }
  const compiled = new CompiledConfig(config);
  cached?.compiled.free();
  compiledConfigs.set(config, { compiled, fields: CONFIG_FIELDS.map((field) => fields[field]), fieldCount });
  return compiled;
}

/**
 * The pure transition: the state after `count` tokens are taken at `now`.
 * The same function the limiter decides with, so a preview cannot disagree with the server.
 * Each config object is validated on first use; later calls pass only numbers to the core.
 *
 * @param state The stored `{ value, ts }`, or `null` for a fresh (full) limit.
 * @param config The limit's config.
 * @param now Milliseconds since the epoch (default `Date.now()`).
 * @param count Tokens to take (default 0: just project).
 * @returns `{ value, ts, retryAfter?, windowStart? }`.
 * @example
 * calculateRateLimit({ value: 0, ts: 0 }, { kind: "token bucket", rate: 10, period: MINUTE }, 3000, 1)
 * // => { value: -0.5, ts: 3000, retryAfter: 3000 }
 */
export function calculateRateLimit(
  state: RateLimitState | null,
  config: RateLimitConfig,
  now: number = Date.now(),
  count: number = 0,
): RateLimitTransition {
  const plainNumbers =
    typeof now === "number" &&
    typeof count === "number" &&
    (state === null || (typeof state === "object" && typeof state.value === "number" && typeof state.ts === "number"));
  // Anything else gets the core's full checks and their errors.
  if (!plainNumbers) return coreCalculateRateLimit(state, config, now, count, undefined);
  const compiled = compiledFor(config);
  const value =
    state === null ? compiled.transition(false, 0, 0, now, count) : compiled.transition(true, state.value, state.ts, now, count);
  const transition: RateLimitTransition = { value, ts: compiled.ts };
  const { retryAfter, windowStart } = compiled;
  if (!Number.isNaN(retryAfter)) transition.retryAfter = retryAfter;
  if (!Number.isNaN(windowStart)) transition.windowStart = windowStart;
  return transition;
}

/**
 * The decision `limit` makes, on one state you hold: the core's validation
 * (with the server's messages), its rule for refusals and reservations, and
 * its `retryAfter`, which is checked to be enough. For previews and custom
 * hosts; a sharded limit's state is treated as a whole.
 *
 * @param state The stored `{ value, ts }`, or `null` for a fresh (full) limit.
 * @param config The limit's config.
 * @param now Milliseconds since the epoch (default `Date.now()`).
 * @param options `count` (default 1), `reserve`, and `name` for error messages.
 * @returns `{ ok, retryAfter?, value, ts }`: `value` and `ts` are the state a grant would write.
 * @example
 * decideRateLimit({ value: 0, ts: 0 }, { kind: "token bucket", rate: 10, period: SECOND }, 50)
 * // => { ok: false, retryAfter: 50, value: -0.5, ts: 50 }
 */
export function decideRateLimit(
  state: RateLimitState | null,
  config: RateLimitConfig,
  now: number = Date.now(),
  options?: DecideOptions,
): RateLimitDecision {
  return compiledFor(config).decide(state, now, options);
}

/**
 * Many transitions at once, for dashboards and previews of many keys: one
 * call into the core for the whole batch.
 *
 * @param states `value, ts` pairs, one per key; a `NaN` value means the key has no state yet.
 * @param config The limit's config, shared by every key.
 * @param now Milliseconds since the epoch (default `Date.now()`).
 * @param count Tokens to take from each (default 0: just project).
 * @returns `value, ts, retryAfter, windowStart` for each key, `NaN` where absent.
 * @example
 * const out = calculateRateLimits(new Float64Array([0, 0, NaN, 0]), config, 3000);
 * const [firstValue, firstTs, firstRetryAfter] = out; // the second key's answer starts at out[4]
 */
export function calculateRateLimits(
  states: Float64Array,
  config: RateLimitConfig,
  now: number = Date.now(),
  count: number = 0,
): Float64Array {
  return compiledFor(config).transitionMany(states, now, count);
}

/**
 * Adds a random delay to a `retryAfter`, so refused clients do not all come back at once.
 *
 * @param retryAfter Milliseconds until a retry can succeed.
 * @param maxJitter The largest delay to add, in milliseconds.
 * @param random Numbers in `[0, 1)` for replays and tests; default: the runtime's cryptographic source.
 * @returns `retryAfter` plus a uniformly random delay in `[0, maxJitter)`.
 * @example
 * setTimeout(retry, withJitter(status.retryAfter, SECOND));
 */
export function withJitter(retryAfter: number, maxJitter: number, random?: () => number): number {
  return coreWithJitter(retryAfter, maxJitter, random);
}


/**
 * The figures HTTP headers show, computed by the core: the quota (`limit`),
 * whole tokens `remaining`, whole seconds until `reset`, the `window` in whole
 * seconds, and, given a refusal's wait, `retryAfter` in whole seconds rounded
 * up (never early). For a sharded limit they rest on the shards `getValue`
 * sampled (`sampled`).
 *
 * @param value A `getValue` report.
 * @param now Milliseconds since the epoch (default `Date.now()`).
 * @param retryAfter A refusal's `retryAfter` in ms, when there was one.
 * @param sampled How many shards the report sampled (its `sampleShards`; default 1).
 * @returns `{ limit, remaining, reset, window, retryAfter?, sampled }`.
 * @example
 * const figures = rateLimitFigures(await limiter.getValue("api", { key }), Date.now());
 * response.headers.set("RateLimit", `"api";r=${figures.remaining};t=${figures.reset}`);
 */
export function rateLimitFigures(value: RateLimitValue, now: number = Date.now(), retryAfter?: number, sampled?: number): RateLimitFigures {
  return coreRateLimitFigures(value, now, retryAfter, sampled);
}
