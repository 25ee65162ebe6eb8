/**
 * The pure functions: the core's transition and decision on a state you
 * hold, a batch of transitions, header figures, and jitter. Every number is
 * the core's; this module moves them across.
 * @module
 */
import { core, figuresAt, io, layout, type CoreExports } from "./engine.js";
import { coreError, corruptState, invalidRequest, mustBe, RateboundError, wrongArgument } from "./errors.js";
import { compileConfig, type Compiled } from "./config.js";
import { snapshot, unchanged, type ConfigSnapshot } from "./config-snapshot.js";
import { checkName, draw } from "./call.js";
import { CALCULATED_RETRY_AFTER, CALCULATED_TS, CALCULATED_WINDOW_START, DECIDED_OK, DECIDED_RETRY_AFTER, DECIDED_TS, DECIDED_VALUE, PURE_ANSWER, PURE_CONFIG } from "./boundary.js";
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

/** A config object's compiled form, and its fields as they were read when it was compiled. */
interface Cached extends ConfigSnapshot {
  readonly compiled: Compiled;
}

const compiledConfigs = new WeakMap<object, Cached>();

/**
 * The config `rb_calculate_next` decides on: the object last used, what it
 * was compiled from, and the instance it was loaded into (a runtime entry may
 * replace the instance).
 */
let loadedConfig: object | undefined;
let loaded: Cached | undefined;
let loadedInto: CoreExports | undefined;
/** Where `rb_calculate_next` writes `ts`, `retryAfter` and `windowStart`: a view of the loaded instance's buffer. */
let answer: Float64Array = new Float64Array(3);

/**
 * The config compiled by the core: validated once per config object, then
 * reused while its fields are unchanged (a changed field compiles it again).
 */
function compiledFor(config: RateLimitConfig): Cached {
  // Not an object: compileConfig throws the coded error.
  if (typeof config !== "object" || config === null) compileConfig(undefined, config);
  const known = config === loadedConfig ? loaded : compiledConfigs.get(config);
  if (known !== undefined && unchanged(config, known)) return known;
  const compiled = compileConfig(undefined, config);
  const cached: Cached = { compiled, ...snapshot(config) };
  compiledConfigs.set(config, cached);
  return cached;
}

/** Loads `config`'s compiled numbers into the core for `rb_calculate_next`, unless they are loaded already. */
function loadConfig(config: object, cached: Cached): void {
  if (loaded !== cached || loadedInto !== core) {
    const n = cached.compiled.numbers;
    core.rb_calculate_use(n[0]!, n[1]!, n[2]!, n[3]!, n[4]!, n[5]!, n[6]!);
  }
  // Made again for another instance, or when the memory grew (a MemoryStore's slab grows it),
  // which detaches every view of it.
  if (loadedInto !== core || answer.length === 0) answer = io.subarray(layout.EXTRA + PURE_ANSWER, layout.EXTRA + PURE_ANSWER + 3);
  loadedConfig = config;
  loaded = cached;
  loadedInto = core;
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
 * Each config object is validated on first use; later calls pass only numbers to the core,
 * in one call (`rb_calculate_next`) while the config is the one the last call used.
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
  // The common call (a state of two finite numbers, on the config the last call used, unchanged)
  // is small enough for V8 to inline into the caller's loop; anything else, and any error, takes
  // the checked road.
  if (config === loadedConfig && loadedInto === core && answer.length !== 0 && typeof state === "object" && state !== null && typeof now === "number" && typeof count === "number" && unchanged(config, loaded!)) {
    const value = state.value;
    const ts = state.ts;
    if (typeof value === "number" && typeof ts === "number" && Number.isFinite(value) && Number.isFinite(ts)) {
      const next = core.rb_calculate_next(value, ts, now, count, 0);
      // A valid call's value is never NaN: NaN is the core's error, which the checked road throws.
      if (next === next) return transitionAt(next);
    }
  }
  return calculateChecked(state, config, now, count);
}

/** `calculateRateLimit` with every argument checked, each bad one a coded error. */
function calculateChecked(state: RateLimitState | null, config: RateLimitConfig, now: number, count: number): RateLimitTransition {
  const cached = compiledFor(config);
  const held = stateArgument(state, "calculateRateLimit");
  if (typeof now !== "number") throw invalidRequest("calculateRateLimit", "now", mustBe("now", "a finite number of ms", now));
  if (typeof count !== "number") throw invalidRequest("calculateRateLimit", "count", mustBe("count", "a finite number >= 0", count));
  const phase = held === null && cached.compiled.draws > 0 ? draw(undefined) : 0;
  loadConfig(config, cached);
  const next = core.rb_calculate_next(held?.value ?? Number.NaN, held?.ts ?? 0, now, count, phase);
  if (next !== next) throw coreError(io, layout.OUT, "calculateRateLimit");
  return transitionAt(next);
}

/** The transition `rb_calculate_next` answered: its value, and `ts`, `retryAfter`, `windowStart` from the buffer. */
function transitionAt(value: number): RateLimitTransition {
  const retryAfter = answer[1]!;
  const windowStart = answer[2]!;
  // One literal per shape: the fields present, in the order the reference lists them.
  if (windowStart !== windowStart) return retryAfter !== retryAfter ? { value, ts: answer[0]! } : { value, ts: answer[0]!, retryAfter };
  return retryAfter !== retryAfter ? { value, ts: answer[0]!, windowStart } : { value, ts: answer[0]!, retryAfter, windowStart };
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
  const { compiled } = compiledFor(config);
  const [count, reserve, given] = ownOptions("decideRateLimit", options, ["count", "reserve", "name"]);
  const name = given === undefined ? "preview" : checkName(given);
  if (count !== undefined && typeof count !== "number") throw invalidRequest(name, "count", mustBe("count", "a finite number >= 0", count));
  if (reserve !== undefined && typeof reserve !== "boolean") throw invalidRequest(name, "reserve", mustBe("reserve", "a boolean", reserve));
  if (typeof now !== "number") throw invalidRequest(name, "now", mustBe("now", "a finite number of ms", now));
  const held = stateArgument(state, "decideRateLimit");
  const { EXTRA, OUT } = layout;
  compiled.numbers.forEach((number, index) => (io[EXTRA + PURE_CONFIG + index] = number));
  const phase = held === null && compiled.draws > 0 ? draw(undefined) : 0;
  const status = core.rb_decide_state(held?.value ?? Number.NaN, held?.ts ?? 0, now, count ?? 1, reserve === true ? 1 : 0, phase);
  if (status < 0) throw coreError(io, OUT, name);
  const ok = io[EXTRA + PURE_ANSWER + DECIDED_OK] === 1;
  const wait = io[EXTRA + PURE_ANSWER + DECIDED_RETRY_AFTER]!;
  const decision = ok ? (Number.isNaN(wait) ? { ok: true as const } : { ok: true as const, retryAfter: wait }) : { ok: false as const, retryAfter: wait };
  return { ...decision, value: io[EXTRA + PURE_ANSWER + DECIDED_VALUE]!, ts: io[EXTRA + PURE_ANSWER + DECIDED_TS]! };
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
  const cached = compiledFor(config);
  if (!(states instanceof Float64Array)) {
    throw invalidRequest("calculateRateLimits", "states", mustBe("states", "a Float64Array of value, ts pairs", states));
  }
  if (states.length % 2 !== 0) throw invalidRequest("calculateRateLimits", "states", "states must be value, ts pairs (got an odd count of numbers)");
  if (typeof now !== "number") throw invalidRequest("calculateRateLimits", "now", mustBe("now", "a finite number of ms", now));
  if (typeof count !== "number") throw invalidRequest("calculateRateLimits", "count", mustBe("count", "a finite number >= 0", count));
  const answers = new Float64Array((states.length / 2) * 4);
  const at = layout.EXTRA + PURE_ANSWER;
  for (let pair = 0; pair < states.length / 2; pair++) {
    const value = states[2 * pair]!;
    const ts = states[2 * pair + 1]!;
    if (!Number.isNaN(value) && !(Number.isFinite(value) && Number.isFinite(ts))) {
      const bad = Number.isFinite(value) ? ["ts", ts] : ["value", value];
      throw corruptState({ name: "calculateRateLimits", key: undefined, shard: 0 }, mustBe(bad[0] as string, "a finite number", bad[1]));
    }
    const phase = Number.isNaN(value) && cached.compiled.draws > 0 ? draw(undefined) : 0;
    // Loaded per pair: a phase drawn may refill the pool through `crypto`, which a caller can replace.
    loadConfig(config, cached);
    const next = core.rb_calculate_next(value, ts, now, count, phase);
    if (next !== next) throw coreError(io, layout.OUT, "calculateRateLimits");
    answers.set([next, io[at + CALCULATED_TS]!, io[at + CALCULATED_RETRY_AFTER]!, io[at + CALCULATED_WINDOW_START]!], pair * 4);
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
 * @returns `{ limit, remaining, reset, window, retryAfter?, sampled, effectiveWindow }`.
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
  compiled.numbers.forEach((number, index) => (io[EXTRA + PURE_CONFIG + index] = number));
  core.rb_figures(state.value, state.ts, now, retryAfter ?? Number.NaN, sampled ?? 1);
  return figuresAt(EXTRA + PURE_ANSWER);
}

export { RateboundError };
