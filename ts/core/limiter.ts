/**
 * The `RateLimiter` class: named limits over a host store. Each call is
 * checked and planned first (bad input fails before the store is touched),
 * then run by the driver under the limit's failure policy.
 * @module
 */
import type { RateLimitConfig, RateLimiterOptions, RateLimitFigures, RateLimitResult, RateLimitStore, RateLimitValue, GrantData, SettleResult } from "./types.js";
import { checkCount, checkFlag, checkKey, checkName, checkNow, draw, drawMany, type Random } from "./call.js";
import { compileConfig, CONFIG_FIELDS, type Compiled } from "./config.js";
import { grantsEngine } from "./engine.js";
import { isThenable, plan, run, runOne, runRemote, type BatchAnswer, type Call, type Decided } from "./driver.js";
import { invalidConfig, invalidRequest, mustBe, RateboundError, unknownLimit, wrongArgument, unknownField } from "./errors.js";
import { Grant, type GrantResult } from "./grant-handle.js";

// Grants and values are loaded on first use: an app that only limits never downloads them.
// Grants also need the full module: a runtime that loaded the small one loads it then, once.
const grants = () => Promise.all([import("./grant.js"), grantsEngine()]).then(([module, engine]) => ({ ...module, engine }));
const values = () => import("./value.js");
import {
  BATCH_OPTIONS,
  checkOptions,
  RESET_OPTIONS,
  SETTLE_OPTIONS,
  VALUE_OPTIONS,
  checkedOptions,
  isPlainObject,
  limitFields,
  own,
  ownOptions,
  refusal,
  type BatchRequest,
  type GetValueOptions,
  type Inline,
  type LimitFields,
  type LimitOptions,
  type Named,
  type StoreErrorPolicy,
  type ResetOptions,
  type SettleOptions,
} from "./options.js";
import { FailurePolicy, withoutPolicy, type FailureOptions, type FallbackLimiter, type LimitConfig } from "./failure-policy.js";
import { ownField } from "./store-call.js";
import { laneOf } from "./coalesce.js";
import { RefusalCache, type RefusalCacheOption } from "./refusal-cache.js";
import type { BatchAnswerOf, BatchOptions, CheckResultOf, LimitCallOptions, LimitName, LimitResultOf } from "./answers.js";
import type { DecisionHook, Probe } from "./decision-hook.js";
import { checkStore } from "./store-shape.js";
import { limitInSlab, SlabStore } from "./slab-store.js";
import { configId } from "./slab.js";

const OPTIONS = ["now", "random", "onStoreError", "timeout", "refusalCache", "onDecision"] as const;
const NO_DRAWS: readonly number[] = Object.freeze([]);
const BATCH_FIELDS = ["name", "key", "count", "reserve", "config"];

/** The fields a limiter's config may have: a config's, and its limit's failure policy. */
const LIMIT_FIELDS = [...CONFIG_FIELDS, "onStoreError"];

/**
 * A limit's config compiled for the limiter, refusing one that could never grant: `capacity: 0`
 * holds no tokens, so only a reservation can pass, and with no `maxReserved > 0` that is a limit
 * whose every call would throw `COUNT_EXCEEDS_MAX`. With `maxReserved > 0` it is a limit that
 * only paces (every call passes `reserve: true` and waits its `retryAfter`), and it is kept.
 */
function compileLimit(name: string, config: unknown): Compiled {
  const compiled = compileConfig(name, config, LIMIT_FIELDS);
  const [, , , capacity, maxReserved] = compiled.numbers as [number, number, number, number, number];
  if (capacity === 0 && !(maxReserved > 0)) {
    throw invalidConfig(
      name,
      "capacity",
      `capacity must be > 0 unless maxReserved is > 0 (got capacity 0, maxReserved ${Number.isNaN(maxReserved) ? "absent" : maxReserved}): ` +
        "a limit of capacity 0 holds no tokens and could grant only reservations",
    );
  }
  return compiled;
}


/** Inline configs compiled once per config object (a config is read when first used: pass a new object to change it). */
const inlineCompiled = new WeakMap<object, Compiled>();

/** A `SlabStore`'s own `read` and `write`: a store whose are others (a subclass, a spy) takes the general path. */
const { read: slabRead, write: slabWrite } = SlabStore.prototype;

/** The result a caller sees: with its figures when asked. */
function shaped(decided: Decided): RateLimitResult & { figures?: RateLimitFigures } {
  return decided.figures === undefined ? decided.result : { ...decided.result, figures: decided.figures };
}

/** A call's own answer out of a batch: its decision, or its error thrown. */
function only(answer: BatchAnswer): Decided {
  const decided = answer.each[0]!;
  if (decided instanceof RateboundError) throw decided;
  return decided;
}

/** The module that records a hooked call, loaded by the first one: an app without a hook never loads it. */
let observer: Promise<typeof import("./observe.js")> | undefined;

/** Runs `call` with a probe and reports it to `hook` once it settles (see observe.ts). */
function hooked<T>(hook: DecisionHook, write: boolean, call: (recorded: Probe) => Promise<T>): Promise<T> {
  return (observer ??= import("./observe.js")).then(({ observe, probe }) => {
    const recorded = probe();
    return observe(hook, write, recorded, call(recorded));
  });
}

/**
 * Rate limits over a host store: every call plans the states it needs, reads
 * them in one batch, decides in WebAssembly, and writes in one batch only
 * what a granted limit changed.
 *
 * @typeParam Limits The named limits; their names are type-checked.
 * @typeParam Policy The limiter's `onStoreError` as declared (any policy when not): with
 *   `figures: true`, a limit that cannot be `"open"` answers figures that are never undefined.
 * @example
 * const limiter = new RateLimiter(new MemoryStore(), {
 *   sendMessage: { kind: "token bucket", rate: 10, period: MINUTE, capacity: 3 },
 * });
 * const { ok, retryAfter } = await limiter.limit("sendMessage", { key: userId });
 */
export class RateLimiter<Limits extends Record<string, LimitConfig> = Record<string, never>, Policy extends StoreErrorPolicy = StoreErrorPolicy> {
  /** What a call does when the store fails (`onStoreError`, `timeout`): every store call goes through it. */
  readonly #failure: FailurePolicy;
  readonly #store: RateLimitStore;
  readonly #now: () => number;
  readonly #random: Random;
  /** Named limits, compiled once. */
  readonly #limits = new Map<string, Compiled>();
  /** Whether the store decides next to its data. */
  readonly #remote: boolean;
  /** Whether a call may go straight to the driver: the store neither decides nor has a transaction. */
  readonly #direct: boolean;
  /** Whether the store is a `SlabStore` (a `MemoryStore`): an unsharded `limit`/`check` on it is one crossing. */
  readonly #slab: boolean;
  /** On a `SlabStore`, each unsharded named limit's config and its id in the core's config table (one lookup a call). */
  readonly #inTable = new Map<string, { readonly limit: Compiled; readonly id: number }>();
  /** Refusals repeated without asking the store (`refusalCache`), when asked for. */
  readonly #refusals: RefusalCache | undefined;
  /** Told of every decided call (`onDecision`), when asked for. */
  readonly #onDecision: DecisionHook | undefined;

  /**
   * @param store The host's persistence: `read(ref)` and `write(ref, state | null)` (see `RateLimitStore`).
   * @param limits Named limit configs, validated now (a bad one throws naming it and the field).
   * @param options `now` and `random`, for tests and replays; `onStoreError` and `timeout`
   *   (see {@link FailureOptions}); `refusalCache` to repeat a store's refusal locally until its
   *   wait is over (see {@link RefusalCacheOption}); `onDecision` to be told of every decided
   *   call, for metrics (see {@link DecisionEvent}; `ratebound/otel` records them).
   */
  constructor(
    store: RateLimitStore,
    limits: Limits = {} as Limits,
    options: RateLimiterOptions & FailureOptions & { onStoreError?: Policy; refusalCache?: RefusalCacheOption; onDecision?: DecisionHook } = {},
  ) {
    // The failure policy takes its fields off the limits and the options (own fields only).
    this.#failure = new FailurePolicy(store, limits, options, RateLimiter);
    this.#store = checkStore(store);
    this.#remote = typeof store.decide === "function";
    this.#direct = !this.#remote && typeof store.transaction !== "function";
    this.#slab = this.#direct && store instanceof SlabStore;
    const [now, random, , , refusalCache, onDecision] = ownOptions("RateLimiter", options, OPTIONS);
    this.#refusals = RefusalCache.from(refusalCache);
    if (onDecision !== undefined && typeof onDecision !== "function") throw wrongArgument("RateLimiter", "onDecision", mustBe("onDecision", "a function", onDecision));
    this.#onDecision = onDecision as DecisionHook | undefined;
    for (const [field, value] of [["now", now], ["random", random]] as const) {
      if (value !== undefined && typeof value !== "function") throw wrongArgument("RateLimiter", field, mustBe(field, "a function", value));
    }
    this.#now = (now as (() => number) | undefined) ?? Date.now;
    this.#random = random as Random;
    const named = this.#failure.limits as unknown;
    if (named !== undefined) {
      if (!isPlainObject(named)) throw wrongArgument("RateLimiter", "limits", mustBe("limits", "a plain object of named configs", named));
      let names: string[];
      try {
        names = Object.keys(named);
      } catch {
        throw wrongArgument("RateLimiter", "limits", "limits must be a plain object (listing its names threw) (got an object)");
      }
      for (const name of names) this.#limits.set(checkName(name), compileLimit(name, named[name]));
    }
    // A named limit's config goes into the core's config table now, once.
    if (this.#slab) {
      for (const [name, limit] of this.#limits) {
        const id = limit.shards === 1 ? configId(limit) : -1;
        if (id >= 0) this.#inTable.set(name, { limit, id });
      }
    }
  }

  /**
   * The names of the limits given to the constructor, in their order (inline limits are not listed).
   *
   * @example
   * if (!limiter.limitNames.includes(name)) throw new Error(`no limit ${name}`);
   */
  get limitNames(): readonly string[] {
    return [...this.#limits.keys()];
  }

  /** The named limit's config, or the inline one compiled now. */
  #resolve(name: string, config: unknown): Compiled {
    if (config !== undefined) {
      const cached = typeof config === "object" && config !== null ? inlineCompiled.get(config) : undefined;
      if (cached !== undefined) return cached;
      const compiled = compileLimit(name, config);
      inlineCompiled.set(config as object, compiled);
      return compiled;
    }
    const limit = this.#limits.get(name);
    if (limit === undefined) throw unknownLimit(name);
    return limit;
  }

  /** A call's arguments, each checked once (name, key, count, reserve, config, now), and its random numbers. */
  #call(name: unknown, given: { key?: unknown; count?: unknown; reserve?: unknown }, config: unknown, write: boolean): Call {
    // A named limit's name was checked when the limiter was made.
    const checked = config === undefined && typeof name === "string" && this.#limits.has(name) ? name : checkName(name);
    const key = checkKey(checked, given.key);
    const count = checkCount(checked, given.count);
    const reserve = checkFlag(checked, "reserve", given.reserve);
    const limit = this.#resolve(checked, config);
    const now = checkNow(checked, this.#now());
    const draws = limit.draws === 0 ? NO_DRAWS : drawMany(this.#random, limit.draws);
    return { name: checked, key, limit, count, reserve, write, now, draws };
  }

  /**
   * Consumes `count` tokens if the limit allows, and writes its new state.
   *
   * @param name A named limit, or any name with an inline `config`.
   * @param options `key`, `count`, `reserve`, `throws`, `config`, `figures: true` for the header
   *   figures, and `grant: true` for a handle.
   * @returns `{ ok: true, retryAfter? }` (retryAfter when reserved) or `{ ok: false, retryAfter }`;
   *   with `grant: true`, a granted result also carries its {@link Grant}.
   * @example
   * const status = await limiter.limit("llmTokens", { count: 500, reserve: true });
   * if (status.ok && status.retryAfter) scheduleIn(status.retryAfter);
   */
  // One generic signature, not overloads: a subclass overrides it with the same one (see docs/metrics.md).
  limit<const Options extends LimitCallOptions = {}, const Name extends LimitName<Limits, Options> = LimitName<Limits, Options>>(
    name: Name,
    options?: Options,
  ): Promise<LimitResultOf<Limits, Name, Options, Policy>> {
    return this.#observed(name, options, true) as Promise<LimitResultOf<Limits, Name, Options, Policy>>;
  }

  /** `limit` (write) or `check`, reported to `onDecision` when there is one. */
  #observed(name: string, options: LimitOptions | undefined, write: boolean): Promise<RateLimitResult> {
    const hook = this.#onDecision;
    if (hook === undefined) return this.#decide(name, options, write, undefined);
    return hooked(hook, write, (recorded) => this.#decide(name, options, write, recorded));
  }

  /**
   * What {@link RateLimiter.limit} would answer now, without writing anything.
   *
   * @param name A named limit, or any name with an inline `config`.
   * @param options As for `limit` (but `grant`).
   * @returns The same result `limit` would give.
   * @example
   * const { ok } = await limiter.check("failedLogins", { key: userId });
   */
  check<const Options extends LimitCallOptions = {}, const Name extends LimitName<Limits, Options> = LimitName<Limits, Options>>(
    name: Name,
    options?: Options,
  ): Promise<CheckResultOf<Limits, Name, Options, Policy>> {
    return this.#observed(name, options, false) as Promise<CheckResultOf<Limits, Name, Options, Policy>>;
  }

  /** `limit` (write) or `check`. Not an async function: a synchronous store answers with one settled Promise. */
  #decide(name: string, options: LimitOptions | undefined, write: boolean, recorded: Probe | undefined): Promise<RateLimitResult> {
    try {
      const given = limitFields(name, options);
      if (given.grant !== undefined) {
        if (!write) checkOptions(name, options, ["key", "count", "reserve", "throws", "config", "figures"]);
        if (checkFlag(checkName(name), "grant", given.grant)) return this.#granting(name, given, recorded) as Promise<RateLimitResult>;
      }
      const figures = given.figures === undefined ? false : checkFlag(typeof name === "string" ? name : "", "figures", given.figures);
      const { config, policy } = this.#failure.limitPolicy(name, given.config);
      if (this.#slab && recorded === undefined && this.#failure.isPlain(policy)) {
        const answer = this.#inSlab(name, given, config, write, figures);
        if (answer !== undefined) return answer;
      }
      const call = this.#call(name, given, config, write);
      const refusals = this.#refusals;
      if (recorded === undefined && refusals === undefined && this.#direct && this.#failure.isPlain(policy)) {
        // No transaction, no policy to apply, nothing remembered: a synchronous store is decided
        // synchronously, and nothing is allocated for the answer but the result.
        const answer = runOne(this.#store, call, figures);
        if (isThenable(answer)) return answer.then((decided) => refusal(call.name, shaped(decided), given.throws));
        return Promise.resolve(refusal(call.name, shaped(answer), given.throws));
      }
      // Bad input fails here, before the store is touched or a refusal is remembered, whatever the policy.
      const planned = plan([call], true, figures);
      if (recorded !== undefined) {
        recorded.calls = [call];
        recorded.policy = policy;
      }
      if (refusals !== undefined) {
        const local = refusals.refuse(call, figures);
        if (local !== undefined) {
          if (recorded !== undefined) {
            recorded.fromCache = true;
            recorded.result = local;
          }
          return Promise.resolve(refusal(call.name, local, given.throws));
        }
      }
      if (recorded !== undefined) recorded.start = performance.now();
      const answered = (answer: Decided | BatchAnswer | RateLimitResult) => {
        const result = isBatchAnswer(answer) ? shaped(only(answer)) : isDecided(answer) ? shaped(answer) : answer;
        if (recorded !== undefined) {
          recorded.end = performance.now();
          recorded.result = result;
          if (isBatchAnswer(answer) && answer.batchSize !== undefined) recorded.batchSize = answer.batchSize;
        }
        refusals?.remember(call, result);
        return refusal(call.name, result, given.throws);
      };
      if (this.#direct && this.#failure.isPlain(policy)) {
        const answer = runOne(this.#store, call, figures);
        return isThenable(answer) ? answer.then(answered) : Promise.resolve(answered(answer));
      }
      // The fallback decides too (on memory), so it answers the figures asked, as the store's decision would.
      const fallbackOptions = { key: call.key, count: given.count, reserve: given.reserve, config, ...(figures ? { figures } : {}) } as LimitOptions;
      const fallback = (limiter: FallbackLimiter) => (write ? limiter.limit(name, fallbackOptions) : limiter.check(name, fallbackOptions));
      // A store that cannot decide next to its data: the call joins its key's batch (`coalesce.ts`).
      if (this.#failure.coalesces) return this.#failure.coalesce(call, figures, policy, fallback, recorded).then(answered);
      const answer = this.#failure.run<Decided | BatchAnswer | RateLimitResult>(
        policy,
        (store) => (this.#remote ? runRemote(store as Required<RateLimitStore>, planned) : runOne(store, call, figures)),
        fallback,
        this.#remote,
      );
      return answer.then(answered);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * `limit`/`check` of an unsharded limit on a `SlabStore`, in one crossing: the call checked as
   * `#call` checks it, then decided and written in the slab (`limitInSlab`); with a refusal
   * cache, asked first and told after, as on the general path. `undefined` (before the clock is
   * read or anything drawn) sends the call down the general path.
   */
  #inSlab(name: string, given: LimitFields, config: unknown, write: boolean, figures: boolean): Promise<RateLimitResult> | undefined {
    const store = this.#store as SlabStore;
    if (store.read !== slabRead || store.write !== slabWrite) return undefined;
    // A named limit (its name checked when the limiter was made) is one lookup; an inline one is compiled once per object.
    const named = config === undefined ? this.#inTable.get(name) : undefined;
    const checked = named !== undefined ? name : checkName(name);
    const key = checkKey(checked, given.key);
    const count = checkCount(checked, given.count);
    const reserve = checkFlag(checked, "reserve", given.reserve);
    const limit = named !== undefined ? named.limit : this.#resolve(checked, config);
    const refusals = this.#refusals;
    // A draw is checked by the core: with a refusal cache, which answers before the core, it takes the general path.
    if (limit.shards !== 1 || (refusals !== undefined && limit.draws !== 0)) return undefined;
    const id = named !== undefined ? named.id : configId(limit);
    if (id < 0) return undefined;
    const now = checkNow(checked, this.#now());
    const drawn = limit.draws === 0 ? 0 : draw(this.#random);
    if (refusals === undefined) return Promise.resolve(refusal(checked, limitInSlab(store, id, checked, key, count, reserve, write, now, drawn, figures), given.throws));
    const call: Call = { name: checked, key, limit, count, reserve, write, now, draws: NO_DRAWS };
    const local = refusals.refuse(call, figures);
    if (local !== undefined) return Promise.resolve(refusal(checked, local, given.throws));
    const result = limitInSlab(store, id, checked, key, count, reserve, write, now, drawn, figures);
    refusals.remember(call, result);
    return Promise.resolve(refusal(checked, result, given.throws));
  }

  /** `limit` with `grant: true`: through the store's transaction, answering with a handle. A grant always fails closed. */
  #granting(name: string, given: LimitFields, recorded: Probe | undefined): Promise<GrantResult> {
    // One decided on a fallback could not settle against the store.
    const config = withoutPolicy(name, given.config);
    const figures = given.figures === undefined ? false : checkFlag(name, "figures", given.figures);
    const call = this.#call(name, given, config, true);
    plan([call], true, figures); // bad input fails before the store is touched
    if (recorded !== undefined) recorded.calls = [call];
    const local = this.#refusals?.refuse(call, figures);
    if (local !== undefined) {
      if (recorded !== undefined) {
        recorded.fromCache = true;
        recorded.result = local;
      }
      return Promise.resolve(refusal(call.name, local, given.throws) as GrantResult);
    }
    if (recorded !== undefined) recorded.start = performance.now();
    const idWords = [draw(this.#random), draw(this.#random)].map((unit) => Math.floor(unit * 2 ** 32));
    // Its turn on a coalescing store is taken now, in arrival order; the grants' code loads within it.
    const answer = this.#failure.transact((store) => grants().then(({ charge, engine }) => charge(engine, store, call, idWords, figures)), [laneOf(call.name, call.key)]);
    const inline = config === undefined ? undefined : { config: config as RateLimitConfig };
    const settler = (data: GrantData, actual: number) => this.settle(data, actual, inline);
    return answer.then((result) => {
      const { grant, ...decided } = result;
      if (recorded !== undefined) {
        recorded.end = performance.now();
        recorded.result = decided;
      }
      this.#refusals?.remember(call, decided.ok ? { ok: true } : decided);
      refusal(call.name, decided, given.throws);
      if (!decided.ok || grant === undefined) return decided as GrantResult;
      return { ...decided, ok: true, grant: new Grant(grant, settler) };
    });
  }

  /**
   * Settles a grant from its data (`grant.data`, stored or sent elsewhere) at
   * what was really used: gives back the unused tokens, never more than the
   * charge could still hold, or takes the extra as a reservation would. A
   * grant settles once: a second settle is a `GRANT_SETTLED` error while it
   * could still give tokens back. A grant whose charge rolled back refunds nothing.
   *
   * @param data The grant's data.
   * @param actual Tokens really used, a finite number `>= 0` (0 cancels).
   * @param options `config`, for a grant of an inline limit.
   * @returns `{ refunded, charged, unpaid, retryAfter? }`.
   * @example
   * await limiter.settle(job.grant, usage.totalTokens);
   */
  async settle(data: GrantData, actual: number, options?: SettleOptions): Promise<SettleResult> {
    const checked = checkedOptions("settle", options, SETTLE_OPTIONS);
    const inline = own(checked, "config");
    const named = ownField(data, "name")?.[1];
    const { grantInput, settle, engine } = await grants();
    const grant = grantInput(data);
    const config = inline === undefined ? undefined : withoutPolicy(typeof named === "string" ? named : "settle", inline);
    const limit = this.#resolve(grant.name, config);
    if (typeof actual !== "number") throw invalidRequest(grant.name, "actual", mustBe("actual", "a finite number >= 0", actual));
    const now = checkNow(grant.name, this.#now());
    const draws = limit.settleDraws === 0 ? NO_DRAWS : drawMany(this.#random, limit.settleDraws);
    const settled = await this.#failure.transact((store) => settle(engine, store, grant, limit, actual, now, draws), [laneOf(grant.name, grant.key)]);
    // A refund may end a wait this limiter remembers.
    this.#refusals?.forget(grant.name, grant.key);
    return settled;
  }

  /**
   * Consumes several limits together: all of them, or none. When any refuses,
   * nothing is written and `retryAfter` is the largest wait of the batch, so a
   * caller never holds one limit while waiting for another.
   *
   * @param requests The limits, each with its own `key`, `count`, `reserve`.
   * @param options `throws: true` to throw a {@link RateLimitError} on refusal; `figures: true`
   *   for each limit's header figures (in the order asked).
   * @returns One result for the whole batch.
   * @example
   * await limiter.limitAll([{ name: "perUser", key: userId }, { name: "global" }], { throws: true });
   */
  limitAll<const Options extends BatchOptions = {}>(
    requests: ReadonlyArray<BatchRequest<Named<Limits>> | (BatchRequest & Inline)>,
    options?: Options,
  ): Promise<BatchAnswerOf<Options>> {
    return this.#batchCall(requests, options, true) as Promise<BatchAnswerOf<Options>>;
  }

  /**
   * What {@link RateLimiter.limitAll} would answer now, without writing anything.
   *
   * @param requests The limits to check together.
   * @param options `throws: true` to throw on refusal; `figures: true` for each limit's figures.
   * @returns One result for the whole batch.
   * @example
   * const { ok, retryAfter } = await limiter.checkAll([{ name: "x" }, { name: "y", count: 10 }]);
   */
  checkAll<const Options extends BatchOptions = {}>(
    requests: ReadonlyArray<BatchRequest<Named<Limits>> | (BatchRequest & Inline)>,
    options?: Options,
  ): Promise<BatchAnswerOf<Options>> {
    return this.#batchCall(requests, options, false) as Promise<BatchAnswerOf<Options>>;
  }

  /** `limitAll` (write) or `checkAll`, reported to `onDecision` when there is one (`null` options stay null: #batch refuses them). */
  #batchCall(requests: ReadonlyArray<BatchRequest>, given: { throws?: boolean; figures?: boolean } | undefined, write: boolean): Promise<RateLimitResult> {
    const options = given === undefined ? {} : given;
    const hook = this.#onDecision;
    if (hook === undefined) return this.#batch(requests, options, write, undefined);
    return hooked(hook, write, (recorded) => this.#batch(requests, options, write, recorded));
  }

  /** `limitAll` (write) or `checkAll`, under the batch's failure policy. */
  async #batch(
    requests: ReadonlyArray<BatchRequest>,
    options: { throws?: boolean; figures?: boolean },
    write: boolean,
    recorded: Probe | undefined,
  ): Promise<RateLimitResult & { figures?: RateLimitFigures[] }> {
    const fn = write ? "limitAll" : "checkAll";
    const checked = checkedOptions(fn, options, BATCH_OPTIONS);
    const throws = own<boolean>(checked, "throws");
    const figures = checkFlag(fn, "figures", own(checked, "figures"));
    let isArray = false;
    try {
      isArray = Array.isArray(requests);
    } catch {
      isArray = false;
    }
    if (!isArray) throw wrongArgument(fn, "requests", mustBe("requests", "an array of limits", requests));
    const { requests: core, policy } = this.#failure.batchPolicy(requests);
    const calls: Call[] = [];
    for (const request of core as unknown[]) {
      if (typeof request !== "object" || request === null) throw wrongArgument(fn, "requests", mustBe("requests", "an array of objects", request));
      let names: string[];
      try {
        names = Object.keys(request);
      } catch {
        throw wrongArgument(fn, "requests", "requests must be an array of plain objects (listing a request's fields threw) (got an object)");
      }
      for (const field of names) if (!BATCH_FIELDS.includes(field)) throw invalidRequest(fn, field, unknownField(field, BATCH_FIELDS, "field", " of a limitAll item"));
      // Own fields only: an inherited one (a polluted Object.prototype.count) is never read.
      const field = (name: string) => ownField(request, name)?.[1];
      calls.push(this.#call(field("name"), { key: field("key"), count: field("count"), reserve: field("reserve") }, field("config"), write));
    }
    const planned = plan(calls, true, figures);
    if (recorded !== undefined) {
      recorded.calls = calls;
      recorded.policy = policy;
      recorded.batchSize = calls.length;
      recorded.start = performance.now();
    }
    const answer = await this.#failure.run<BatchAnswer | RateLimitResult>(
      policy,
      (store) => (this.#remote ? runRemote(store as Required<RateLimitStore>, planned) : run(store, planned)),
      (fallback) => (write ? fallback.limitAll(core, { figures }) : fallback.checkAll(core, { figures })),
      this.#remote,
      calls.map((call) => laneOf(call.name, call.key)),
    );
    if (recorded !== undefined) {
      recorded.end = performance.now();
      recorded.result = isBatchAnswer(answer) ? answer.batch : answer;
      if (isBatchAnswer(answer) && answer.batchSize !== undefined) recorded.batchSize = answer.batchSize;
    }
    const names = calls.map((call) => call.name).join(", ");
    if (!isBatchAnswer(answer)) return refusal(names, answer, throws);
    const result: RateLimitResult & { figures?: RateLimitFigures[] } = figures
      ? { ...answer.batch, figures: answer.each.map((decided) => (decided as Decided).figures!) }
      : answer.batch;
    return refusal(names, result, throws);
  }

  /**
   * The limit's current value, to show or to project forward with {@link calculateRateLimit}.
   *
   * @param name A named limit, or any name with an inline `config`.
   * @param options `key`, `sampleShards`, `config`.
   * @returns `{ value, ts, shard, config }` for the whole limit.
   * @example
   * const { value, ts, config } = await limiter.getValue("sendMessage", { key: userId });
   * const inAMinute = calculateRateLimit({ value, ts }, config, Date.now() + MINUTE);
   */
  getValue(name: string, options: GetValueOptions & Inline): Promise<RateLimitValue>;
  // Last, so that a name that is neither one of the limits nor inline fails here, naming it and the limits.
  getValue(name: Named<Limits>, options?: GetValueOptions): Promise<RateLimitValue>;
  async getValue(name: string, options?: GetValueOptions): Promise<RateLimitValue> {
    const checked = checkedOptions(name, options, VALUE_OPTIONS);
    const limitName = checkName(name);
    const key = checkKey(limitName, own(checked, "key"));
    const wanted = own(checked, "sampleShards");
    const limit = this.#resolve(limitName, withoutPolicy(limitName, own(checked, "config")));
    if (wanted !== undefined && typeof wanted !== "number") throw invalidRequest(limitName, "sampleShards", mustBe("sampleShards", "an integer >= 1", wanted));
    const now = checkNow(limitName, this.#now());
    const { getValue } = await values();
    return await this.#failure.transact((store) => getValue(store, limitName, key, limit, wanted as number | undefined, now, this.#random));
  }

  /**
   * Deletes the limit's state for `key` on every shard: it is full again.
   *
   * @param name A named limit, or any name with an inline `config`.
   * @param options `key`, `config`.
   * @example
   * await limiter.reset("failedLogins", { key: userId });
   */
  reset(name: string, options: ResetOptions & Inline): Promise<void>;
  // Last, so that a name that is neither one of the limits nor inline fails here, naming it and the limits.
  reset(name: Named<Limits>, options?: ResetOptions): Promise<void>;
  async reset(name: string, options?: ResetOptions): Promise<void> {
    const checked = checkedOptions(name, options, RESET_OPTIONS);
    const limitName = checkName(name);
    const key = checkKey(limitName, own(checked, "key"));
    const limit = this.#resolve(limitName, withoutPolicy(limitName, own(checked, "config")));
    const now = checkNow(limitName, this.#now());
    const { reset } = await values();
    await this.#failure.transact((store) => reset(store, limitName, key, limit, now), [laneOf(limitName, key)]);
    this.#refusals?.forget(limitName, key);
  }
}

/** Whether an answer is one call's decision. */
function isDecided(answer: unknown): answer is Decided {
  return typeof answer === "object" && answer !== null && "figures" in answer && "result" in answer;
}

/** Whether a policy's answer is the driver's (not a degraded or fallback result). */
function isBatchAnswer(answer: unknown): answer is BatchAnswer {
  return typeof answer === "object" && answer !== null && Array.isArray((answer as BatchAnswer).each);
}
