/**
 * When the store fails: the `onStoreError` policy (for the whole limiter or
 * per limit), the `timeout`, and the one place every store call of a
 * `RateLimiter` goes through to apply them. No token arithmetic here: a
 * degraded call is decided by the core too, on a local MemoryStore, or not
 * at all ("open").
 * @module
 */
import { invalidArgument, invalidConfig, mustBe, unknownField, wrongArgument } from "./errors.js";
import { isPlainObject } from "./options.js";
import { DRY_RUN, dryRunFlag } from "./dry-run.js";
import type { RateLimitConfig, RateLimiterOptions, RateLimitResult, RateLimitStore } from "./types.js";
import { SlabStore } from "./slab-store.js";
import type { BatchRequest, LimitConfig, StoreErrorPolicy } from "./options.js";
export type { LimitConfig, StoreErrorPolicy } from "./options.js";
import { StoreCall, ownField, plainCall, type Degraded } from "./store-call.js";
import { Lanes, laneOf } from "./coalesce.js";
import type { Call, Decided } from "./driver.js";

export { StoreTimeoutError, type Degraded } from "./store-call.js";

/**
 * The `RateLimiter` options about failures, beside `now` and `random`.
 *
 * @example
 * new RateLimiter(redisStore(client), LIMITS, { onStoreError: "closed", timeout: 250 });
 */
export interface FailureOptions {
  /** The policy of every limit that does not name its own (default `"closed"`). */
  onStoreError?: StoreErrorPolicy;
  /** Milliseconds a store call may take before it counts as a store error (`STORE_TIMEOUT`); default: no limit. */
  timeout?: number;
}



/**
 * Whether a result was decided without the store (policy `"open"` or a fallback).
 *
 * @param result What `limit`, `check`, `limitAll` or `checkAll` resolved with.
 * @returns `true` when it carries `degraded` and `cause`.
 * @example
 * const status = await limiter.limit("search", { key: ip });
 * if (isDegraded(status)) log.warn("rate limit store down", status.cause);
 */
export function isDegraded<Result extends RateLimitResult>(result: Result): result is Result & Degraded {
  const degraded = typeof result === "object" && result !== null && Object.hasOwn(result, "degraded") ? (result as { degraded?: unknown }).degraded : undefined;
  return degraded === "store-error" || degraded === "store-timeout";
}

/** A checked policy: `"closed"`, `"open"` or a fallback with its `maxKeys` filled in. */
export type Policy = "closed" | "open" | { fallback: "memory"; maxKeys: number };

/** What `onStoreError` must be, as the messages say it. */
const RULE = '"closed", "open" or { fallback: "memory", maxKeys?: number }';
/** How many names-and-keys the fallback's MemoryStore holds unless told. */
const DEFAULT_MAX_KEYS = 10_000;

/**
 * `policy` checked and normalised, as `"closed"`, `"open"` or
 * `{ fallback: "memory", maxKeys }` (`maxKeys` filled in with 10,000).
 * `limit` names the limit the policy belongs to (an `INVALID_CONFIG`);
 * `undefined` means the `RateLimiter`'s option (an `INVALID_ARGUMENT`).
 */
export function storeErrorPolicy(limit: string | undefined, policy: unknown): Policy {
  const wrong = (field: string, problem: string) => (limit === undefined ? wrongArgument("RateLimiter", field, problem) : invalidConfig(limit, field, problem));
  const whole = () => wrong("onStoreError", mustBe("onStoreError", RULE, policy));
  if (typeof policy === "string") {
    if (policy === "closed" || policy === "open") return policy;
    throw whole();
  }
  if (!isPlainObject(policy)) throw whole();
  let names: string[];
  try {
    names = Object.keys(policy);
  } catch {
    throw whole();
  }
  let fallback: unknown;
  let maxKeys: unknown;
  for (const name of names) {
    const value = policy[name];
    if (name === "fallback") fallback = value;
    else if (name === "maxKeys") maxKeys = value;
    else throw wrong(`onStoreError.${name}`, unknownField(`onStoreError.${name}`, ["fallback", "maxKeys"]));
  }
  if (fallback !== "memory") throw wrong("onStoreError.fallback", mustBe("onStoreError.fallback", '"memory"', fallback));
  if (maxKeys === undefined) return { fallback: "memory", maxKeys: DEFAULT_MAX_KEYS };
  if (typeof maxKeys !== "number" || !Number.isInteger(maxKeys) || maxKeys < 1 || maxKeys >= 2 ** 32 - 1) {
    throw wrong("onStoreError.maxKeys", mustBe("onStoreError.maxKeys", "an integer from 1 to 4294967294", maxKeys));
  }
  return { fallback: "memory", maxKeys };
}

/** What the fallback needs of a `RateLimiter`. */
export interface FallbackLimiter {
  limit(name: string, options: object): Promise<RateLimitResult>;
  check(name: string, options: object): Promise<RateLimitResult>;
  limitAll(requests: readonly object[], options: { figures: boolean }): Promise<RateLimitResult>;
  checkAll(requests: readonly object[], options: { figures: boolean }): Promise<RateLimitResult>;
}

/** The `RateLimiter` class, passed in (not imported) so the two modules do not import each other. */
export type FallbackMaker = new (store: RateLimitStore, limits: Record<string, RateLimitConfig>, options: RateLimiterOptions | undefined) => unknown;

const STRICTNESS = { closed: 2, fallback: 1, open: 0 } as const;
const strictness = (policy: Policy): number => (typeof policy === "string" ? STRICTNESS[policy] : STRICTNESS.fallback);

/** A copy of `object`'s own enumerable fields but `fields` (for the core, which refuses fields it does not know). */
function without(object: object, fields: readonly string[]): Record<string, unknown> {
  const copy: Record<string, unknown> = {};
  for (const field of Object.keys(object)) if (!fields.includes(field)) copy[field] = (object as Record<string, unknown>)[field];
  return copy;
}

/**
 * An inline config as the core takes it: `onStoreError` and `dryRun` checked and removed.
 * For calls that always fail closed (grants, settle, getValue, reset).
 */
export function withoutPolicy(name: string, config: unknown): unknown {
  return splitConfig(name, config)[0];
}

/** The config fields the driver reads and removes before the core checks the rest. */
const DRIVER_FIELDS = ["onStoreError", DRY_RUN];

/**
 * A config without its `onStoreError` and `dryRun`, that policy checked (`undefined`: none of
 * its own), and its `dryRun` checked (`undefined`: none of its own).
 */
function splitConfig(name: string, config: unknown): [unknown, Policy | undefined, boolean | undefined] {
  const found = ownField(config, "onStoreError");
  const dry = ownField(config, DRY_RUN);
  const hasPolicy = found !== undefined && found[0];
  const hasDry = dry !== undefined && dry[0];
  if (!hasPolicy && !hasDry) return [config, undefined, undefined];
  const policy = hasPolicy ? storeErrorPolicy(name, found[1]) : undefined;
  const dryRun = hasDry ? dryRunFlag(name, dry[1]) : undefined;
  try {
    return [without(config as object, DRIVER_FIELDS), policy, dryRun];
  } catch {
    return [config, policy, dryRun]; // listing it threw: the core reports the config
  }
}

/**
 * A `RateLimiter`'s failure policy: reads and strips `onStoreError` and
 * `timeout` once, at construction, and runs every store call.
 */
export class FailurePolicy {
  /** The limits as the core takes them: without `onStoreError`. */
  readonly limits: Record<string, RateLimitConfig>;
  /** The options as the core takes them: without `onStoreError` and `timeout`. */
  readonly options: RateLimiterOptions | undefined;
  readonly #store: RateLimitStore;
  readonly #default: Policy;
  readonly #named = new Map<string, Policy>();
  readonly #timeoutMs: number | undefined;
  readonly #Fallback: FallbackMaker;
  /** The largest `maxKeys` declared at construction, for the one fallback store. */
  readonly #declaredMaxKeys: number | undefined;
  #fallback: FallbackLimiter | undefined;
  /** The store's lanes when its calls are coalesced (see `coalesce.ts`). */
  readonly #lanes: Lanes | undefined;
  /** The answer of `limitPolicy` for a named limit with the limiter's policy (shared: it never changes). */
  readonly #plainPolicy: { config: unknown; policy: Policy; dryRun: boolean };
  /** The named limits whose config says `dryRun: true`. */
  readonly #dry = new Set<string>();

  /**
   * @param store The limiter's store.
   * @param limits The named limits as given (checked by the core after this).
   * @param options The limiter's options as given.
   * @param Fallback The `RateLimiter` class, for the fallback limiter.
   */
  constructor(store: RateLimitStore, limits: unknown, options: unknown, Fallback: FallbackMaker) {
    this.#store = store;
    this.#Fallback = Fallback;
    this.#lanes = typeof store === "object" && store !== null ? Lanes.of(store) : undefined;
    const [hasPolicy, policy] = ownField(options, "onStoreError") ?? [false, undefined];
    const [hasTimeout, timeout] = ownField(options, "timeout") ?? [false, undefined];
    this.#default = hasPolicy && policy !== undefined ? storeErrorPolicy(undefined, policy) : "closed";
    this.#plainPolicy = Object.freeze({ config: undefined, policy: this.#default, dryRun: false });
    if (hasTimeout && timeout !== undefined) {
      if (typeof timeout !== "number" || !(timeout > 0) || !(timeout <= 2 ** 31 - 1)) {
        throw invalidArgument("RateLimiter", "timeout", "a number of milliseconds > 0 and <= 2147483647", timeout);
      }
      this.#timeoutMs = timeout;
    }
    // The fallback limiter takes `now` and `random`; a refusal it decides is never the store's to remember.
    // Nor is its decision reported twice: the call it answers reports it (`onDecision`).
    const [hasCache] = ownField(options, "refusalCache") ?? [false];
    const [hasHook] = ownField(options, "onDecision") ?? [false];
    this.options = (
      hasPolicy || hasTimeout || hasCache || hasHook ? without(options as object, ["onStoreError", "timeout", "refusalCache", "onDecision"]) : options
    ) as RateLimiterOptions | undefined;
    this.limits = limits as Record<string, RateLimitConfig>;
    let names: string[] = [];
    try {
      if (typeof limits === "object" && limits !== null && !Array.isArray(limits)) names = Object.keys(limits);
    } catch {
      names = []; // the core reports limits it cannot list
    }
    let stripped: Record<string, unknown> | undefined;
    for (const name of names) {
      const config = (limits as Record<string, unknown>)[name];
      const [core, own, dry] = splitConfig(name, config);
      if (core === config) continue;
      if (own !== undefined) this.#named.set(name, own);
      if (dry === true) this.#dry.add(name);
      stripped ??= without(limits as object, []);
      stripped[name] = core;
    }
    if (stripped !== undefined) this.limits = stripped as Record<string, RateLimitConfig>;
    const maxKeys = [this.#default, ...this.#named.values()].flatMap((each) => (typeof each === "object" ? [each.maxKeys] : []));
    this.#declaredMaxKeys = maxKeys.length === 0 ? undefined : Math.max(...maxKeys);
  }

  /**
   * A `limit` or `check` call's policy: the limit's own (from an inline
   * config, or its named config), else the limiter's.
   *
   * @param name The limit's name.
   * @param config The call's inline config, as given.
   * @returns The config without `onStoreError` and `dryRun` (as the core takes it), the policy, and
   *   whether the limit is a dry run (an inline config's own `dryRun`, else the named limit's).
   */
  limitPolicy(name: string, config: unknown): { config: unknown; policy: Policy; dryRun: boolean } {
    const policy = this.#named.size === 0 ? this.#default : (this.#named.get(name) ?? this.#default);
    const dryRun = this.#dry.size !== 0 && this.#dry.has(name);
    if (config === undefined) return policy === this.#default && !dryRun ? this.#plainPolicy : { config, policy, dryRun };
    const [core, own, dry] = splitConfig(name, config);
    return { config: core, policy: own ?? policy, dryRun: dry ?? dryRun };
  }

  /**
   * A `limitAll` or `checkAll` batch's policy: the strictest of its limits'
   * (closed, then fallback, then open).
   *
   * @param requests The batch as given.
   * @returns The requests with configs stripped of `onStoreError` and `dryRun`, the policy, and per
   *   request whether its limit is a dry run.
   */
  batchPolicy(requests: ReadonlyArray<BatchRequest>): { requests: ReadonlyArray<BatchRequest>; policy: Policy; dryRun: boolean[] } {
    let policy: Policy | undefined;
    let core = requests;
    const dryRun: boolean[] = [];
    if (Array.isArray(requests)) {
      const copies: BatchRequest[] = [];
      for (const request of requests as unknown[]) {
        const [, name] = ownField(request, "name") ?? [false, undefined];
        const [, config] = ownField(request, "config") ?? [false, undefined];
        let each = typeof name === "string" ? (this.#named.get(name) ?? this.#default) : this.#default;
        let dry = typeof name === "string" && this.#dry.has(name);
        let copy = request as BatchRequest;
        if (config !== undefined && typeof name === "string") {
          const [stripped, own, ownDry] = splitConfig(name, config);
          if (own !== undefined) each = own;
          if (ownDry !== undefined) dry = ownDry;
          if (stripped !== config) copy = { ...without(request as object, ["config"]), config: stripped } as BatchRequest;
        }
        dryRun.push(dry);
        copies.push(copy);
        if (policy === undefined || strictness(each) > strictness(policy)) policy = each;
        else if (typeof each === "object" && typeof policy === "object" && each.maxKeys < policy.maxKeys) policy = each;
      }
      if (copies.some((copy, index) => copy !== requests[index])) core = copies;
    }
    return { requests: core, policy: policy ?? this.#default, dryRun };
  }

  /**
   * Whether a call under `policy` needs nothing of this module: it fails
   * closed and has no timeout.
   *
   * @param policy The call's policy.
   * @returns `true` when the store may be called as it is.
   */
  isPlain(policy: Policy): boolean {
    return policy === "closed" && this.#timeoutMs === undefined;
  }

  /**
   * A call that always fails closed (`getValue`, `reset`, grants), bounded by the timeout.
   *
   * @param work The call on a store.
   * @returns What the call answers.
   */
  transact<T>(work: (store: RateLimitStore) => T | Promise<T>, lanes?: readonly string[]): Promise<T> {
    return this.run("closed", work, undefined, false, lanes);
  }

  /** Whether the store's `limit` and `check` calls are coalesced ({@link FailurePolicy.coalesce}). */
  get coalesces(): boolean {
    return this.#lanes !== undefined;
  }

  /**
   * A `limit` or `check` on a coalescing store: it joins its key's next batch
   * (one transaction, decided in arrival order), and the store's failure is
   * answered by `policy`, bounded by the timeout from its arrival.
   *
   * @param call The call, checked and planned.
   * @param figures Whether its answer carries figures.
   * @param policy Its policy.
   * @param fallback The same call on the fallback limiter.
   * @returns Its decision, or its policy's answer.
   */
  coalesce(
    call: Call,
    figures: boolean,
    policy: Policy,
    fallback: (limiter: FallbackLimiter) => Promise<RateLimitResult>,
    recorded?: { batchSize: number },
  ): Promise<Decided | RateLimitResult> {
    return this.#lanes!.decide(laneOf(call.name, call.key), {
      call,
      figures,
      recorded,
      timeoutMs: this.#timeoutMs,
      recover: (error, degraded) => this.#recover(policy, error, degraded, fallback),
    });
  }

  /**
   * Runs `work` on the store under `policy`: inside the store's transaction
   * (unless `direct`: a store that decides next to its data), bounded by the
   * timeout; when the store fails and the policy allows, the answer is
   * degraded (`"open"`) or the fallback's.
   *
   * @param policy The call's policy.
   * @param work The call on a store.
   * @param fallback The same call on the fallback limiter.
   * @param direct Call the store as it is, without its transaction.
   * @param lanes On a coalescing store, the lanes of the keys the call touches: it takes its turn in each.
   * @returns The answer.
   */
  run<T>(
    policy: Policy,
    work: (store: RateLimitStore) => T | Promise<T>,
    fallback: ((limiter: FallbackLimiter) => Promise<T>) | undefined,
    direct = false,
    lanes?: readonly string[],
  ): Promise<T> {
    const owned = this.#lanes;
    const acquire = owned !== undefined && lanes !== undefined && lanes.length > 0 ? () => owned.acquire(lanes) : undefined;
    if (this.isPlain(policy)) {
      if (acquire === undefined) return plainCall(this.#store, work, direct);
      return acquire().then((release) => {
        const answer = plainCall(this.#store, work, direct);
        answer.then(release, release);
        return answer;
      });
    }
    const call = new StoreCall(this.#timeoutMs);
    const answer = call.run(this.#store, work, direct, acquire);
    if (policy === "closed" || fallback === undefined) return answer;
    return answer.catch((error: unknown) => this.#recover(policy, error, call.degradation(error), fallback));
  }

  /** A call's answer when the store failed it: the error again (closed, or not the store's), a degraded admission (open), or the fallback's. */
  #recover<T>(policy: Policy, error: unknown, degraded: Degraded["degraded"] | undefined, fallback: (limiter: FallbackLimiter) => Promise<T>): Promise<T> {
    if (degraded === undefined || policy === "closed") return Promise.reject(error);
    if (policy === "open") return Promise.resolve({ ok: true, degraded, cause: error } as T);
    return fallback(this.#fallbackLimiter(policy.maxKeys)).then(
      (result) => ({ ...result, degraded, cause: error }),
      (fallbackError: unknown) => {
        // The fallback is full (STORE_FULL) or refused the call: it fails closed, saying why it was asked.
        const found = ownField(fallbackError, "cause");
        if (found !== undefined && !found[0] && typeof fallbackError === "object" && fallbackError !== null && Object.isExtensible(fallbackError)) {
          Object.defineProperty(fallbackError, "cause", { value: error, configurable: true, writable: true });
        }
        throw fallbackError;
      },
    );
  }

  /**
   * The one fallback limiter of this limiter, made at the first fallback decision (so a limit's
   * outage state is never split). Its store is core's `SlabStore` (what `MemoryStore` is, with
   * its options checked; `maxKeys` was checked here): core never imports `ts/stores/`, and the
   * fallback decides with one crossing as a `MemoryStore` does.
   */
  #fallbackLimiter(maxKeys: number): FallbackLimiter {
    this.#fallback ??= new this.#Fallback(
      new SlabStore(Math.max(maxKeys, this.#declaredMaxKeys ?? 0)),
      this.limits,
      this.options,
    ) as FallbackLimiter;
    return this.#fallback;
  }
}
