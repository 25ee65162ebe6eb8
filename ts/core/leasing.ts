/**
 * A limiter's calls on its concurrency limits: `limit` takes slots and
 * answers a {@link Lease}; the lease releases or extends them. Each runs in
 * the store's transaction (the limiter's `transact`, in the key's lane on a
 * store whose calls are coalesced), and fails closed: a store that fails
 * fails the call, whatever the limit's `onStoreError`.
 * @module
 */
import { checkCount, checkKey, checkName, checkNow, drawMany } from "./call.js";
import { laneOf } from "./coalesce.js";
import { checkSlots, compileConcurrency, decidesSlots, deleteSlots, heldSlots, extendSlots, isConcurrency, releaseSlots, takeSlots, type ConcurrencyCompiled, type LeaseData } from "./concurrency.js";
import { mustBe, wrongArgument } from "./errors.js";
import { checkOptions, refusal } from "./options.js";
import type { Internals } from "./limits.js";
import type { RateLimitResult, RateLimitStore } from "./types.js";
import type { Leasing } from "./acquire-lease.js";

/**
 * Slots held until {@link Lease.release} or until `expiresAt` (ms), whichever
 * comes first: a holder that crashes never leaks them.
 *
 * @example
 * ```ts
 * // fragment: a limiter with limits { exports: { kind: "concurrency", max: 4, lease: 30_000 } }
 * const answer = await limiter.limit("exports", { key: teamId });
 * if (!answer.ok) return retryIn(answer.retryAfter);
 * try {
 *   await runExport();
 * } finally {
 *   await answer.lease.release();
 * }
 * ```
 */
export class Lease {
  /** The lease's id (the slots hold it). */
  readonly id: number;
  /** The slots it holds. */
  readonly slots: readonly number[];
  /** When it expires unless extended, in ms (moved by {@link Lease.extend}). */
  expiresAt: number;
  readonly #data: LeaseData;
  readonly #limiter: Internals;
  readonly #limit: ConcurrencyCompiled;

  constructor(limiter: Internals, limit: ConcurrencyCompiled, data: LeaseData, expiresAt: number) {
    this.id = data.id;
    this.slots = Object.freeze([...data.slots]);
    this.expiresAt = expiresAt;
    this.#data = data;
    this.#limiter = limiter;
    this.#limit = limit;
  }

  /**
   * Gives the slots back. A second release, or one after the lease expired,
   * gives back nothing (another holder may have the slots now).
   *
   * @returns How many slots it gave back.
   */
  release(): Promise<{ released: number }> {
    const now = this.#limiter.now();
    return this.#transact((store) => releaseSlots(store, this.#limit, this.#data, now)).then((released) => ({ released }));
  }

  /**
   * Keeps the slots until `ms` from now at least (never shortens the lease).
   *
   * @param ms How long from now, in ms: a positive finite number.
   * @returns The new expiry; rejects with `LEASE_LOST` when the lease holds no slot any more.
   */
  extend(ms: number): Promise<{ expiresAt: number }> {
    const now = this.#limiter.now();
    return this.#transact((store) => extendSlots(store, this.#limit, this.#data, now, ms)).then((expiresAt) => {
      this.expiresAt = expiresAt;
      return { expiresAt };
    });
  }

  /** The lease's data (name, key, id, slots): all another process needs to hold it. */
  toJSON(): LeaseData {
    return this.#data;
  }

  #transact<T>(work: (store: RateLimitStore) => T | Promise<T>): Promise<T> {
    return onStore(this.#limiter, this.#data.name, this.#data.key, work);
  }
}

/**
 * A handle on a lease from its data (`lease.toJSON()`, through JSON or another process): its
 * `release` and `extend` work as the original's. The data's shape is checked here; its id and
 * slots by the core when it releases or extends (a forged lease gives back nothing).
 *
 * @param limiter The limiter's internals.
 * @param limits The limiter's concurrency limits.
 * @param data What `toJSON()` answered.
 * @returns The handle (its `expiresAt` unknown: NaN until it extends).
 */
export function leaseOf(limiter: Internals, limits: ReadonlyMap<string, ConcurrencyCompiled>, data: unknown): Lease {
  const given = (typeof data === "object" && data !== null ? data : {}) as Record<string, unknown>;
  const name = given.name;
  const limit = typeof name === "string" ? limits.get(name) : undefined;
  if (limit === undefined) throw wrongArgument("lease", "data", mustBe("data.name", "the name of one of the limiter's concurrency limits", name));
  const key = checkKey(name as string, given.key ?? undefined);
  const { id, slots } = given;
  if (typeof id !== "number") throw wrongArgument("lease", "data", mustBe("data.id", "a number", id));
  if (!Array.isArray(slots) || slots.length > 64 || !slots.every((slot) => typeof slot === "number")) {
    throw wrongArgument("lease", "data", mustBe("data.slots", "an array of at most 64 slot numbers", slots));
  }
  return new Lease(limiter, limit, { name: name as string, key, id, slots: [...(slots as number[])] }, Number.NaN);
}

/**
 * Runs `work` on the limiter's store, closed: a store that decides concurrency next to its data
 * gets the call itself (one round trip, `decideSlots`: Redis); any other runs it in its
 * transaction (PostgreSQL's too, until it has a port).
 */
function onStore<T>(limiter: Internals, name: string, key: string | undefined, work: (store: RateLimitStore) => T | Promise<T>): Promise<T> {
  const lanes = [laneOf(name, key)];
  if (!limiter.remote) return limiter.failure.transact(work, lanes);
  const direct = (store: RateLimitStore): T | Promise<T> => (decidesSlots(store) || typeof store.transaction !== "function" ? work(store) : store.transaction(async (inside) => work(inside)));
  return limiter.failure.run("closed", direct, undefined, true, lanes);
}

/** What `getValue` answers on a concurrency limit: `held` of its `max` slots are held at `ts` (ms). */
export interface ConcurrencyValue {
  /** Slots held at `ts`. */
  held: number;
  /** The limit's slots. */
  max: number;
  /** When, in ms since the epoch. */
  ts: number;
}

/** What `limit` answers on a concurrency limit. */
export type LeaseResult = { ok: true; lease: Lease } | (RateLimitResult & { ok: false });

/** The options a concurrency limit's `limit` takes (`figures`, which the HTTP guard asks, answers none yet). */
const LEASE_OPTIONS = ["key", "count", "throws", "figures"];

/** Two draws as a lease id: an integer from 1 to 2^53 (53 random bits). */
function leaseId(limiter: Internals): number {
  const [high, low] = drawMany(limiter.random, 2) as [number, number];
  return Math.floor(high * 2 ** 21) * 2 ** 32 + Math.floor(low * 2 ** 32) + 1;
}

/**
 * `check` on a concurrency limit: whether `count` slots (1 by default) are free now, writing nothing.
 *
 * @param limiter The limiter's internals.
 * @param name The limit's name.
 * @param limit The compiled limit.
 * @param options `key`, `count`, `throws`.
 * @returns `{ ok: true }`, or the wait until enough slots can be free.
 */
function checkCall(limiter: Internals, name: string, limit: ConcurrencyCompiled, options: unknown): Promise<RateLimitResult> {
  try {
    if (options !== undefined) checkOptions(name, options, LEASE_OPTIONS);
    const given = (options ?? {}) as { key?: unknown; count?: unknown; throws?: unknown };
    const key = checkKey(name, given.key);
    const count = checkCount(name, given.count);
    const now = checkNow(name, limiter.now());
    return onStore(limiter, name, key, (store) => checkSlots(store, name, key, limit, count, now)).then((result) => refusal(name, result, given.throws === true));
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * `limit` on a concurrency limit: takes `count` slots (1 by default) for a new lease.
 *
 * @param limiter The limiter's internals.
 * @param name The limit's name.
 * @param limit The compiled limit.
 * @param options `key`, `count`, `throws`.
 * @returns The lease, or the wait until enough slots can be free.
 */
export function leaseCall(limiter: Internals, name: string, limit: ConcurrencyCompiled, options: unknown): Promise<LeaseResult> {
  try {
    if (options !== undefined) checkOptions(name, options, LEASE_OPTIONS);
    const given = (options ?? {}) as { key?: unknown; count?: unknown; throws?: unknown };
    const key = checkKey(name, given.key);
    const count = checkCount(name, given.count);
    const now = checkNow(name, limiter.now());
    const id = leaseId(limiter);
    return onStore(limiter, name, key, (store) => takeSlots(store, name, key, limit, count, id, now)).then((taken) => {
      if (!taken.ok) return refusal(name, taken, given.throws === true) as LeaseResult;
      return { ok: true as const, lease: new Lease(limiter, limit, taken.data, taken.expiresAt) };
    });
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * A limiter's concurrency limits, and the routing of its calls to them: the limiter hands each
 * named config to {@link Leases.adopt} and each call on a name to the matching method here
 * first; `undefined` means the name is not a concurrency limit and the limiter's token path
 * takes it.
 */
export class Leases {
  readonly #limits = new Map<string, ConcurrencyCompiled>();
  readonly #limiter: Internals;

  constructor(limiter: Internals) {
    this.#limiter = limiter;
  }

  /**
   * Compiles a named config when it is a concurrency limit.
   *
   * @returns Whether it was one (and is held here).
   */
  adopt(name: string, config: unknown): boolean {
    if (!isConcurrency(config)) return false;
    this.#limits.set(checkName(name), compileConcurrency(name, config as object));
    return true;
  }

  /** The concurrency limits' names, in their order. */
  get names(): IterableIterator<string> {
    return this.#limits.keys();
  }

  /** Whether `name` is one of the concurrency limits. */
  has(name: unknown): boolean {
    return typeof name === "string" && this.#limits.has(name);
  }

  /** `limit` (write) or `check` on a concurrency limit; `undefined` for any other name. */
  decide(name: string, options: unknown, write: boolean): Promise<RateLimitResult> | undefined {
    const limit = this.#limits.get(name);
    if (limit === undefined) return undefined;
    return write ? (leaseCall(this.#limiter, name, limit, options) as Promise<RateLimitResult>) : checkCall(this.#limiter, name, limit, options);
  }

  /** `getValue`'s and `reset`'s options (only `key`), checked, and the clock's now. */
  #keyAndNow(name: string, options: unknown): { key: string | undefined; now: number } {
    if (options !== undefined) checkOptions(name, options, ["key"]);
    return { key: checkKey(name, (options as { key?: unknown } | undefined)?.key), now: checkNow(name, this.#limiter.now()) };
  }

  /** `getValue` on a concurrency limit: the slots held now; `undefined` for any other name. */
  value(name: string, options: unknown): Promise<ConcurrencyValue> | undefined {
    const limit = this.#limits.get(name);
    if (limit === undefined) return undefined;
    try {
      const { key, now } = this.#keyAndNow(name, options);
      return onStore(this.#limiter, name, key, (store) => heldSlots(store, name, key, limit, now)).then((held) => ({ held, max: limit.max, ts: now }));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** `reset` on a concurrency limit: deletes the key's slots; `undefined` for any other name. */
  reset(name: string, options: unknown): Promise<void> | undefined {
    const limit = this.#limits.get(name);
    if (limit === undefined) return undefined;
    try {
      const { key, now } = this.#keyAndNow(name, options);
      return onStore(this.#limiter, name, key, (store) => deleteSlots(store, name, key, limit, now));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** `acquire` on a concurrency limit (through the limiter's own `limit`); `undefined` for any other name. */
  acquire(limiter: Leasing, clock: () => number, name: string, options: object | undefined): Promise<{ waited: number; lease: Lease }> | undefined {
    if (!this.#limits.has(name)) return undefined;
    return import("./acquire-lease.js").then(({ acquireLease }) => acquireLease(limiter, clock, name, options));
  }

  /** A lease from its data (`lease.toJSON()`), see {@link leaseOf}. */
  lease(data: unknown): Lease {
    return leaseOf(this.#limiter, this.#limits, data);
  }
}
