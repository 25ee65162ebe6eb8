/**
 * The `RateLimiter` class: named limits over a host store, decided by the core.
 * @module
 */
import { RateLimiterCore } from "../wasm/ratebound.js";
import type { RateLimitConfig, RateLimiterOptions, RateLimitResult, RateLimitStore, RateLimitValue } from "../wasm/ratebound.js";
import type { GrantData, SettleResult } from "../wasm/ratebound.js";
import { MemoryStore } from "../stores/memory.js";
import { withHandle, type GrantResult } from "./grant.js";
import {
  BATCH_OPTIONS,
  RESET_OPTIONS,
  SETTLE_OPTIONS,
  SHORT_KEY_UNITS,
  VALUE_OPTIONS,
  checkedOptions,
  decoded,
  limitFields,
  own,
  refusal,
  wellFormed,
  type BatchRequest,
  type GetValueOptions,
  type Inline,
  type LimitFields,
  type LimitOptions,
  type Named,
  type ResetOptions,
  type SettleOptions,
} from "./options.js";
import { checkOptions } from "../wasm/ratebound.js";
import { FailurePolicy, withoutPolicy, type FailureOptions, type LimitConfig } from "./failure-policy.js";
import { ownField } from "./store-call.js";

/**
 * Rate limits over a host store: every call reads at most two shard states,
 * decides in WebAssembly, and writes only what a granted limit changed.
 *
 * @typeParam Limits The named limits; their names are type-checked.
 * @example
 * const limiter = new RateLimiter(new MemoryStore(), {
 *   sendMessage: { kind: "token bucket", rate: 10, period: MINUTE, capacity: 3 },
 * });
 * const { ok, retryAfter } = await limiter.limit("sendMessage", { key: userId });
 */
export class RateLimiter<Limits extends Record<string, LimitConfig> = Record<string, never>> {
  readonly #core: RateLimiterCore;
  /** What a call does when the store fails (`onStoreError`, `timeout`): every store call goes through it. */
  readonly #failure: FailurePolicy;
  readonly #store: RateLimitStore;
  readonly #now: () => number;
  /** The store, when it is a MemoryStore: named limits are then decided on its slab directly. */
  readonly #memory: MemoryStore | undefined;
  /** Named limits' indexes in the core. */
  readonly #indexes = new Map<string, number>();
  /** Named limits' shard counts, by index, for those with more than one. */
  readonly #shardCounts = new Map<number, number>();

  /**
   * @param store The host's persistence: `read(ref)` and `write(ref, state | null)`.
   * @param limits Named limit configs, validated now (a bad one throws naming it and the field).
   * @param options `now` and `random`, for tests and replays; `onStoreError` and `timeout`
   *   (see {@link FailureOptions}).
   */
  constructor(store: RateLimitStore, limits: Limits = {} as Limits, options: RateLimiterOptions & FailureOptions = {}) {
    // The failure policy takes its fields off the limits and the options (own fields only);
    // the core checks the store's shape, every limit, and the rest of the options.
    this.#failure = new FailurePolicy(store, limits, options, RateLimiter);
    this.#core = new RateLimiterCore(store, this.#failure.limits, this.#failure.options);
    this.#store = store;
    this.#now = (options === undefined ? undefined : own<() => number>(options, "now")) ?? Date.now;
    if (store instanceof MemoryStore) {
      this.#memory = store;
      this.#core.useSlab(store.slab);
      for (const name of Object.keys(limits)) {
        const index = this.#core.limitIndex(name);
        this.#indexes.set(name, index);
        const shards = this.#core.shardCount(index);
        if (shards > 1) this.#shardCounts.set(index, shards);
      }
    }
  }

  /**
   * Decides on the MemoryStore's slab when the call is the common case (a
   * named limit, a plain key, a number count, a boolean reserve); `undefined`
   * sends every other call down the general path, which validates it.
   */
  #onSlab(name: string, given: LimitFields, write: boolean): RateLimitResult | undefined {
    const memory = this.#memory;
    const index = this.#indexes.get(name);
    if (memory === undefined || index === undefined || given.config !== undefined) return undefined;
    // Only an absent field takes the default: null must reach the core's checks.
    const { key } = given;
    const count = given.count === undefined ? 1 : given.count;
    const reserve = given.reserve === undefined ? false : given.reserve;
    if (typeof count !== "number" || typeof reserve !== "boolean") return undefined;
    if (key !== undefined && (typeof key !== "string" || key.length > SHORT_KEY_UNITS || !wellFormed(key))) return undefined;
    const now = this.#now();
    if (typeof now !== "number") return undefined;
    let base = memory.blockOf(name, key);
    if (base < 0 && write) memory.makeRoom(now);
    // A block made by writes through the store's callbacks may hold fewer shards.
    const shards = this.#shardCounts.get(index) ?? 1;
    if (base >= 0 && shards > 1) base = memory.blockWith(name, key, base, shards);
    const answer = this.#core.decideInSlab(index, base, count, reserve, now, write);
    if (base < 0 && write) {
      const allocated = this.#core.takeAllocatedBase();
      if (allocated >= 0) memory.adopt(name, key, allocated);
    }
    return decoded(answer);
  }

  /**
   * Consumes `count` tokens if the limit allows, and writes its new state.
   *
   * @param name A named limit, or any name with an inline `config`.
   * @param options `key`, `count`, `reserve`, `throws`, `config`, and `grant: true` for a handle.
   * @returns `{ ok: true, retryAfter? }` (retryAfter when reserved) or `{ ok: false, retryAfter }`;
   *   with `grant: true`, a granted result also carries its {@link Grant}.
   * @example
   * const status = await limiter.limit("llmTokens", { count: 500, reserve: true });
   * if (status.ok && status.retryAfter) scheduleIn(status.retryAfter);
   */
  limit(name: Named<Limits>, options: LimitOptions & { grant: true }): Promise<GrantResult>;
  limit(name: string, options: LimitOptions & Inline & { grant: true }): Promise<GrantResult>;
  limit(name: Named<Limits>, options?: LimitOptions): Promise<RateLimitResult>;
  limit(name: string, options: LimitOptions & Inline): Promise<RateLimitResult>;
  limit(name: string, options?: LimitOptions): Promise<RateLimitResult | GrantResult> {
    return this.#decide(name, options, true);
  }

  /**
   * Settles a grant from its data (`grant.data`, stored or sent elsewhere) at
   * what was really used: gives back the unused tokens, never more than the
   * charge could still hold, or takes the extra as a reservation would. A
   * grant settles once: a second settle is a `GRANT_SETTLED` error while it
   * could still give tokens back.
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
    const config = inline === undefined ? undefined : withoutPolicy(typeof named === "string" ? named : "settle", inline);
    return await this.#transact((store) => this.#core.settle(store, data, actual, config, this.#now()));
  }

  /**
   * What {@link RateLimiter.limit} would answer now, without writing anything.
   *
   * @param name A named limit, or any name with an inline `config`.
   * @param options As for `limit`.
   * @returns The same result `limit` would give.
   * @example
   * const { ok } = await limiter.check("failedLogins", { key: userId });
   */
  check(name: Named<Limits>, options?: LimitOptions): Promise<RateLimitResult>;
  check(name: string, options: LimitOptions & Inline): Promise<RateLimitResult>;
  check(name: string, options?: LimitOptions): Promise<RateLimitResult> {
    return this.#decide(name, options, false);
  }

  /**
   * Runs one call against the store: inside `store.transaction` when the host
   * has one (the call then sees one consistent snapshot and commits all its
   * writes or none), else directly.
   */
  #transact<T>(call: (store: RateLimitStore) => T | Promise<T>): Promise<T> {
    return this.#failure.transact(call); // fails closed whatever the policy; bounded by the timeout
  }

  /** `limit` (write) or `check`: on the slab when it can, else through the store's callbacks. */
  #decide(name: string, options: LimitOptions | undefined, write: boolean): Promise<RateLimitResult> {
    // Not an async function: on a MemoryStore this allocates one settled
    // Promise and nothing else. Every error still arrives as a rejection.
    try {
      const given = limitFields(name, options);
      if (given.grant !== undefined) return this.#granting(name, options, given, write);
      const onSlab = this.#onSlab(name, given, write);
      if (onSlab !== undefined) return Promise.resolve(refusal(name, onSlab, given.throws));
      const { key, count, reserve, throws } = given;
      const core = this.#core;
      const answer = this.#failure.decide(name, given, write, (store, config) =>
        write
          ? core.limit(store, name, key, count, reserve, config, this.#now())
          : core.check(store, name, key, count, reserve, config, this.#now()),
      );
      return answer.then((result) => refusal(name, result, throws));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** `limit` with `grant` given: through the store's callbacks, answering with a handle. */
  #granting(name: string, options: LimitOptions | undefined, given: LimitFields, write: boolean): Promise<GrantResult | RateLimitResult> {
    if (!write) checkOptions(name, options, "key,count,reserve,throws,config");
    const { key, count, reserve, config: givenConfig, throws, grant } = given;
    // A grant always fails closed: one decided on a fallback could not settle against the store.
    const config = withoutPolicy(name, givenConfig);
    const core = this.#core;
    const answer = this.#transact((store) => core.limitWithGrant(store, name, key, count, reserve, config, this.#now(), grant));
    const settler = (data: GrantData, actual: number) => this.settle(data, actual, config === undefined ? undefined : { config: config as RateLimitConfig });
    return answer.then((result) => withHandle(refusal(name, result, throws), settler));
  }

  /**
   * Consumes several limits together: all of them, or none. When any refuses,
   * nothing is written and `retryAfter` is the largest wait of the batch, so a
   * caller never holds one limit while waiting for another.
   *
   * @param requests The limits, each with its own `key`, `count`, `reserve`.
   * @param options `throws: true` to throw a {@link RateLimitError} on refusal.
   * @returns One result for the whole batch.
   * @example
   * await limiter.limitAll([{ name: "perUser", key: userId }, { name: "global" }], { throws: true });
   */
  limitAll(
    requests: ReadonlyArray<BatchRequest<Named<Limits>> | (BatchRequest & Inline)>,
    options: { throws?: boolean } = {},
  ): Promise<RateLimitResult> {
    return this.#batch(requests, options, true);
  }

  /**
   * What {@link RateLimiter.limitAll} would answer now, without writing anything.
   *
   * @param requests The limits to check together.
   * @param options `throws: true` to throw on refusal.
   * @returns One result for the whole batch.
   * @example
   * const { ok, retryAfter } = await limiter.checkAll([{ name: "x" }, { name: "y", count: 10 }]);
   */
  checkAll(
    requests: ReadonlyArray<BatchRequest<Named<Limits>> | (BatchRequest & Inline)>,
    options: { throws?: boolean } = {},
  ): Promise<RateLimitResult> {
    return this.#batch(requests, options, false);
  }

  /** `limitAll` (write) or `checkAll`, under the batch's failure policy. */
  async #batch(requests: ReadonlyArray<BatchRequest>, options: { throws?: boolean }, write: boolean): Promise<RateLimitResult> {
    const throws = own<boolean>(checkedOptions(write ? "limitAll" : "checkAll", options, BATCH_OPTIONS), "throws");
    const result = await this.#failure.batch(requests, write, (store, batch) => this.#core.limitAll(store, batch, this.#now(), write));
    return refusal(requests.map((request) => request.name).join(", "), result, throws);
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
  getValue(name: Named<Limits>, options?: GetValueOptions): Promise<RateLimitValue>;
  getValue(name: string, options: GetValueOptions & Inline): Promise<RateLimitValue>;
  async getValue(name: string, options?: GetValueOptions): Promise<RateLimitValue> {
    const checked = checkedOptions(name, options, VALUE_OPTIONS);
    const key = own(checked, "key");
    const sampleShards = own(checked, "sampleShards");
    const config = withoutPolicy(name, own(checked, "config"));
    return await this.#transact((store) => this.#core.getValue(store, name, key, sampleShards, config, this.#now()));
  }

  /**
   * Deletes the limit's state for `key` on every shard: it is full again.
   *
   * @param name A named limit, or any name with an inline `config`.
   * @param options `key`, `config`.
   * @example
   * await limiter.reset("failedLogins", { key: userId });
   */
  reset(name: Named<Limits>, options?: ResetOptions): Promise<void>;
  reset(name: string, options: ResetOptions & Inline): Promise<void>;
  async reset(name: string, options?: ResetOptions): Promise<void> {
    const checked = checkedOptions(name, options, RESET_OPTIONS);
    const key = own(checked, "key");
    const config = withoutPolicy(name, own(checked, "config"));
    await this.#transact((store) => this.#core.reset(store, name, key, config, this.#now()));
  }
}
