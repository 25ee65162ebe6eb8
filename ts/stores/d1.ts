/**
 * ratebound over Cloudflare D1, part of `ratebound/sqlite`. D1 has no
 * interactive transactions, so it is an optimistic host: a call reads each
 * state, decides, and commits all its writes (and the app's statements) in
 * one `batch()` whose first statements re-check every state it read; a
 * mismatch aborts the whole batch, and the call runs again after a jittered
 * backoff, up to a bound, then fails closed with {@link D1ConflictError}.
 * @module
 */
import type { RateLimitState, RateLimitStore, StateRef, WriteInfo } from "ratebound";
import { runOptimistic, type OptimisticOptions } from "./shared/optimistic.js";
import { codedError, quotedTable, refColumns, sqliteStatements, stateOf, upsertParams } from "./shared/sql.js";
import { OPTIMISTIC_OPTIONS, ownCopy } from "./shared/options.js";

/** What ratebound uses of a D1 prepared statement. */
export interface D1PreparedStatementLike {
  /** Binds the `?` parameters, in order. */
  bind(...values: unknown[]): D1PreparedStatementLike;
  /** Runs it and returns the first row, or `null`. */
  first<T = Record<string, unknown>>(): Promise<T | null>;
  /** Runs it for its effect. */
  run(): Promise<unknown>;
}

/** What ratebound uses of a D1 binding (`env.DB`). */
export interface D1DatabaseLike {
  /** Compiles a statement. */
  prepare(sql: string): D1PreparedStatementLike;
  /** Runs statements as one transaction: all of them, or none when one fails. */
  batch(statements: D1PreparedStatementLike[]): Promise<unknown[]>;
}

/**
 * Options of {@link d1Store} and {@link d1Transaction}: the table, and the shared optimistic
 * driver's retry bound and backoff (`maxAttempts` 10, `baseDelayMs` 2, `maxDelayMs` 200,
 * `random`, `onConflict`).
 */
export interface D1StoreOptions extends OptimisticOptions {
  /** The table; default `"ratebound"`. */
  table?: string;
}

/**
 * Thrown when every attempt's batch found a state changed since it was read: fail closed,
 * nothing was written.
 *
 * @example
 * catch (error) { if (error instanceof D1ConflictError) return new Response("Busy", { status: 503 }); }
 * @see {@link https://github.com/ratebound/ratebound/blob/main/docs/errors.md#d1_conflict | docs/errors.md}: every code, what it means, what to do.
 */
export class D1ConflictError extends Error {
  /** `"D1_CONFLICT"`. */
  readonly code = "D1_CONFLICT";
  /** How many batches were tried. */
  readonly attempts: number;

  /** @param attempts How many batches were tried. */
  constructor(attempts: number) {
    super(`ratebound/sqlite: D1's commit found a state changed by another request ${attempts} times in a row; nothing was written.`);
    this.name = "D1ConflictError";
    this.attempts = attempts;
  }
}

/** The word a failed re-check raises: SQLite's error for a bad JSON path names it. */
const CONFLICT = "$ratebound_conflict";
const conflictRaised = (error: unknown) => String((error as { message?: unknown })?.message).includes(CONFLICT);

/**
 * One attempt of a D1 transaction: a {@link RateLimitStore} that reads through
 * D1 (each ref once; it sees its own writes) and buffers writes, plus the app's
 * statements, for one `batch()`.
 *
 * @example
 * await d1Transaction(env.DB, async (tx) => {
 *   const { ok } = await new RateLimiter(tx, LIMITS).limit("post", { key: user });
 *   if (ok) tx.add(env.DB.prepare("INSERT INTO posts (author, body) VALUES (?, ?)").bind(user, body));
 *   return ok;
 * });
 */
export class D1Transaction implements RateLimitStore {
  readonly #db: D1DatabaseLike;
  readonly #table: string;
  readonly #sql: ReturnType<typeof sqliteStatements>;
  readonly #reads = new Map<string, { ref: StateRef; state: RateLimitState | null }>();
  readonly #writes = new Map<string, D1PreparedStatementLike>();
  readonly #written = new Map<string, RateLimitState | null>();
  readonly #statements: D1PreparedStatementLike[] = [];

  /**
   * @param db The D1 binding.
   * @param table The quoted table name.
   */
  constructor(db: D1DatabaseLike, table: string) {
    this.#db = db;
    this.#table = table;
    this.#sql = sqliteStatements(table);
  }

  /**
   * Adds the app's own statement to the commit's batch, after ratebound's writes.
   *
   * @param statement A bound D1 statement.
   * @example
   * tx.add(env.DB.prepare("INSERT INTO posts (author) VALUES (?)").bind(user));
   */
  add(statement: D1PreparedStatementLike): void {
    this.#statements.push(statement);
  }

  /**
   * The store's read: this attempt's own write if any, else the stored state (read once, re-checked at commit).
   *
   * @param ref The shard to read.
   * @returns Its state, or `null`.
   */
  async read(ref: StateRef): Promise<RateLimitState | null> {
    const id = JSON.stringify(refColumns(ref));
    if (this.#written.has(id)) return this.#written.get(id) ?? null;
    const seen = this.#reads.get(id);
    if (seen !== undefined) return seen.state;
    let row: unknown;
    try {
      row = await this.#db.prepare(this.#sql.read).bind(...refColumns(ref)).first();
    } catch (error) {
      throw codedError("sqlite", error);
    }
    const state = stateOf(row);
    if (!this.#reads.has(id)) this.#reads.set(id, { ref, state });
    return this.#reads.get(id)!.state;
  }

  /**
   * The store's write: buffered until the commit.
   *
   * @param ref The shard to write.
   * @param state Its new state, or `null` to delete it.
   * @param info When it is full again, stored for pruning.
   */
  write(ref: StateRef, state: RateLimitState | null, info?: WriteInfo): void {
    const id = JSON.stringify(refColumns(ref));
    this.#written.set(id, state);
    this.#writes.set(
      id,
      state === null
        ? this.#db.prepare(this.#sql.delete).bind(...refColumns(ref))
        : this.#db.prepare(this.#sql.upsert).bind(...upsertParams(ref, state, info)),
    );
  }

  /**
   * Whether the commit has anything to do: a call that wrote nothing (and added no statement) commits nothing.
   *
   * @returns `true` when a write or a statement is buffered.
   * @example
   * if (!tx.hasChanges()) return result;
   */
  hasChanges(): boolean {
    return this.#writes.size > 0 || this.#statements.length > 0;
  }

  /**
   * The batch to commit: a re-check of every state read (which raises, aborting the batch,
   * when a state changed), then the writes, then the app's statements. Empty when nothing is
   * written: a read-only call commits nothing (concurrent writers only take tokens away, so a
   * refusal on a slightly older state is a refusal on the newer one too).
   *
   * @returns The statements, in order.
   */
  batch(): D1PreparedStatementLike[] {
    if (this.#writes.size === 0 && this.#statements.length === 0) return [];
    const where = "name = ? AND key = ? AND shard = ?";
    const checks = [...this.#reads.values()].map(({ ref, state }) =>
      state === null
        ? this.#db.prepare(`SELECT CASE WHEN EXISTS (SELECT 1 FROM ${this.#table} WHERE ${where}) THEN json_extract('{}', '${CONFLICT}') END`).bind(...refColumns(ref))
        : this.#db
            .prepare(
              `SELECT CASE WHEN EXISTS (SELECT 1 FROM ${this.#table} WHERE ${where} AND value IS ? AND ts IS ?) THEN NULL ELSE json_extract('{}', '${CONFLICT}') END`,
            )
            .bind(...refColumns(ref), state.value, state.ts),
    );
    return [...checks, ...this.#writes.values(), ...this.#statements];
  }
}

/**
 * Runs `body` as one D1 transaction and returns what it returns: pass `tx` to
 * `new RateLimiter(tx, limits)`, and add the app's own statements with `tx.add`.
 * Everything commits in one `batch()` that first re-checks each state read; when
 * another request changed one, nothing is written and the body runs again (at
 * most `maxAttempts` times, then {@link D1ConflictError}). When the body throws,
 * nothing is written. The body may run several times: keep its effects in `tx`.
 *
 * @param db The D1 binding (`env.DB`).
 * @param body The transaction.
 * @param options `table`, `maxAttempts`, `random`.
 * @returns The body's result from the attempt that committed.
 * @example
 * const ok = await d1Transaction(env.DB, async (tx) => {
 *   const status = await new RateLimiter(tx, LIMITS).limit("post", { key: user });
 *   if (status.ok) tx.add(env.DB.prepare("INSERT INTO posts (author, body) VALUES (?, ?)").bind(user, body));
 *   return status.ok;
 * });
 */
export function d1Transaction<T>(db: D1DatabaseLike, body: (tx: D1Transaction) => T | Promise<T>, given: D1StoreOptions = {}): Promise<T> {
  const options = ownCopy("d1Transaction", given, ["table", ...OPTIMISTIC_OPTIONS]);
  const table = quotedTable("sqlite", options.table ?? "ratebound");
  const commit = async (tx: D1Transaction): Promise<boolean> => {
    try {
      await db.batch(tx.batch());
      return true;
    } catch (error) {
      if (conflictRaised(error)) return false;
      throw codedError("sqlite", error);
    }
  };
  return runOptimistic(() => new D1Transaction(db, table), commit, body, options, {
    label: "ratebound/sqlite",
    giveUp: (attempts) => new D1ConflictError(attempts),
  });
}

/**
 * A {@link RateLimitStore} over D1 for calls of their own: each call is a {@link d1Transaction}.
 * To commit the app's statements with the limit, use `d1Transaction` and pass its `tx` instead.
 *
 * @param db The D1 binding (`env.DB`).
 * @param options `table`, `maxAttempts`, `random`.
 * @returns The store.
 * @example
 * const { ok } = await new RateLimiter(d1Store(env.DB), LIMITS).limit("api", { key: ip });
 */
export function d1Store(db: D1DatabaseLike, given: D1StoreOptions = {}): RateLimitStore {
  const options = ownCopy("d1Store", given, ["table", ...OPTIMISTIC_OPTIONS]);
  quotedTable("sqlite", options.table ?? "ratebound"); // a bad name fails here, not at the first call
  return {
    transaction: (body) => d1Transaction(db, (tx) => body(tx), options),
    read: (ref) => d1Transaction(db, (tx) => tx.read(ref), options),
    write: (ref, state, info?: WriteInfo) => d1Transaction(db, (tx) => tx.write(ref, state, info), options),
  };
}
