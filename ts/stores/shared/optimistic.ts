/**
 * The optimistic-transaction driver, written once for every host that cannot
 * hold a lock while the core decides (Deno KV, Redis): an attempt reads each
 * key with a version, buffers its writes (and reads them back), and commits
 * them all only if nothing it read has changed. A commit that loses the race
 * reruns the whole body, with fresh reads, after a jittered exponential
 * backoff; after a bounded number of attempts the call fails closed with the
 * host's conflict error, having written nothing.
 *
 * A host supplies an {@link OptimisticHost}: how to read one key with its
 * version, how a state is stored, and a commit that checks every version read
 * and applies every buffered write, all or nothing. One attempt, and those
 * shapes, are `optimistic-transaction.ts`'s; the retry loop and the store are here.
 * @module
 */
import { invalidArgument, withJitter, type RateLimitState, type RateLimitStore, type StateRef, type WriteInfo } from "ratebound";
import { OPTIMISTIC_OPTIONS } from "./options.js";
import { OptimisticTransaction, type OptimisticHost } from "./optimistic-transaction.js";

export type { WriteInfo };
export { OptimisticTransaction };
export type { BufferedWrite, OptimisticHost, VersionedRead } from "./optimistic-transaction.js";

/** Retry bound and backoff of an optimistic transaction. */
export interface OptimisticOptions {
  /** How many times the body runs before giving up on a contended commit; default 10. */
  maxAttempts?: number;
  /** The largest backoff before the first retry, in milliseconds; it doubles per retry. Default 2. */
  baseDelayMs?: number;
  /** The largest backoff of any retry, in milliseconds; default 200. */
  maxDelayMs?: number;
  /** Numbers in `[0, 1)` for the jitter; default: the runtime's cryptographic source. */
  random?: () => number;
  /** Called after each attempt that lost the race, with the attempt (1-based) and why (`"check"`: a key read had changed). */
  onConflict?: (attempt: number, reason: string) => void;
}

/**
 * Runs `body` as one optimistic transaction and returns what it returns: a new
 * attempt each time, committed when the body resolves; a lost race reruns it
 * after a jittered exponential backoff, at most `maxAttempts` times, and then
 * rejects with `giveUp(attempts)`, nothing written. A body that throws (or a
 * read or commit that fails other than by a lost race) rejects with that
 * error, nothing written. A body that wrote nothing commits nothing (its reads
 * are each consistent, and nothing depends on them staying so).
 *
 * @param begin Makes a fresh attempt.
 * @param commit Commits an attempt: `false` when it lost the race.
 * @param body The transaction; it may run several times.
 * @param options Retry bound, backoff, jitter source, conflict hook.
 * @param settings `giveUp`: the error after the last lost race; `retryReason`: which other errors are lost races; `label` for messages.
 * @returns The body's result from the attempt that committed.
 * @example
 * const result = await runOptimistic(() => new OptimisticTransaction(host), (tx) => host.commit(tx), body, {}, {
 *   label: "my-host",
 *   giveUp: (attempts) => Object.assign(new Error(`gave up after ${attempts}`), { code: "CONFLICT" }),
 * });
 */
export async function runOptimistic<Tx extends { hasChanges(): boolean }, T>(
  begin: () => Tx,
  commit: (tx: Tx) => Promise<boolean>,
  body: (tx: Tx) => T | Promise<T>,
  options: OptimisticOptions,
  settings: { label: string; giveUp: (attempts: number) => Error; retryReason?: (error: unknown) => string | undefined },
): Promise<T> {
  // Own fields only: a caller's rest-spread copy is a plain object, whose absent
  // fields would otherwise be read from a polluted Object.prototype.
  const { maxAttempts = 10, baseDelayMs = 2, maxDelayMs = 200, onConflict, random } = ownFields(options);
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) throw invalidArgument(settings.label, "maxAttempts", "an integer >= 1", maxAttempts);
  for (const [field, value] of [["baseDelayMs", baseDelayMs], ["maxDelayMs", maxDelayMs]] as const) {
    if (typeof value !== "number" || !(value >= 0) || !Number.isFinite(value)) throw invalidArgument(settings.label, field, "a finite number >= 0", value);
  }
  for (let attempt = 1; ; attempt++) {
    const tx = begin();
    let reason = "check";
    try {
      const result = await body(tx);
      if (!tx.hasChanges() || (await commit(tx))) return result;
    } catch (error) {
      const retry = settings.retryReason?.(error);
      if (retry === undefined) throw error;
      reason = retry;
    }
    onConflict?.(attempt, reason);
    if (attempt >= maxAttempts) throw settings.giveUp(attempt);
    const backoffMs = Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1));
    await new Promise((resolve) => setTimeout(resolve, withJitter(0, backoffMs, random)));
  }
}

/**
 * A {@link RateLimitStore} over an optimistic host: `new RateLimiter(store, limits)`
 * then runs each call (`limit`, `check`, `limitAll`, `checkAll`, `getValue`,
 * `reset`) as one transaction of its own. Its `read` and `write`, called
 * directly, are one-key transactions each.
 *
 * @example
 * const limiter = new RateLimiter(new OptimisticStore(host, { maxAttempts: 10 }, giveUp), LIMITS);
 */
export class OptimisticStore<Key, Version> implements RateLimitStore {
  readonly #host: OptimisticHost<Key, Version>;
  readonly #options: OptimisticOptions;
  readonly #settings: { label: string; giveUp: (attempts: number) => Error; retryReason?: (error: unknown) => string | undefined };
  readonly #begin: () => OptimisticTransaction<Key, Version>;

  /**
   * @param host How this host reads, stores and commits.
   * @param options Retry bound and backoff.
   * @param settings `label` for messages, `giveUp` for the error after the last lost race, and
   *   `begin` when the host's attempts are a subclass of {@link OptimisticTransaction}.
   */
  constructor(
    host: OptimisticHost<Key, Version>,
    options: OptimisticOptions,
    settings: { label: string; giveUp: (attempts: number) => Error; begin?: () => OptimisticTransaction<Key, Version> },
  ) {
    this.#host = host;
    this.#options = ownFields(options);
    this.#settings = { label: settings.label, giveUp: settings.giveUp };
    this.#begin = settings.begin ?? (() => new OptimisticTransaction(host));
    const retryReason = host.retryReason?.bind(host);
    if (retryReason !== undefined) this.#settings.retryReason = retryReason;
    // Fail at construction, not on the first call, on a bad bound.
    const maxAttempts = this.#options.maxAttempts ?? 10;
    if (!Number.isInteger(maxAttempts) || maxAttempts < 1) throw invalidArgument(settings.label, "maxAttempts", "an integer >= 1", maxAttempts);
  }

  /**
   * Runs `body` as one transaction: its writes commit together, checked
   * against every key it read, or not at all; a lost race reruns it.
   *
   * @param body Reads and writes through the attempt it is given.
   * @returns The body's result from the attempt that committed.
   * @example
   * const status = await store.transaction((tx) => new RateLimiter(tx, LIMITS).limit("post", { key: userId }));
   */
  transaction<T>(body: (tx: OptimisticTransaction<Key, Version>) => T | Promise<T>): Promise<T> {
    const host = this.#host;
    return runOptimistic(this.#begin, (tx) => host.commit(tx), body, this.#options, this.#settings);
  }

  /**
   * One ref's state, read on its own.
   *
   * @param ref The shard to read.
   * @returns Its stored state, or `null`.
   * @example
   * await store.read({ name: "post", key: "ada", shard: 0 });
   */
  read(ref: StateRef): Promise<RateLimitState | null> {
    return this.transaction((tx) => tx.read(ref));
  }

  /**
   * One ref's state, written on its own.
   *
   * @param ref The shard to write.
   * @param state Its new state, or `null` to delete it.
   * @param info The decision's `now` and the state's `fullAt`, for its expiry.
   * @example
   * await store.write({ name: "post", key: "ada", shard: 0 }, null);
   */
  async write(ref: StateRef, state: RateLimitState | null, info?: WriteInfo): Promise<void> {
    await this.transaction((tx) => tx.write(ref, state, info));
  }
}

/** A null-prototype copy of the driver's own option fields: absent ones stay absent. */
function ownFields(options: OptimisticOptions): OptimisticOptions {
  const copy = Object.create(null) as Record<string, unknown>;
  for (const field of OPTIMISTIC_OPTIONS) {
    if (Object.hasOwn(options, field)) copy[field] = options[field];
  }
  return copy as OptimisticOptions;
}
