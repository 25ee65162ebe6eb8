/**
 * The `RateLimiter` class: named limits over a host store. Each call is
 * checked and planned first (bad input fails before the store is touched),
 * then run by the driver under the limit's failure policy.
 * @module
 */
import type { RateLimitConfig, RateLimiterOptions, RateLimitResult, RateLimitStore, RateLimitValue, GrantData, SettleResult } from "./types.js";
import type { Random } from "./call.js";
import type { Compiled } from "./config.js";
import { mustBe, wrongArgument } from "./errors.js";
import type { AcquireAllAnswer, AcquireAllOptions, AcquireOptions, AcquireRequest, Reserving } from "./acquire.js";
import { ownOptions } from "./options.js";
import type { BatchRequest, GetValueOptions, Inline, LimitOptions, Named, NamedLimitConfig, StoreErrorPolicy, ResetOptions, SettleOptions } from "./options.js";
import { FailurePolicy, type FailureOptions } from "./failure-policy.js";
import { RefusalCache, type RefusalCacheOption } from "./refusal-cache.js";
import type { AcquireResultOf, BatchAnswerOf, ValueResultOf, BatchOptions, CheckResultOf, LimitCallOptions, LimitName, LimitResultOf } from "./answers.js";
import type { DecisionHook } from "./decision-hook.js";
import { checkStore } from "./store-shape.js";
import { core } from "./engine.js";
import { SlabStore } from "./slab-store.js";
import { InTable, intoTable } from "./slab-road.js";
import { compileNamed, resolveLimit, type Internals } from "./limits.js";
import { hooked } from "./decided.js";
import { batchCall } from "./batch-call.js";
import { settleGrant } from "./granting.js";
import { resetKey, valueOf } from "./state-calls.js";
import { deleteLimit, getLimit, setLimit, type StoredLimit, type StoredLimitOptions } from "./stored-limits.js";
import { Leases, type ConcurrencyValue, type Lease } from "./leasing.js";
import { checkCall, decide, type Road } from "./enforce.js";

// Waiting for a turn (acquire.ts), loaded by the first acquire.
const waits = () => import("./acquire.js");
const OPTIONS = ["now", "random", "onStoreError", "timeout", "refusalCache", "onDecision", "storedLimits"] as const;

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
export class RateLimiter<Limits extends Record<string, NamedLimitConfig> = Record<string, never>, Policy extends StoreErrorPolicy = StoreErrorPolicy> {
  readonly #now: () => number;
  /** Named limits, compiled once. */
  readonly #limits: ReadonlyMap<string, Compiled>;
  /** Named concurrency limits, and the calls on them. */
  readonly #leases: Leases;
  /** Told of every decided call (`onDecision`), when asked for. */
  readonly #onDecision: DecisionHook | undefined;
  /** What the modules that run its batches and grants take of it. */
  readonly #internals: Internals;
  /** What `limit` and `check` take of it (`enforce.ts`). */
  readonly #road: Road;

  /**
   * @param store The host's persistence: `read(ref)` and `write(ref, state | null)` (see `RateLimitStore`).
   * @param limits Named limit configs, validated now (a bad one throws naming it and the field).
   * @param options `now` and `random`, for tests and replays; `onStoreError` and `timeout`
   *   (see {@link FailureOptions}); `refusalCache` to repeat a store's refusal locally until its
   *   wait is over (see {@link RefusalCacheOption}); `onDecision` to be told of every decided
   *   call, for metrics (see {@link DecisionEvent}; `ratebound/otel` records them); `storedLimits:
   *   true` to decide every call on a named limit on the limit stored in the store for its key or
   *   name, when there is one (see {@link RateLimiter.setLimit}).
   */
  constructor(
    store: RateLimitStore,
    limits: Limits = {} as Limits,
    options: RateLimiterOptions & FailureOptions & { onStoreError?: Policy; refusalCache?: RefusalCacheOption; onDecision?: DecisionHook; storedLimits?: boolean } = {},
  ) {
    // The failure policy (`onStoreError`, `timeout`) takes its fields off the limits and the options
    // (own fields only): every store call goes through it.
    const failure = new FailurePolicy(store, limits, options, RateLimiter);
    const checkedStore = checkStore(store);
    const [now, random, , , refusalCache, onDecision, storedLimits] = ownOptions("RateLimiter", options, OPTIONS);
    if (storedLimits !== undefined && typeof storedLimits !== "boolean") throw wrongArgument("RateLimiter", "storedLimits", mustBe("storedLimits", "a boolean", storedLimits));
    const stored = storedLimits === true;
    if (stored && typeof core.rb_limit_resolve !== "function") {
      throw wrongArgument("RateLimiter", "storedLimits", "storedLimits needs the full module (ratebound.wasm): the browser's small one decides on the config in code only");
    }
    // A store that decides next to its data reads stored limits in the same round trip only when it checks them.
    const remote = typeof store.decide === "function" && (!stored || store.checksStoredLimits === true);
    const direct = !remote && typeof store.transaction !== "function";
    // The one-crossing road decides on the config in code: a limiter that reads stored limits takes the general one.
    const slab = direct && store instanceof SlabStore && !stored;
    const refusals = RefusalCache.from(refusalCache);
    if (onDecision !== undefined && typeof onDecision !== "function") throw wrongArgument("RateLimiter", "onDecision", mustBe("onDecision", "a function", onDecision));
    this.#onDecision = onDecision as DecisionHook | undefined;
    for (const [field, value] of [["now", now], ["random", random]] as const) {
      if (value !== undefined && typeof value !== "function") throw wrongArgument("RateLimiter", field, mustBe(field, "a function", value));
    }
    this.#now = (now as (() => number) | undefined) ?? Date.now;
    this.#internals = {
      failure,
      remote,
      storedLimits: stored,
      refusals,
      random: random as Random,
      now: () => this.#now(),
      call: (name, given, config, write) => checkCall(this.#internals, this.#limits, name, given, config, write),
      resolve: (name, config) => resolveLimit(this.#limits, this.#leases, name, config),
    };
    // A concurrency limit goes to its own calls (`leasing.ts`); on a slab, every other one's config
    // goes into the core's config table now, once.
    this.#leases = new Leases(this.#internals);
    this.#limits = compileNamed(failure.limits as unknown, this.#leases);
    const inTable = new InTable();
    if (slab) intoTable(this.#limits, inTable);
    const settle = (data: GrantData, actual: number, inline: SettleOptions | undefined) => this.settle(data, actual, inline);
    this.#road = { internals: this.#internals, store: checkedStore, direct, slab, inTable, leases: this.#leases, settle };
  }

  /**
   * The names of the limits given to the constructor, in their order (inline limits are not listed).
   *
   * @example
   * if (!limiter.limitNames.includes(name)) throw new Error(`no limit ${name}`);
   */
  get limitNames(): readonly string[] {
    return [...this.#limits.keys(), ...this.#leases.names];
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
    if (hook === undefined) return decide(this.#road, name, options, write, undefined);
    return hooked(hook, write, (recorded) => decide(this.#road, name, options, write, recorded));
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
  settle(data: GrantData, actual: number, options?: SettleOptions): Promise<SettleResult> {
    return settleGrant(this.#internals, data, actual, options);
  }

  /** A concurrency limit's lease from its data (`lease.toJSON()`), to release or extend it here (`ts/core/leasing.ts`). */
  lease(data: unknown): Lease {
    return this.#leases.lease(data);
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
    if (hook === undefined) return batchCall(this.#internals, requests, options, write, undefined);
    return hooked(hook, write, (recorded) => batchCall(this.#internals, requests, options, write, recorded));
  }

  /**
   * Waits for the call's turn: reserves `count` tokens (within the limit's `maxReserved`; a
   * refused reservation, or a limit without any, is decided again when the core says it can
   * pass) and resolves once the wait the core answered is over, never earlier by the limiter's
   * clock. With `maxWait`, a turn that would come later rejects with `WAIT_TOO_LONG` and charges
   * nothing; with `signal`, an abort rejects with `ABORTED` and gives the reservation back (both
   * take the reservation as a grant, to give it back). See docs/outbound.md.
   *
   * @param name A named limit, or any name with an inline `config`.
   * @param options `key`, `count`, `maxWait` (ms), `signal`, `grant: true` for a grant to settle, `config`.
   * @returns `{ waited }` (ms), with `grant` when asked; on a concurrency limit `{ waited, lease }`.
   * @example
   * await limiter.acquire("github", { key: "api.github.com", maxWait: 30_000 });
   * const response = await fetch("https://api.github.com/rate_limit");
   */
  acquire<const Options extends AcquireOptions = {}, const Name extends LimitName<Limits, Options> = LimitName<Limits, Options>>(
    name: Name,
    options?: Options,
  ): Promise<AcquireResultOf<Limits, Name, Options>> {
    const leased = this.#leases.acquire(this as never, this.#now, name, options);
    if (leased !== undefined) return leased as never;
    return waits().then(({ acquire }) => acquire(this as unknown as Reserving, this.#now, name, options)) as Promise<AcquireResultOf<Limits, Name, Options>>;
  }

  /**
   * {@link RateLimiter.acquire} on several limits, all or none: the turn comes when every limit
   * allows it (the longest wait), and nothing is held while another limit refuses.
   *
   * @param requests The limits, each with its own `key` and `count`.
   * @param options `maxWait` (ms), `signal`, `grant: true` for one grant per limit.
   * @returns `{ waited }` (ms), with `grants` (in the order asked) when asked.
   * @example
   * const { grants } = await limiter.acquireAll([{ name: "requests" }, { name: "tokens", count: 2_000 }], { grant: true });
   */
  acquireAll<const Options extends AcquireAllOptions = {}>(
    requests: ReadonlyArray<AcquireRequest<Named<Limits>> | (AcquireRequest & Inline)>,
    options?: Options,
  ): Promise<AcquireAllAnswer<Options>> {
    return waits().then(({ acquireAll }) => acquireAll(this as unknown as Reserving, this.#now, requests, options)) as Promise<AcquireAllAnswer<Options>>;
  }

  /**
   * The limit's current value, to show or to project forward with {@link calculateRateLimit}.
   *
   * @param name A named limit, or any name with an inline `config`.
   * @param options `key`, `sampleShards`, `config`.
   * @returns `{ value, ts, shard, config }` for the whole limit; on a concurrency limit `{ held, max, ts }`.
   * @example
   * const { value, ts, config } = await limiter.getValue("sendMessage", { key: userId });
   * const inAMinute = calculateRateLimit({ value, ts }, config, Date.now() + MINUTE);
   */
  getValue<const Options extends GetValueOptions & Partial<Inline> = {}, const Name extends LimitName<Limits, Options> = LimitName<Limits, Options>>(
    name: Name,
    options?: Options,
  ): Promise<ValueResultOf<Limits, Name, Options>> {
    return (this.#leases.value(name, options) ?? valueOf(this.#internals, name, options)) as Promise<ValueResultOf<Limits, Name, Options>>;
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
  reset(name: string, options?: ResetOptions): Promise<void> {
    return this.#leases.reset(name, options) ?? resetKey(this.#internals, name, options);
  }

  /**
   * Stores a limit for a named limit in the store itself: for one `key` (a customer), or for the
   * whole name. Every limiter over that store made with `storedLimits: true` decides its next
   * call on it (the key's, else the name's, else the config in code), read with the states in
   * the same round trip. It changes `rate`, `period`, `capacity` and `maxReserved`; `kind`,
   * `shards` and `start` must stay those in code (`INVALID_CONFIG` otherwise). The states are
   * kept: a bucket keeps its tokens, up to the new capacity.
   *
   * @param name A named limit.
   * @param config The limit, checked as configs in code are.
   * @param options `key`: the key's own limit; absent: the whole name's.
   * @example
   * await limiter.setLimit("api", { kind: "token bucket", rate: 1_000, period: MINUTE }, { key: "acme" });
   */
  setLimit(name: Named<Limits>, config: RateLimitConfig, options?: StoredLimitOptions): Promise<void> {
    return setLimit(this.#internals, name, config, options);
  }

  /**
   * The limit a call on `name` with `options.key` decides on now, and where it comes from
   * (`"key"`, `"name"` or `"code"`).
   *
   * @param name A named limit.
   * @param options `key`.
   * @returns `{ config, source }`.
   * @example
   * const { config, source } = await limiter.getLimit("api", { key: "acme" });
   */
  getLimit(name: Named<Limits>, options?: StoredLimitOptions): Promise<StoredLimit> {
    return getLimit(this.#internals, name, options);
  }

  /**
   * Deletes the limit stored for `options.key` (or for the whole name): its calls decide on the
   * name's stored limit, else the config in code, from their next call. The states are kept.
   *
   * @param name A named limit.
   * @param options `key`.
   * @example
   * await limiter.deleteLimit("api", { key: "acme" });
   */
  deleteLimit(name: Named<Limits>, options?: StoredLimitOptions): Promise<void> {
    return deleteLimit(this.#internals, name, options);
  }
}
