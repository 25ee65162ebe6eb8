/**
 * ratebound over Deno KV: a transaction that reads with versionstamps and
 * commits in one `atomic()`, checking everything it read, together with the
 * application's own writes. A commit that loses the race to another client is
 * retried from the start after a jittered backoff, up to a bound; then the call
 * fails closed with a {@link KvConflictError} and nothing is written.
 *
 * Works with `Deno.Kv` (`Deno.openKv()`) and with `@deno/kv` in Node.
 * @module
 */
import { wrongArgument, type RateLimitState, type RateLimitStore, type StateRef, type WriteInfo } from "ratebound";
import { GUARD_GONE, readSlots, touchGuard } from "./deno-kv-slots.js";
import { OptimisticStore, OptimisticTransaction, runOptimistic, type OptimisticHost, type OptimisticOptions } from "./shared/optimistic.js";
import { OPTIMISTIC_OPTIONS, ownCopy } from "./shared/options.js";

/** One part of a Deno KV key. */
export type KvKeyPart = Uint8Array | string | number | bigint | boolean | symbol;
/** A Deno KV key. */
export type KvKey = readonly KvKeyPart[];

/** What ratebound uses of an atomic operation: satisfied by `Deno.AtomicOperation` and `@deno/kv`'s. */
export interface KvAtomicLike {
  /** Fails the commit unless each key still has the given versionstamp (`null`: still absent). */
  check(...checks: { key: KvKey; versionstamp: string | null }[]): KvAtomicLike;
  /** Sets a key. */
  set(key: KvKey, value: unknown, options?: { expireIn?: number }): KvAtomicLike;
  /** Deletes a key. */
  delete(key: KvKey): KvAtomicLike;
  /** Commits: `{ ok: false }` when a check failed. */
  commit(): Promise<{ ok: boolean }>;
}

/** What ratebound uses of a KV database: satisfied by `Deno.Kv` and `@deno/kv`'s `Kv`. */
export interface KvLike {
  /** Reads a key with its versionstamp (`null` when absent). */
  get(key: KvKey, options?: { consistency?: "strong" | "eventual" }): Promise<{ value: unknown; versionstamp: string | null }>;
  /** Starts an atomic operation. */
  atomic(): KvAtomicLike;
}

/** Options of {@link kvTransaction}. */
export interface KvTransactionOptions {
  /** Prepended to ratebound's keys; default `["ratebound"]`. */
  prefix?: KvKey;
  /** How many times the body runs before giving up on a contended commit; default 10. */
  maxAttempts?: number;
  /** The largest backoff before the first retry, in milliseconds; it doubles per retry. Default 2. */
  baseDelayMs?: number;
  /** The largest backoff of any retry, in milliseconds; default 200. */
  maxDelayMs?: number;
  /** Numbers in `[0, 1)` for the jitter; default: the runtime's cryptographic source. */
  random?: () => number;
  /**
   * Called after each attempt that lost the race, with the attempt (1-based) and why:
   * `"check"` when another client changed a key this one read, `"locked"` when a local
   * database file was locked by another writer.
   */
  onConflict?: (attempt: number, reason: "check" | "locked") => void;
}

/**
 * Thrown by {@link kvTransaction} when every attempt's commit lost the race:
 * fail closed, nothing was written.
 *
 * @example
 * try { await kvTransaction(kv, body); }
 * catch (error) { if (error instanceof KvConflictError) return new Response("Busy, retry", { status: 503 }); }
 * @see {@link https://github.com/ratebound/ratebound/blob/main/docs/errors.md#kv_conflict | docs/errors.md}: every code, what it means, what to do.
 */
export class KvConflictError extends Error {
  /** `"KV_CONFLICT"`. */
  readonly code = "KV_CONFLICT";
  /** How many commits were tried. */
  readonly attempts: number;

  /** @param attempts How many commits were tried. */
  constructor(attempts: number) {
    super(
      `ratebound/deno-kv: the transaction's commit lost the race to other writers ${attempts} times in a row; ` +
        "nothing was written. Retry later, or shard the limit (shards spread writers over several keys).",
    );
    this.name = "KvConflictError";
    this.attempts = attempts;
  }
}

/**
 * Thrown when Deno KV itself fails a read or a commit (a closed handle, a lost
 * connection to KV Connect, a full disk): the call fails closed with
 * `code: "KV_FAILED"`, and `cause` is what the client threw. A read that
 * failed wrote nothing; a commit that failed is Deno KV's to have applied or
 * not (its atomic commit is all or nothing either way).
 *
 * @example
 * catch (error) { if (error instanceof KvStoreError) return new Response("Unavailable", { status: 503 }); }
 * @see {@link https://github.com/ratebound/ratebound/blob/main/docs/errors.md#kv_failed | docs/errors.md}: every code, what it means, what to do.
 */
export class KvStoreError extends Error {
  /** `"KV_FAILED"`. */
  readonly code = "KV_FAILED";

  /**
   * @param operation What failed: `"read"` or `"commit"`.
   * @param cause What the Deno KV client threw.
   */
  constructor(operation: "read" | "commit", cause: unknown) {
    super(`ratebound/deno-kv: Deno KV failed a ${operation}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = "KvStoreError";
  }
}

/** What the client threw, as the call's error: a coded error as it is, anything else a {@link KvStoreError}. */
function kvFailure(operation: "read" | "commit", error: unknown): unknown {
  if (typeof error === "object" && error !== null && typeof (error as { code?: unknown }).code === "string") return error;
  return new KvStoreError(operation, error);
}

/**
 * A stable identity for a key, for the transaction's maps: each part tagged by
 * its type, so `1` and `"1"` (or `1n`) stay different keys.
 */
function keyId(key: KvKey): string {
  return JSON.stringify(
    key.map((part) => {
      if (typeof part === "string") return ["s", part];
      if (typeof part === "number") return ["n", Object.is(part, -0) ? "-0" : String(part)];
      if (typeof part === "bigint") return ["b", part.toString()];
      if (typeof part === "boolean") return ["t", part];
      if (part instanceof Uint8Array) return ["u", Array.from(part)];
      throw wrongArgument("ratebound/deno-kv", "key", `unsupported key part ${String(part)}`);
    }),
  );
}

/**
 * A state as Deno KV stores it: 16 bytes, `value` then `ts` as little-endian float64. Deno KV
 * keeps a `Uint8Array` as raw bytes (other values go through V8's serializer, whose format a
 * client on an older V8 cannot read), so every client reads it exactly: Deno of any version,
 * `@deno/kv` in Node, KV Connect.
 */
function encodeState(state: RateLimitState): Uint8Array {
  const bytes = new Uint8Array(16);
  const view = new DataView(bytes.buffer);
  view.setFloat64(0, state.value, true);
  view.setFloat64(8, state.ts, true);
  return bytes;
}

/** The state in a stored value; anything but 16 bytes is handed on as it is, for the core to judge. */
function decodeState(stored: unknown): RateLimitState | null {
  if (!(stored instanceof Uint8Array) || stored.byteLength !== 16) return stored as RateLimitState | null;
  const view = new DataView(stored.buffer, stored.byteOffset, 16);
  return { value: view.getFloat64(0, true), ts: view.getFloat64(8, true) };
}

/** How Deno KV reads, stores and commits, for the optimistic driver. */
function kvHost(kv: KvLike, prefix: KvKey): OptimisticHost<KvKey, string | null> {
  return {
    keyId,
    stateKey: (ref) => (ref.key === undefined ? [...prefix, ref.name, ref.shard] : [...prefix, ref.name, ref.key, ref.shard]),
    read: async (key) => {
      let entry: { value: unknown; versionstamp: string | null };
      try {
        entry = await kv.get(key, { consistency: "strong" });
      } catch (error) {
        throw kvFailure("read", error);
      }
      return { value: entry.value, version: entry.versionstamp };
    },
    encodeState,
    decodeState,
    commit: (tx) => commitTransaction(tx as KvTransaction),
    retryReason: (error) => retryReason(error),
  };
}

/** Commits a transaction: set by {@link KvTransaction}'s static block, so that only this module can. */
let commitTransaction: (tx: KvTransaction) => Promise<boolean>;

/**
 * One attempt of a {@link kvTransaction}: a {@link RateLimitStore} for
 * `new RateLimiter(tx, limits)`, and a buffer for the application's own reads
 * and writes. Reads see this transaction's writes; everything read is checked
 * at commit, and every write is committed in the same `atomic()`.
 *
 * A limit's state is stored at `[...prefix, name, shard]`, or
 * `[...prefix, name, key, shard]` with a key: key parts are typed values, not
 * joined strings, so distinct `(name, key, shard)` triples never share a key.
 * The value is 16 bytes (`value`, `ts`: little-endian float64), which every
 * Deno KV client reads the same. With the limiter's write hint, a state
 * expires (`expireIn`) no earlier than it is full again.
 *
 * @example
 * await kvTransaction(kv, async (tx) => {
 *   const { ok } = await new RateLimiter(tx, LIMITS).limit("post", { key: userId });
 *   if (ok) tx.set(["posts", userId, postId], post);
 *   return ok;
 * });
 */
export class KvTransaction extends OptimisticTransaction<KvKey, string | null> implements RateLimitStore {
  readonly #kv: KvLike;
  readonly #mutations: ((atomic: KvAtomicLike) => void)[] = [];
  /** The keys of the concurrency slots this attempt read through {@link readSlots}: a write to one writes their guard. */
  readonly #slots = new Set<string>();

  /**
   * @param kv The database.
   * @param prefix Prepended to ratebound's keys.
   */
  constructor(kv: KvLike, prefix: KvKey = ["ratebound"]) {
    super(kvHost(kv, prefix));
    this.#kv = kv;
  }

  /**
   * Sets `key` when the transaction commits.
   *
   * @param key Any Deno KV key.
   * @param value A value Deno KV can store.
   * @param options `expireIn` milliseconds, as for `atomic().set`.
   * @example
   * tx.set(["posts", userId, postId], { body });
   */
  override set(key: KvKey, value: unknown, options: { expireIn?: number; expireInMs?: number } = {}): void {
    const expireIn = options.expireIn ?? options.expireInMs;
    super.set(key, value, expireIn === undefined ? {} : { expireInMs: expireIn });
  }

  /**
   * Adds operations the buffer cannot express (`sum`, `enqueue`, …) to the
   * commit's `atomic()`. They are not visible to this transaction's reads.
   *
   * @param mutation Called with the atomic operation just before it commits.
   * @example
   * tx.mutate((atomic) => atomic.sum(["stats", "posts"], 1n));
   */
  mutate<Atomic extends KvAtomicLike = KvAtomicLike>(mutation: (atomic: Atomic) => void): void {
    this.#mutations.push(mutation as (atomic: KvAtomicLike) => void);
  }

  /**
   * Whether the commit has anything to do: a write or a mutation.
   *
   * @returns `false` for a check, a getValue or a refusal, which commit nothing.
   * @example
   * tx.hasChanges(); // false before any write
   */
  override hasChanges(): boolean {
    return super.hasChanges() || this.#mutations.length > 0;
  }

  /**
   * A concurrency limit's slots, for a call that writes at most `writes` of them: the commit
   * checks the slots written, or the limit key's guard (`deno-kv-slots.ts` argues why that is exact).
   *
   * @param refs The slots.
   * @param writes How many of them the call may write.
   * @returns Their states, in order.
   * @example
   * await tx.readSlots([{ name: "jobs", key: "ada", shard: 0 }], 1);
   */
  readSlots(refs: StateRef[], writes: number): Promise<unknown[]> {
    for (const ref of refs) this.#slots.add(keyId(this.stateKey(ref)));
    return readSlots(this, this.#kv, refs, writes);
  }

  /**
   * The store's write, buffered; a concurrency slot's writes its guard too.
   *
   * @param ref The shard to write.
   * @param state Its new state, or `null` to delete it.
   * @param info The decision's `now` and the state's `fullAt`.
   * @example
   * tx.write({ name: "post", key: "ada", shard: 0 }, null);
   */
  override write(ref: StateRef, state: RateLimitState | null, info?: WriteInfo): void {
    super.write(ref, state, info);
    if (this.#slots.has(keyId(this.stateKey(ref)))) touchGuard(this, ref);
  }

  static {
    commitTransaction = (tx) => tx.#commit();
  }

  /**
   * Commits every write and mutation in one `atomic()`, checking every key read.
   * (A transaction that writes nothing is not committed at all: a check, a getValue or a
   * refusal answers from its reads, each strongly consistent. Concurrent writers only take
   * tokens, so a refusal on a read that another commit has since overtaken would be a refusal
   * on the newer state too; skipping the commit spares refused requests from retrying when the
   * limit is busiest.)
   * @returns Whether it committed (`false`: another client changed a key read).
   */
  async #commit(): Promise<boolean> {
    const { reads, writes } = this.changes();
    let atomic: KvAtomicLike;
    try {
      atomic = this.#kv.atomic();
      for (const { key, version } of reads) atomic = atomic.check({ key, versionstamp: version });
      for (const write of writes) {
        if (write.deleted) atomic = atomic.delete(write.key);
        else atomic = atomic.set(write.key, write.value, write.expireInMs === undefined ? undefined : { expireIn: write.expireInMs });
      }
    } catch (error) {
      throw kvFailure("commit", error);
    }
    for (const mutation of this.#mutations) mutation(atomic);
    try {
      return (await atomic.commit()).ok;
    } catch (error) {
      throw kvFailure("commit", error);
    }
  }
}

/**
 * Whether `error` is SQLite's "database is locked": on a local database file that other
 * processes or connections write too, a read or a commit can find the file locked. Nothing was
 * committed, so it is retried like a lost race. (Any other error fails the transaction.)
 */
function isLockedDatabase(error: unknown): boolean {
  if (error instanceof KvStoreError) return isLockedDatabase(error.cause);
  return error instanceof Error && /database is locked/i.test(error.message);
}

/** Which errors of a read or a commit are a lost race, retried: a locked database file, a guard gone (`deno-kv-slots.ts`). */
function retryReason(error: unknown): "locked" | "check" | undefined {
  return isLockedDatabase(error) ? "locked" : error === GUARD_GONE ? "check" : undefined;
}

/**
 * Runs `body` as one Deno KV transaction and returns what it returns. The body
 * gets a {@link KvTransaction}: pass it to `new RateLimiter(tx, limits)` and
 * make the app's own reads and writes through it. Its writes commit together,
 * checked against every key it read, or not at all (a body that writes nothing
 * commits nothing: its reads are not checked against each other). When the
 * body throws, nothing is written; when another client
 * changed a key it read (or a local database file was locked by another
 * writer), the body runs again (with fresh reads) after a jittered exponential
 * backoff, at most `maxAttempts` times, and then {@link KvConflictError} is
 * thrown, with nothing written.
 *
 * The body may run several times: keep its side effects inside `tx`.
 *
 * @param kv `await Deno.openKv()`, or `@deno/kv`'s `openKv()`.
 * @param body The transaction: reads and writes through `tx`.
 * @param options Retry bound and backoff, key prefix, a conflict hook.
 * @returns The body's result from the attempt that committed.
 * @example
 * const LIMITS = { post: { kind: "token bucket", rate: 10, period: MINUTE } } as const;
 * const posted = await kvTransaction(kv, async (tx) => {
 *   const status = await new RateLimiter(tx, LIMITS).limit("post", { key: userId });
 *   if (status.ok) tx.set(["posts", userId, crypto.randomUUID()], { body });
 *   return status;
 * });
 */
export async function kvTransaction<T>(kv: KvLike, body: (tx: KvTransaction) => T | Promise<T>, given: KvTransactionOptions = {}): Promise<T> {
  const options = ownCopy("kvTransaction", given, ["prefix", ...OPTIMISTIC_OPTIONS]);
  return runOptimistic(() => new KvTransaction(kv, options.prefix), (tx) => commitTransaction(tx), body, driverOptions(options), KV_SETTINGS);
}

/** The driver's options from {@link KvTransactionOptions}. */
function driverOptions(options: KvTransactionOptions): OptimisticOptions {
  const { prefix: _prefix, ...rest } = options;
  return rest as OptimisticOptions;
}

const KV_SETTINGS = {
  label: "ratebound/deno-kv",
  giveUp: (attempts: number) => new KvConflictError(attempts),
  retryReason: (error: unknown) => retryReason(error),
};

/**
 * A store that makes each limiter call its own Deno KV transaction:
 * `new RateLimiter(kvStore(kv), LIMITS)`. Each `limit`, `check`, `limitAll`,
 * `checkAll`, `getValue` and `reset` reads with versionstamps and commits in
 * one checked `atomic()`, retried on a lost race like {@link kvTransaction}
 * and failing closed with {@link KvConflictError}. To commit the app's own
 * writes with the limit's, use {@link kvTransaction} instead.
 *
 * @param kv `await Deno.openKv()`, or `@deno/kv`'s `openKv()`.
 * @param options Retry bound and backoff, key prefix, a conflict hook.
 * @returns A store for `new RateLimiter(store, limits)`.
 * @example
 * const limiter = new RateLimiter(kvStore(await Deno.openKv()), { post: { kind: "token bucket", rate: 10, period: MINUTE } });
 * const { ok } = await limiter.limit("post", { key: userId });
 */
export function kvStore(kv: KvLike, given: KvTransactionOptions = {}): OptimisticStore<KvKey, string | null> {
  const options = ownCopy("kvStore", given, ["prefix", ...OPTIMISTIC_OPTIONS]);
  const prefix = options.prefix ?? ["ratebound"];
  return new OptimisticStore(kvHost(kv, prefix), driverOptions(options), {
    label: KV_SETTINGS.label,
    giveUp: KV_SETTINGS.giveUp,
    begin: () => new KvTransaction(kv, prefix),
  });
}
