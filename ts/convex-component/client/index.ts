/**
 * The app-side client of ratebound's Convex component: a drop-in for
 * `@convex-dev/rate-limiter`'s client. `new RateLimiter(components.rateLimiter, limits)`
 * with the same methods, signatures and type-checked limit names, plus
 * `limitAll` / `checkAll` for several limits in one component call, and
 * concurrency limits (`limit` answers a lease's data; `release`, `extend`).
 * @module
 */
import type { Expand, GenericDataModel } from "convex/server";
import type { ComponentApi } from "../_generated/component.js";
import type {
  GetValueReturns,
  RateLimitArgs,
  RateLimitConfig,
  RateLimitError,
  RateLimitReturns,
  GetValueArgs,
  PendingUpdate,
} from "../validators.js";

import { checkAsynchronous, limitAsynchronous } from "./asynchronous.js";
import { runStaleQuery, type ActionCtx, type MutationCtx, type QueryCtx, type RunMutationCtx, type RunQueryCtx } from "./ctx.js";
import { limitWithGrant, settleGrant, type GrantData, type GrantReturns, type SettleReturns } from "./grants.js";
import { hookAPI, type HookOpts } from "./hook.js";
import { extendLease, isConcurrencyConfig, releaseLease, takeLease, type ConcurrencyConfig, type LeaseData, type LeaseReturns } from "./leases.js";

export { calculateRateLimit, isRateLimitError, SECOND, MINUTE, HOUR, DAY, WEEK } from "ratebound";
export type { ActionCtx, ConcurrencyConfig, GrantData, GrantReturns, LeaseData, LeaseReturns, MutationCtx, QueryCtx, RunMutationCtx, RunQueryCtx, SettleReturns };

/** A named limit's config: a rate limit, or a concurrency limit (`{ kind: "concurrency", max, lease }`). */
export type LimitConfig = RateLimitConfig | ConcurrencyConfig;

/** What `limit` answers for `Name`: a lease's data on a concurrency limit, else a rate limit's result (a grant's with `grant: true`). */
export type LimitReturns<Limits, Name> = Name extends keyof Limits ? (Limits[Name] extends ConcurrencyConfig ? LeaseReturns : RateLimitReturns | GrantReturns) : RateLimitReturns | GrantReturns;
export type { ComponentApi, GetValueArgs, GetValueReturns, PendingUpdate, RateLimitArgs, RateLimitConfig, RateLimitError, RateLimitReturns };

/**
 * ratebound's options of the client (the reference's constructor takes none).
 *
 * `headroom`, per asynchronous limit, in tokens: a call is decided on the fast
 * path (a stale snapshot, no conflict) only when the limit, with everything
 * already queued for it, could grant `count + headroom`; otherwise it is decided
 * exactly, in a transaction that conflicts with the limit's other callers. A
 * burst of N callers deciding on one snapshot then overdraws by at most
 * `max(0, (N - 1) * count - headroom)` tokens (docs/convex.md: Asynchronous updates).
 * Without `headroom` the limit behaves as the reference's: it checks the stored
 * state only, and the bound is `(N - 1) * count` plus whatever is still queued.
 */
export type RateLimiterOptions<Limits> = { headroom?: Partial<Record<keyof Limits & string, number>> & Record<string, number> };

/** `Args` without `name` and `config`, and with `config` required when `Name` is not a defined limit. */
type WithKnownNameOrInlinedConfig<Limits extends Record<string, LimitConfig>, Name extends string, Args> = Expand<
  Omit<Args, "name" | "config"> &
    (Name extends keyof Limits
      ? object
      : {
          /** The rate limit's config, for a name not defined in the {@link RateLimiter}. */
          config: RateLimitConfig;
        })
>;

/** One limit of a {@link RateLimiter.limitAll} batch. */
export type BatchRequest<Limits extends Record<string, LimitConfig>> =
  | { name: keyof Limits & string; key?: string; count?: number; reserve?: boolean; config?: RateLimitConfig }
  | { name: string; key?: string; count?: number; reserve?: boolean; config: RateLimitConfig };

/**
 * Named rate limits, decided inside the `rateLimiter` component by ratebound's
 * WebAssembly core. Each call is one call into the component, in the caller's
 * transaction: a mutation that throws after `limit` gives its tokens back.
 *
 * @typeParam Limits The named limits; their names are type-checked.
 * @example
 * import { MINUTE, RateLimiter } from "ratebound/convex-component";
 * import { components } from "./_generated/api";
 *
 * const rateLimiter = new RateLimiter(components.rateLimiter, {
 *   sendMessage: { kind: "token bucket", rate: 10, period: MINUTE, capacity: 3 },
 * });
 * // in a mutation:
 * await rateLimiter.limit(ctx, "sendMessage", { key: userId, throws: true });
 */
export class RateLimiter<Limits extends Record<string, LimitConfig> = Record<never, never>> {
  /** Headroom of each asynchronous limit that has one, in tokens. */
  private readonly headroom: Record<string, number>;

  /**
   * @param component The installed component: `components.rateLimiter`.
   * @param limits Named limit configs. Each is validated by the component when it is first used.
   * @param options ratebound's: `headroom` per asynchronous limit (see {@link RateLimiterOptions}).
   * @example
   * const rateLimiter = new RateLimiter(components.rateLimiter, {
   *   llmTokens: { kind: "token bucket", rate: 40000, period: MINUTE, applyUpdates: "asynchronously" },
   * }, { headroom: { llmTokens: 4000 } });
   */
  constructor(
    public component: ComponentApi,
    public limits?: Limits,
    options: RateLimiterOptions<Limits> = {},
  ) {
    this.headroom = { ...options.headroom };
    for (const [name, tokens] of Object.entries(this.headroom)) {
      if (typeof tokens !== "number" || !(tokens >= 0) || !Number.isFinite(tokens)) {
        throw new Error(`Rate limit ${name}: headroom must be a finite number >= 0 (got ${String(tokens)})`);
      }
      const config = (limits as Record<string, LimitConfig | undefined> | undefined)?.[name];
      if (config && (isConcurrencyConfig(config) || config.applyUpdates !== "asynchronously")) {
        throw new Error(`Rate limit ${name}: headroom applies only to limits with applyUpdates: "asynchronously"`);
      }
    }
  }

  /**
   * What {@link RateLimiter.limit} would answer now, without taking anything: works in queries.
   * An asynchronous limit is checked on a stale snapshot inside a mutation; with `headroom`, the
   * check counts what is queued for the limit, as `limit` does.
   *
   * @param ctx A ctx with `runQuery`.
   * @param name A defined limit, or any name with an inline `config`.
   * @param options `key`, `count`, `reserve`, `throws` (and `config` for an undefined name).
   * @returns `{ ok: true, retryAfter? }` or `{ ok: false, retryAfter }`.
   * @example
   * const { ok, retryAfter } = await rateLimiter.check(ctx, "sendMessage", { key: userId });
   */
  async check<Name extends string = keyof Limits & string>(
    ctx: RunQueryCtx,
    name: Name,
    ...options: Name extends keyof Limits & string
      ? [WithKnownNameOrInlinedConfig<Limits, Name, RateLimitArgs>?]
      : [WithKnownNameOrInlinedConfig<Limits, Name, RateLimitArgs>]
  ): Promise<RateLimitReturns> {
    const config = this.getConfig(options[0], name);
    const args = { ...options[0], name, config };
    if (config.applyUpdates !== "asynchronously") return ctx.runQuery(this.component.lib.checkRateLimit, args);
    return checkAsynchronous(ctx, this.component, args, this.headroom[name]);
  }

  /**
   * Takes `count` tokens (default 1) if the limit allows. An asynchronous limit
   * (`applyUpdates: "asynchronously"`) is checked on a stale snapshot and its
   * consumption queued for the component's worker, as the reference does; with
   * `headroom` (see {@link RateLimiterOptions}) a call near the bottom of the
   * limit is decided exactly instead.
   *
   * On a concurrency limit (`{ kind: "concurrency", max, lease }`) it takes
   * `count` slots (default 1) for a new lease and answers its data, to
   * {@link RateLimiter.release} when the work is done (in this mutation or a
   * later one: store it, or pass it to a scheduled function); a lease not
   * released frees its slots when it expires.
   *
   * @param ctx A mutation's (or action's) ctx, with `runMutation`.
   * @param name A defined limit, or any name with an inline `config`.
   * @param options `key`, `count`, `reserve`, `throws` (and `config` for an undefined name); a concurrency limit takes `key`, `count`, `throws`.
   * @returns `{ ok: true, retryAfter? }` (retryAfter: reserved, run the work then) or `{ ok: false, retryAfter }`;
   *   on a concurrency limit `{ ok: true, lease, expiresAt }` or `{ ok: false, retryAfter }`.
   * @example
   * const status = await rateLimiter.limit(ctx, "llmTokens", { count: 500, reserve: true });
   * if (status.ok && status.retryAfter) await ctx.scheduler.runAfter(status.retryAfter, internal.llm.run, {});
   */
  async limit<Name extends string = keyof Limits & string>(
    ctx: RunMutationCtx,
    name: Name,
    ...options: Name extends keyof Limits & string
      ? [WithKnownNameOrInlinedConfig<Limits, Name, RateLimitArgs & { grant?: boolean }>?]
      : [WithKnownNameOrInlinedConfig<Limits, Name, RateLimitArgs & { grant?: boolean }>]
  ): Promise<LimitReturns<Limits, Name>> {
    const named = this.namedConfig(options[0], name);
    if (isConcurrencyConfig(named)) return takeLease(ctx, this.component, name, options[0], named) as Promise<LimitReturns<Limits, Name>>;
    return this.limitRate(ctx, name, options[0]) as Promise<LimitReturns<Limits, Name>>;
  }

  /** `limit` on a rate limit. */
  private async limitRate(ctx: RunMutationCtx, name: string, options: (RateLimitArgs & { grant?: boolean }) | object | undefined): Promise<RateLimitReturns | GrantReturns> {
    const config = this.getConfig(options, name);
    // `grant` picks the mutation; it is not one of the component's limit arguments.
    const { grant, ...given } = (options ?? {}) as RateLimitArgs & { grant?: boolean };
    const args: RateLimitArgs = { ...given, name, config };
    if (grant === true) return limitWithGrant(ctx, this.component, args);
    if (config.applyUpdates !== "asynchronously") return ctx.runMutation(this.component.lib.rateLimit, args);
    return limitAsynchronous(ctx, this.component, args, this.headroom[name]);
  }

  /**
   * Takes several limits together in one component call: all of them, or none.
   * When any refuses, nothing is written and `retryAfter` is the longest wait.
   *
   * @param ctx A mutation's (or action's) ctx.
   * @param requests The limits, each with its own `key`, `count`, `reserve` (and `config` for an undefined name).
   * @param options `throws: true` for a `ConvexError` on refusal (its `name` lists the batch's names).
   * @returns One result for the whole batch.
   * @example
   * await rateLimiter.limitAll(ctx, [{ name: "perUser", key: userId }, { name: "global" }], { throws: true });
   */
  async limitAll(
    ctx: RunMutationCtx,
    requests: ReadonlyArray<BatchRequest<Limits>>,
    options: { throws?: boolean } = {},
  ): Promise<RateLimitReturns> {
    return ctx.runMutation(this.component.lib.rateLimitAll, { requests: this.batch(requests), ...options });
  }

  /**
   * What {@link RateLimiter.limitAll} would answer now, without taking anything: works in queries.
   *
   * @param ctx A ctx with `runQuery`.
   * @param requests The limits to check together.
   * @param options `throws: true` for a `ConvexError` on refusal.
   * @returns One result for the whole batch.
   * @example
   * const { ok } = await rateLimiter.checkAll(ctx, [{ name: "perUser", key: userId }, { name: "global" }]);
   */
  async checkAll(
    ctx: RunQueryCtx,
    requests: ReadonlyArray<BatchRequest<Limits>>,
    options: { throws?: boolean } = {},
  ): Promise<RateLimitReturns> {
    return ctx.runQuery(this.component.lib.checkRateLimitAll, { requests: this.batch(requests), ...options });
  }

  /**
   * Forgets the limit's state for `key` (no key: the shared state) on every shard: it is full again.
   * A fixed window without `start` then picks a new random start.
   *
   * @param ctx A mutation's (or action's) ctx.
   * @param name The limit's name.
   * @param args `key`; `config` for an undefined asynchronous limit, whose reset is queued behind its consumption.
   * @example
   * await rateLimiter.reset(ctx, "failedLogins", { key: userId });
   */
  async reset<Name extends string = keyof Limits & string>(
    { runMutation }: RunMutationCtx,
    name: Name,
    args?: { key?: string; config?: RateLimitConfig },
  ): Promise<void> {
    const { config: inline, ...rest } = (args ?? {}) as { key?: string; config?: RateLimitConfig };
    const config = inline ?? (this.limits as Record<string, RateLimitConfig | undefined> | undefined)?.[name];
    if (config?.applyUpdates === "asynchronously") {
      await runMutation(this.component.lib.enqueueUpdates, { updates: [{ kind: "reset", key: rest.key, name }] });
    } else {
      await runMutation(this.component.lib.resetRateLimit, { ...rest, name });
    }
  }

  /**
   * The limit's value, to show or to project forward with `calculateRateLimit`.
   *
   * @param ctx A ctx with `runQuery`.
   * @param name A defined limit, or any name with an inline `config`.
   * @param options `key`, `sampleShards` (and `config` for an undefined name).
   * @returns `{ value, ts, shard, config }`; for a sharded limit `value` is the whole limit's.
   * @example
   * const { value, ts, config } = await rateLimiter.getValue(ctx, "sendMessage", { key: userId });
   */
  async getValue<Name extends string = keyof Limits & string>(
    ctx: RunQueryCtx,
    name: Name,
    ...options: Name extends keyof Limits & string
      ? [WithKnownNameOrInlinedConfig<Limits, Name, { key?: string; sampleShards?: number }>?]
      : [WithKnownNameOrInlinedConfig<Limits, Name, { key?: string; sampleShards?: number }>]
  ): Promise<GetValueReturns> {
    const config = this.getConfig(options[0], name);
    const args = { ...options[0], name, config };
    return config.applyUpdates === "asynchronously"
      ? runStaleQuery(ctx, this.component.lib.getValue, args)
      : ctx.runQuery(this.component.lib.getValue, args);
  }

  /**
   * Settles a grant (`limit` with `grant: true`) at what was used: once; never refunds above the charge.
   * @example
   * await rateLimiter.settle(ctx, args.grant, usage.totalTokens);
   */
  async settle(ctx: RunMutationCtx, grant: GrantData, actual: number, options?: { config?: RateLimitConfig }): Promise<SettleReturns> {
    return settleGrant(ctx, this.component, grant, actual, this.getConfig(options, grant.name));
  }

  /**
   * Gives a lease's slots back (its data, from `limit` on a concurrency limit), in this mutation or any later one.
   *
   * @param ctx A mutation's (or action's) ctx.
   * @param lease The lease's data.
   * @param options `config` for a limit the client does not define.
   * @returns `{ released }`: the slots given back (0 for a second release, an expired or a forged lease).
   * @example
   * await rateLimiter.release(ctx, job.lease);
   */
  async release(ctx: RunMutationCtx, lease: LeaseData, options?: { config?: ConcurrencyConfig }): Promise<{ released: number }> {
    return releaseLease(ctx, this.component, lease, this.leaseConfig(options, lease.name));
  }

  /**
   * Keeps a lease's slots until `ms` from now at least (never shortens it).
   *
   * @param ctx A mutation's (or action's) ctx.
   * @param lease The lease's data.
   * @param ms How long from now, in ms.
   * @param options `config` for a limit the client does not define.
   * @returns `{ expiresAt }`; a `ConvexError` `{ kind: "LeaseLost", code: "LEASE_LOST", name }` when the lease holds no slot any more.
   * @example
   * await rateLimiter.extend(ctx, job.lease, 30_000);
   */
  async extend(ctx: RunMutationCtx, lease: LeaseData, ms: number, options?: { config?: ConcurrencyConfig }): Promise<{ expiresAt: number }> {
    return extendLease(ctx, this.component, lease, ms, this.leaseConfig(options, lease.name));
  }

  /**
   * A public query (`getRateLimit`) that reports a limit's value to the browser,
   * and a mutation (`getServerTime`) for the browser to measure its clock's
   * offset: export both from a module of your app.
   *
   * @param name The limit the query reports (a client may ask for another by name).
   * @param options `key`: a fixed key, or a function of the ctx and the client's key; `sampleShards`.
   * @returns `{ getRateLimit, getServerTime }`.
   * @example
   * export const { getRateLimit, getServerTime } = rateLimiter.hookAPI<DataModel>("sendMessage", {
   *   key: async (ctx) => (await ctx.auth.getUserIdentity())?.subject ?? "anonymous",
   * });
   */
  hookAPI<DataModel extends GenericDataModel, Name extends string = keyof Limits & string>(
    name: Name,
    ...options: Name extends keyof Limits
      ? [WithKnownNameOrInlinedConfig<Limits, Name, HookOpts<DataModel>>?]
      : [WithKnownNameOrInlinedConfig<Limits, Name, HookOpts<DataModel>>]
  ) {
    return hookAPI<DataModel>(this, name, options[0], (limit) => this.getConfig(options[0], limit));
  }

  /** Each request with its config: inline, or the defined limit's. */
  private batch(requests: ReadonlyArray<BatchRequest<Limits>>) {
    return requests.map((request) => ({ ...request, config: this.getConfig(request, request.name) }));
  }

  /** The inline config, else the defined limit's, of either kind; neither is an error naming the limit. */
  private namedConfig(args: { config?: LimitConfig } | object | undefined, name: string): LimitConfig {
    const config =
      (args && "config" in args && (args as { config?: LimitConfig }).config) ||
      (this.limits && (this.limits as Record<string, LimitConfig | undefined>)[name]);
    if (!config) {
      throw new Error(`Rate limit ${name} not defined. You must provide a config inline or define it in the constructor.`);
    }
    return config;
  }

  /** A concurrency limit's config (inline, else the defined limit's). */
  private leaseConfig(args: { config?: ConcurrencyConfig } | undefined, name: string): ConcurrencyConfig {
    const config = this.namedConfig(args, name);
    if (!isConcurrencyConfig(config)) throw new Error(`Rate limit ${name} is not a concurrency limit: only a concurrency limit's lease is released or extended.`);
    return config;
  }

  /** A rate limit's config (inline, else the defined limit's); a concurrency limit's is an error naming the methods it has. */
  private getConfig(args: { config?: LimitConfig } | object | undefined, name: string): RateLimitConfig {
    const config = this.namedConfig(args, name);
    if (isConcurrencyConfig(config)) {
      throw new Error(`Rate limit ${name} is a concurrency limit: take a lease with limit, give it back with release (check, limitAll, getValue and reset do not apply).`);
    }
    if (config.applyUpdates === "asynchronously" && config.shards !== undefined) {
      throw new Error(`Rate limit ${name} applies updates asynchronously and can't be sharded.`);
    }
    return config;
  }
}

export default RateLimiter;
