/**
 * One attempt of an optimistic transaction, and what a host gives it: the
 * attempt reads each key once with its version, buffers its writes (and reads
 * them back), and hands both to the host's commit, which applies the writes
 * only if every version read still holds. The retry loop around attempts is
 * `optimistic.ts`'s.
 * @module
 */
import type { RateLimitState, RateLimitStore, StateRef, WriteInfo } from "ratebound";

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
  /**
   * Keys read by {@link readUnchecked} that nothing has depended on yet: not checked at commit.
   * `true`: not even once this attempt writes them (something else is checked for them).
   */
  readonly #unchecked = new Map<string, boolean>();

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
    // The caller reads it: what it does next may depend on it, so the commit checks it.
    this.#unchecked.delete(id);
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
    this.#written(this.#host.keyId(key));
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
    this.#written(this.#host.keyId(key));
    this.#writes.set(this.#host.keyId(key), { key, value: null, deleted: true });
  }

  /** A key written: checked at commit from now on, unless it was read unchecked even so. */
  #written(id: string): void {
    if (this.#unchecked.get(id) === false) this.#unchecked.delete(id);
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
    await this.#fetch(refs, "checked");
    return Promise.all(refs.map((ref) => this.read(ref)));
  }

  /**
   * Reads `refs` as {@link readMany} does, but the commit checks only those this attempt then
   * writes (or reads again through `read`, `readMany` or `get`). For a decision whose only
   * effect is to write some of the refs it read, each written one being still as read at commit
   * is what keeps it exact (a concurrency limit's take: `ts/core/concurrency.ts`); the refs it
   * only looked at cannot make it wrong, and checking them would make every other writer of
   * them a conflict (and exceed a host's bound on checks: Deno KV's 10). With `covered`, not
   * even the written ones: the caller checks a key that every writer of them changes
   * (`ts/stores/deno-kv-slots.ts`).
   *
   * @param refs The shards to read.
   * @param covered Whether the commit checks none of them, written or not.
   * @returns Their states in the order asked (`null`: none); an undecodable value as it is.
   * @example
   * const slots = await tx.readUnchecked([{ name: "jobs", key: "ada", shard: 0 }, { name: "jobs", key: "ada", shard: 1 }]);
   */
  async readUnchecked(refs: StateRef[], covered = false): Promise<(RateLimitState | null)[]> {
    await this.#fetch(refs, covered ? "covered" : "unchecked");
    const host = this.#host;
    return refs.map((ref) => {
      const id = host.keyId(this.stateKey(ref));
      const written = this.#writes.get(id);
      const value = written !== undefined ? (written.deleted ? null : written.value) : this.#reads.get(id)!.value;
      return host.decodeState(value);
    });
  }

  /** Reads the refs this attempt has neither read nor written, in one round trip when the host can, marked as `how` says. */
  async #fetch(refs: StateRef[], how: "checked" | "unchecked" | "covered"): Promise<void> {
    const unchecked = how !== "checked";
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
          if (this.#reads.has(id)) return;
          this.#reads.set(id, { key, version: entries[index]!.version, value: entries[index]!.value });
          if (unchecked) this.#unchecked.set(id, how === "covered");
        });
        return;
      }
    }
    if (!unchecked) return;
    await Promise.all(
      refs.map(async (ref) => {
        const key = this.stateKey(ref);
        const id = host.keyId(key);
        if (this.#writes.has(id) || this.#reads.has(id)) return;
        const entry = await host.read(key);
        if (this.#reads.has(id)) return;
        this.#reads.set(id, { key, version: entry.version, value: entry.value });
        this.#unchecked.set(id, how === "covered");
      }),
    );
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
   * What this attempt read (with the versions to check: not the reads {@link readUnchecked} made that
   * nothing depended on since) and what it writes, for the host's commit.
   *
   * @returns The reads and the buffered writes, in the order first made.
   * @example
   * const { reads, writes } = tx.changes();
   */
  changes(): { reads: VersionedRead<Key, Version>[]; writes: BufferedWrite<Key>[] } {
    const reads = [...this.#reads].filter(([id]) => !this.#unchecked.has(id)).map(([, read]) => read);
    return { reads, writes: [...this.#writes.values()] };
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
