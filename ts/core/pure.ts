/**
 * The pure functions: the core's transition and decision on a state you
 * hold, a batch of transitions, header figures, and jitter. Every number is
 * the core's; this module moves them across.
 * @module
 */
import { core, figuresAt, io, layout } from "./engine.js";
import { coreError, corruptState, invalidRequest, mustBe, RateboundError, wrongArgument } from "./errors.js";
import { CONFIG_FIELDS, compileConfig, type Compiled } from "./config.js";
import { checkName, draw } from "./call.js";
import { ownOptions } from "./options.js";
import type {
  DecideOptions,
  RateLimitConfig,
  RateLimitDecision,
  RateLimitFigures,
  RateLimitState,
  RateLimitTransition,
  RateLimitValue,
} from "./types.js";

/** A config object's compiled form and the fields it was compiled from. */
type Cached = { compiled: Compiled; fields: unknown[]; fieldCount: number };

const compiledConfigs = new WeakMap<object, Cached>();
/** The last config used, in front of the WeakMap: a caller's loop reuses one config object. */
let lastConfig: object | undefined;
let lastCached: Cached | undefined;

function unchanged(config: Record<string, unknown>, cached: Cached): boolean {
  const fields = cached.fields;
  for (let index = 0; index < CONFIG_FIELDS.length; index++) {
    if (!Object.is(config[CONFIG_FIELDS[index]!], fields[index])) return false;
  }
  // A field added after first use (an unknown one, say) changes the count: compiled again, and refused.
  return Object.keys(config).length === cached.fieldCount;
}

/**
 * The config compiled by the core: validated once per config object, then
 * reused while its fields are unchanged (a changed field compiles it again).
 */
function compiledFor(config: RateLimitConfig): Compiled {
  if (typeof config !== "object" || config === null) return compileConfig(undefined, config);
  const fields = config as unknown as Record<string, unknown>;
  if (lastConfig === config && unchanged(fields, lastCached!)) return lastCached!.compiled;
  let cached = compiledConfigs.get(config);
  if (cached === undefined || !unchanged(fields, cached)) {
    cached = { compiled: compileConfig(undefined, config), fields: CONFIG_FIELDS.map((field) => fields[field]), fieldCount: Object.keys(config).length };
    compiledConfigs.set(config, cached);
  }
  lastConfig = config;
  lastCached = cached;
  return cached.compiled;
}

/** A state passed to a pure function: `null` for none, else `{ value, ts }` finite numbers. */
function stateArgument(state: unknown, fn: string): RateLimitState | null {
  if (state === null || state === undefined) return null;
  if (typeof state !== "object") throw corruptState({ passedTo: fn }, mustBe("state", "{ value, ts } or null", state));
  const { value, ts } = state as RateLimitState;
  if (typeof value !== "number" || !Number.isFinite(value)) throw corruptState({ passedTo: fn }, mustBe("value", "a finite number", value));
  if (typeof ts !== "number" || !Number.isFinite(ts)) throw corruptState({ passedTo: fn }, mustBe("ts", "a finite number", ts));
  return state as RateLimitState;
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
export function calculateRateLimit(state: RateLimitState | null, config: RateLimitConfig, now: number = Date.now(), count: number = 0): RateLimitTransition {
  const compiled = compiledFor(config);
  let value = Number.NaN;
  let ts = 0;
  if (state !== null) {
    if (typeof state === "object" && typeof state.value === "number" && typeof state.ts === "number" && Number.isFinite(state.value) && Number.isFinite(state.ts)) {
      value = state.value;
      ts = state.ts;
    } else {
      const checked = stateArgument(state, "calculateRateLimit");
      if (checked !== null) ({ value, ts } = checked);
    }
  }
  if (typeof now !== "number") throw invalidRequest("calculateRateLimit", "now", mustBe("now", "a finite number of ms", now));
  if (typeof count !== "number") throw invalidRequest("calculateRateLimit", "count", mustBe("count", "a finite number >= 0", count));
  const n = compiled.numbers;
  const phase = Number.isNaN(value) && compiled.draws > 0 ? draw(undefined) : 0;
  const next = core.rb_calculate(n[0]!, n[1]!, n[2]!, n[3]!, n[4]!, n[5]!, n[6]!, value, ts, now, count, phase);
  const at = layout.EXTRA + 8;
  if (io[at + 3]! < 0) throw coreError(io, layout.OUT, "calculateRateLimit");
  const transition: RateLimitTransition = { value: next, ts: io[at]! };
  const retryAfter = io[at + 1]!;
  const windowStart = io[at + 2]!;
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
export function decideRateLimit(state: RateLimitState | null, config: RateLimitConfig, now: number = Date.now(), options?: DecideOptions): RateLimitDecision {
  const compiled = compiledFor(config);
  const [count, reserve, given] = ownOptions("decideRateLimit", options, ["count", "reserve", "name"]);
  const name = given === undefined ? "preview" : checkName(given);
  if (count !== undefined && typeof count !== "number") throw invalidRequest(name, "count", mustBe("count", "a finite number >= 0", count));
  if (reserve !== undefined && typeof reserve !== "boolean") throw invalidRequest(name, "reserve", mustBe("reserve", "a boolean", reserve));
  if (typeof now !== "number") throw invalidRequest(name, "now", mustBe("now", "a finite number of ms", now));
  const held = stateArgument(state, "decideRateLimit");
  const { EXTRA, OUT } = layout;
  compiled.numbers.forEach((number, index) => (io[EXTRA + index] = number));
  const phase = held === null && compiled.draws > 0 ? draw(undefined) : 0;
  const status = core.rb_decide_state(held?.value ?? Number.NaN, held?.ts ?? 0, now, count ?? 1, reserve === true ? 1 : 0, phase);
  if (status < 0) throw coreError(io, OUT, name);
  const ok = io[EXTRA + 8] === 1;
  const wait = io[EXTRA + 9]!;
  const decision = ok ? (Number.isNaN(wait) ? { ok: true as const } : { ok: true as const, retryAfter: wait }) : { ok: false as const, retryAfter: wait };
  return { ...decision, value: io[EXTRA + 10]!, ts: io[EXTRA + 11]! };
}

/**
 * Many transitions at once, for dashboards and previews of many keys.
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
export function calculateRateLimits(states: Float64Array, config: RateLimitConfig, now: number = Date.now(), count: number = 0): Float64Array {
  const compiled = compiledFor(config);
  if (!(states instanceof Float64Array)) {
    throw invalidRequest("calculateRateLimits", "states", mustBe("states", "a Float64Array of value, ts pairs", states));
  }
  if (states.length % 2 !== 0) throw invalidRequest("calculateRateLimits", "states", "states must be value, ts pairs (got an odd count of numbers)");
  if (typeof now !== "number") throw invalidRequest("calculateRateLimits", "now", mustBe("now", "a finite number of ms", now));
  if (typeof count !== "number") throw invalidRequest("calculateRateLimits", "count", mustBe("count", "a finite number >= 0", count));
  const n = compiled.numbers;
  const answers = new Float64Array((states.length / 2) * 4);
  const at = layout.EXTRA + 8;
  for (let pair = 0; pair < states.length / 2; pair++) {
    const value = states[2 * pair]!;
    const ts = states[2 * pair + 1]!;
    if (!Number.isNaN(value) && !(Number.isFinite(value) && Number.isFinite(ts))) {
      const bad = Number.isFinite(value) ? ["ts", ts] : ["value", value];
      throw corruptState({ name: "calculateRateLimits", key: undefined, shard: 0 }, mustBe(bad[0] as string, "a finite number", bad[1]));
    }
    const phase = Number.isNaN(value) && compiled.draws > 0 ? draw(undefined) : 0;
    const next = core.rb_calculate(n[0]!, n[1]!, n[2]!, n[3]!, n[4]!, n[5]!, n[6]!, value, ts, now, count, phase);
    if (io[at + 3]! < 0) throw coreError(io, layout.OUT, "calculateRateLimits");
    answers.set([next, io[at]!, io[at + 1]!, io[at + 2]!], pair * 4);
  }
  return answers;
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
  for (const [field, value] of [["retryAfter", retryAfter], ["maxJitter", maxJitter]] as const) {
    if (typeof value !== "number") throw invalidRequest("withJitter", field, mustBe(field, "a finite number >= 0", value));
  }
  if (random !== undefined && typeof random !== "function") throw wrongArgument("withJitter", "random", mustBe("random", "a function", random));
  const jittered = core.rb_jitter(retryAfter, maxJitter, draw(random));
  if (Number.isNaN(jittered)) throw coreError(io, layout.OUT, "withJitter");
  return jittered;
}

/**
 * The figures HTTP headers show, computed by the core: the quota (`limit`),
 * whole tokens `remaining`, whole seconds until `reset`, the `window` in whole
 * seconds, and, given a refusal's wait, `retryAfter` in whole seconds rounded
 * up (never early). For a sharded limit they rest on the shards `getValue`
 * sampled (`sampled`). A decision answers its own figures with `figures: true`.
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
  const fn = "rateLimitFigures";
  if (typeof value !== "object" || value === null) throw wrongArgument(fn, "value", mustBe("value", "a getValue report { value, ts, config }", value));
  const compiled = compileConfig(undefined, (value as { config?: unknown }).config);
  const state = stateArgument(value, fn);
  if (state === null) throw wrongArgument(fn, "value", mustBe("value", "a getValue report", null));
  if (typeof now !== "number" || !Number.isFinite(now)) throw invalidRequest(fn, "now", mustBe("now", "a finite number of ms", now));
  if (retryAfter !== undefined && !(typeof retryAfter === "number" && retryAfter >= 0 && Number.isFinite(retryAfter))) {
    throw invalidRequest(fn, "retryAfter", mustBe("retryAfter", "a finite number >= 0 or undefined", retryAfter));
  }
  if (sampled !== undefined && !(typeof sampled === "number" && Number.isInteger(sampled) && sampled >= 1)) {
    throw invalidRequest(fn, "sampleShards", mustBe("sampleShards", "an integer >= 1", sampled));
  }
  const { EXTRA } = layout;
  compiled.numbers.forEach((number, index) => (io[EXTRA + index] = number));
  core.rb_figures(state.value, state.ts, now, retryAfter ?? Number.NaN, sampled ?? 1);
  return figuresAt(EXTRA + 8);
}

export { RateboundError };
