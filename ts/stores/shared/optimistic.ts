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
 * and applies every buffered write, all or nothing.
 * @module
 */
import { invalidArgument, withJitter, type RateLimitState, type RateLimitStore, type StateRef, type WriteInfo } from "ratebound";
import { OPTIMISTIC_OPTIONS } from "./options.js";

export type { WriteInfo };

/** A key read by an attempt: the version its commit checks, and the value seen. */
export interface VersionedRead<Key, Version> {
  /** The key. */
  key: Key;
  /** What the commit requires the key's version still to be (the host's notion: a versionstamp, the raw stored string, `null` for absent). */
  version: Version;
  /** The stored value as read. */
  value: unknown;
}

/** A write buffered by an attempt, applied by the commit. */
export interface BufferedWrite<Key> {
  /** The key. */
  key: Key;
  /** The value to store (unused when `deleted`). */
  value: unknown;
  /** Whether the key is deleted instead. */
  deleted: boolean;
  /** Milliseconds after which the host may drop the key (a whole number >= 1); absent: never. */
  expireInMs?: number;
}

/**
 * What a host gives the driver. `Key` is the host's key type, `Version` what
 * it checks at commit.
 *
 * @example
 * const host: OptimisticHost<string, string | null> = {
 *   keyId: (key) => key,
 *   stateKey: (ref) => `limits/${JSON.stringify([ref.name, ref.key ?? null, ref.shard])}`,
 *   read: async (key) => { const raw = await db.get(key); return { value: raw, version: raw }; },
 *   encodeState: (state) => JSON.stringify(state),
 *   decodeState: (stored) => (typeof stored === "string" ? JSON.parse(stored) : stored),
 *   commit: (tx) => db.compareAndSetAll(tx.changes()),
 * };
 */
export interface OptimisticHost<Key, Version> {
  /** A stable string identity of a key, for the attempt's maps: equal keys, equal ids; distinct keys, distinct ids. */
  keyId(key: Key): string;
  /** Where a ref's state is stored. */
  stateKey(ref: StateRef): Key;
  /** Reads one key: its stored value (`null` when absent) and the version the commit checks. */
  read(key: Key): Promise<{ value: unknown; version: Version }>;
  /** Optional: reads several keys in one round trip, answering in the order asked (as {@link read} does each). */
  readMany?(keys: Key[]): Promise<{ value: unknown; version: Version }[]>;
  /** A state as stored. */
  encodeState(state: RateLimitState): unknown;
  /** The state in a stored value; anything it cannot decode is returned as it is, so the core's CORRUPT_STATE names the ref. */
  decodeState(stored: unknown): RateLimitState | null;
  /**
   * Commits one attempt: fails unless every key in `tx.changes().reads` still has
   * its version, else applies every write, all or nothing.
   * @returns `false` when a check failed (nothing written); a rejection for any other failure.
   */
  commit(tx: OptimisticTransaction<Key, Version>): Promise<boolean>;
  /** Why an error thrown by a read or the commit is a lost race worth retrying (e.g. `"locked"`), or `undefined` to fail the call with it. */
  retryReason?(error: unknown): string | undefined;
}

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
 * The milliseconds until a written state may expire: from the limiter's hint,
 * rounded up so a key never goes before it is full again; `undefined` (keep
 * it) without a hint or when it never is full again.
 */
function expireInMs(info: WriteInfo | undefined): number | undefined {
  if (info === undefined || typeof info !== "object" || info === null) return undefined;
  const { now, fullAt } = info;
  if (typeof now !== "number" || typeof fullAt !== "number" || !Number.isFinite(now) || !Number.isFinite(fullAt)) return undefined;
  const ms = Math.ceil(fullAt - now);
  // Beyond ~285 years a TTL buys nothing and overflows some servers' clocks.
  if (!(ms <= 9e12)) return undefined;
  return Math.max(1, ms);
}

/**
 * One attempt of an optimistic transaction: a {@link RateLimitStore} for the
 * core, and a buffer for the application's own reads and writes. Reads see
 * this attempt's writes; everything read is checked at commit.
 *
 * @example
 * await store.transaction(async (tx) => {
 *   const status = await new RateLimiter(tx, LIMITS).limit("post", { key: userId });
 *   return status;
 * });
 */
export class OptimisticTransaction<Key, Version> implements RateLimitStore {
  readonly #host: OptimisticHost<Key, Version>;
  readonly #reads = new Map<string, VersionedRead<Key, Version>>();
  readonly #writes = new Map<string, BufferedWrite<Key>>();

  /** @param host How this host reads, stores and commits. */
  constructor(host: OptimisticHost<Key, Version>) {
    this.#host = host;
  }

  /**
   * The value of `key` as this attempt sees it: its own write if any, else the
   * stored one (read once, and checked at commit).
   *
   * @param key A key of the host.
   * @returns The value, or `null` when absent (or deleted by this attempt).
   * @example
   * const seen = await tx.get(tx.stateKey({ name: "post", key: "ada", shard: 0 }));
   */
  async get<T = unknown>(key: Key): Promise<T | null> {
    const id = this.#host.keyId(key);
    const written = this.#writes.get(id);
    if (written !== undefined) return written.deleted ? null : (written.value as T);
    const seen = this.#reads.get(id);
    if (seen !== undefined) return seen.value as T | null;
    const entry = await this.#host.read(key);
    // Another read of the same key may have finished while this one waited: keep the first.
    const first = this.#reads.get(id) ?? { key, version: entry.version, value: entry.value };
    this.#reads.set(id, first);
    return first.value as T | null;
  }

  /**
   * Sets `key` when the transaction commits.
   *
   * @param key A key of the host.
   * @param value A value the host can store.
   * @param options `expireInMs`: the host may drop the key after that many milliseconds.
   * @example
   * tx.set(["posts", userId, postId], { body });
   */
  set(key: Key, value: unknown, options: { expireInMs?: number } = {}): void {
    const write: BufferedWrite<Key> = { key, value, deleted: false };
    if (options.expireInMs !== undefined) write.expireInMs = options.expireInMs;
    this.#writes.set(this.#host.keyId(key), write);
  }

  /**
   * Deletes `key` when the transaction commits.
   *
   * @param key A key of the host.
   * @example
   * tx.delete(["drafts", userId, postId]);
   */
  delete(key: Key): void {
    this.#writes.set(this.#host.keyId(key), { key, value: null, deleted: true });
  }

  /**
   * The store's read: a limit's shard state, as this attempt sees it.
   *
   * @param ref The shard to read.
   * @returns Its stored state, or `null`; an undecodable value is returned as it is, for the core to reject naming the ref.
   * @example
   * const state = await tx.read({ name: "post", key: "ada", shard: 0 }); // { value: 9, ts: 1700000000000 }
   */
  async read(ref: StateRef): Promise<RateLimitState | null> {
    return this.#host.decodeState(await this.get(this.stateKey(ref)));
  }

  /**
   * The store's batched read: every ref's state as this attempt sees it, the
   * ones not seen yet fetched together (one round trip when the host has `readMany`).
   *
   * @param refs The shards to read.
   * @returns Their states in the order asked (`null`: none); an undecodable value as it is.
   * @example
   * const [first, second] = await tx.readMany([{ name: "llm", key: "ada", shard: 0 }, { name: "llm", key: "ada", shard: 3 }]);
   */
  async readMany(refs: StateRef[]): Promise<(RateLimitState | null)[]> {
    const host = this.#host;
    if (host.readMany !== undefined) {
      const unseen = new Map<string, Key>();
      for (const ref of refs) {
        const key = this.stateKey(ref);
        const id = host.keyId(key);
        if (!this.#writes.has(id) && !this.#reads.has(id)) unseen.set(id, key);
      }
      if (unseen.size > 1) {
        const keys = [...unseen.values()];
        const entries = await host.readMany(keys);
        if (!Array.isArray(entries) || entries.length !== keys.length) throw new TypeError(`readMany answered ${Array.isArray(entries) ? entries.length : typeof entries} entries for ${keys.length} keys`);
        keys.forEach((key, index) => {
          const id = host.keyId(key);
          // A read that finished meanwhile came first: keep it, as get does.
          if (!this.#reads.has(id)) this.#reads.set(id, { key, version: entries[index]!.version, value: entries[index]!.value });
        });
      }
    }
    return Promise.all(refs.map((ref) => this.read(ref)));
  }

  /**
   * The store's write: buffered until the commit. With the limiter's hint the
   * state expires no earlier than it is full again (none when `fullAt` is `Infinity`).
   *
   * @param ref The shard to write.
   * @param state Its new state, or `null` to delete it.
   * @param info The decision's `now` and the state's `fullAt`, in milliseconds.
   * @example
   * tx.write({ name: "post", key: "ada", shard: 0 }, { value: 9, ts: 1700000000000 }, { now: 1700000000000, fullAt: 1700000006000 });
   */
  write(ref: StateRef, state: RateLimitState | null, info?: WriteInfo): void {
    const key = this.stateKey(ref);
    if (state === null) return this.delete(key);
    const expire = expireInMs(info);
    this.set(key, this.#host.encodeState(state), expire === undefined ? {} : { expireInMs: expire });
  }

  /**
   * Where a ref's state is stored.
   *
   * @param ref A limit's name, key and shard.
   * @returns The host's key for it.
   * @example
   * tx.stateKey({ name: "post", key: "ada", shard: 0 });
   */
  stateKey(ref: StateRef): Key {
    return this.#host.stateKey(ref);
  }

  /**
   * What this attempt read (with the versions to check) and what it writes, for the host's commit.
   *
   * @returns The reads and the buffered writes, in the order first made.
   * @example
   * const { reads, writes } = tx.changes();
   */
  changes(): { reads: VersionedRead<Key, Version>[]; writes: BufferedWrite<Key>[] } {
    return { reads: [...this.#reads.values()], writes: [...this.#writes.values()] };
  }

  /**
   * Whether the commit has anything to do: a body that wrote nothing commits nothing.
   *
   * @returns `true` when a write is buffered (hosts with other buffered operations add theirs).
   * @example
   * if (!tx.hasChanges()) return result;
   */
  hasChanges(): boolean {
    return this.#writes.size > 0;
  }
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
