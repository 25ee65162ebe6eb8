/**
 * ratebound/postgres's transactional path (grants, settles, `getValue`, `reset`): one attempt's
 * locked reads and writes, the ref order its waits follow, and how a ref becomes its row's columns
 * and its lock.
 * @module
 */
import type { RateLimitState, RateLimitStore, StateRef } from "ratebound";
import type { PostgresQueryable } from "./postgres-table.js";
import { SqlStoreError, codedError, columnText, type WriteInfo } from "./shared/sql.js";
import { KEY_LIMIT_SHARD } from "../core/boundary.js";

/**
 * Whether `ref` is a record of a stored limit (`setLimit`): shards from `KEY_LIMIT_SHARD` on
 * (`src/stored_limit.rs`), past every state, ledger and grant record. Every grant of a name reads
 * the name's records: they are read under a shared lock, which only `setLimit` and `deleteLimit`
 * (which write them under the exclusive one) wait for, so grants on different keys never wait
 * for each other there.
 */
const isLimitRecord = (ref: StateRef): boolean => ref.shard >= KEY_LIMIT_SHARD;

/**
 * Thrown inside an attempt when a second state is locked by another transaction: the attempt is
 * rolled back and run again. Never reaches the caller: after `maxAttempts` the call fails with
 * `SQL_LOCK_CONTENDED` (docs/errors.md#sql_lock_contended).
 */
export class LockBusy extends Error {}

/** The error of a call whose every attempt found a state taken. */
export function contended(attempt: number, cause?: unknown): SqlStoreError {
  return new SqlStoreError(
    "SQL_LOCK_CONTENDED",
    `ratebound/postgres: another transaction held a state this call needed, ${attempt} times in a row; nothing was written. ` +
      "Retry later, or shard the limit less (a sharded decision locks two shards).",
    cause,
  );
}

/**
 * The row of a ref (`$1`, `$2`, `$3`: its columns), with `pg_catalog`'s operators and types, so
 * that no `=` in a schema ahead on the caller's search path can pick another row.
 */
const WHERE_REF =
  "name OPERATOR(pg_catalog.=) $1::pg_catalog.text AND key OPERATOR(pg_catalog.=) $2::pg_catalog.text AND shard OPERATOR(pg_catalog.=) $3::pg_catalog.int4";

/**
 * One attempt of one call on one connection that is inside a transaction. It locks each state
 * before deciding on it, as the decision functions do: first the state's one lock, a
 * transaction-scoped advisory lock on the ref (whether or not its row exists), then its row
 * (`SELECT … FOR UPDATE`, a statement of its own that reads the latest version). Only a
 * transaction holding a state's lock reads it locked, creates or writes its row, so two
 * transactions never both decide on one state, and no ratebound call ever waits for a row lock.
 *
 * An attempt waits for a state only when it is greater (by {@link refOrder}) than every state
 * the attempt holds; any other is only tried (`pg_try_advisory_xact_lock`, and `NOWAIT` for a row
 * an older ratebound may hold without the lock), and when it is taken the attempt is rolled back
 * and runs again. Waits thus always go up the order, so two calls never wait on each other in a
 * cycle, at any isolation level.
 */
export class Attempt implements RateLimitStore {
  /** The greatest ref (by {@link refOrder}) this attempt has locked; `undefined` before the first. */
  #greatest: [string, string, number] | undefined;
  /** The last operation sent: the next waits for it (one statement at a time on a connection). */
  #queue: Promise<unknown> = Promise.resolve();
  /** The first operation's failure: every later one fails with it and sends nothing. */
  #failure: { error: unknown } | undefined;
  /**
   * @param connection The connection, inside the attempt's transaction.
   * @param table The table, `"schema"."name"`.
   * @param lockTable The table as each ref's advisory lock names it (see {@link advisoryLockText}).
   */
  constructor(
    readonly connection: PostgresQueryable,
    readonly table: string,
    readonly lockTable: string,
  ) {}

  async #query(text: string, params: unknown[], tryOnly = false): Promise<unknown[]> {
    let answer: { rows: unknown[] };
    try {
      answer = await this.connection.query(text, params);
    } catch (error) {
      // Another transaction holds a row this attempt only tried (NOWAIT): run the attempt again.
      // (The same code from a statement that waited is the app's lock_timeout: that fails the call.)
      if (tryOnly && (error as { code?: unknown }).code === "55P03") throw new LockBusy();
      throw codedError("postgres", error);
    }
    if (typeof answer !== "object" || answer === null || !Array.isArray(answer.rows)) {
      throw new SqlStoreError("SQL_BAD_ROW", "ratebound/postgres: query() did not answer with { rows: [...] }; nothing was written");
    }
    return answer.rows;
  }

  /**
   * Runs `operation` after every one called before it has finished: the core reads a grant's
   * states at once, and a connection runs one statement at a time (`pg` warns of, and from pg 9
   * refuses, a query sent while one runs). Reads also lock in the order they are called. After a
   * failure (a state only tried and taken, a database error) the rest fail with it unsent: they
   * would otherwise run after the attempt's rollback, outside its transaction, or on the
   * connection once it is back in the pool, in another call's transaction.
   */
  #inTurn<T>(operation: () => Promise<T>): Promise<T> {
    const result = this.#queue.then(() => {
      // Once one failed, the attempt is being rolled back: nothing more goes to the connection.
      if (this.#failure !== undefined) throw this.#failure.error;
      return operation().catch((error: unknown) => {
        this.#failure ??= { error };
        throw error;
      });
    });
    this.#queue = result.catch(() => {});
    return result;
  }

  /**
   * Resolves when no operation of this attempt runs or waits to: the transaction may then be
   * committed or rolled back, and the connection handed on, with none of its statements behind.
   */
  idle(): Promise<void> {
    return this.#queue.then(() => {});
  }

  read(ref: StateRef): Promise<RateLimitState | null> {
    return this.#inTurn(() => this.#read(ref));
  }

  write(ref: StateRef, state: RateLimitState | null, info?: WriteInfo): Promise<void> {
    return this.#inTurn(() => this.#write(ref, state, info));
  }

  /**
   * Takes `ref`'s advisory lock (shared: a stored limit's record read), waiting only when it is
   * greater than every one held (that cannot close a cycle); any other is only tried.
   *
   * @returns Whether it waited.
   */
  async #lock(ref: StateRef, columns: [string, string, number], shared: boolean): Promise<boolean> {
    const wait = this.#greatest === undefined || refOrder(columns, this.#greatest) > 0;
    if (wait) this.#greatest = columns;
    const lockKey = advisoryLockText(this.lockTable, ref);
    const [lock, tryLock] = shared ? ["pg_advisory_xact_lock_shared", "pg_try_advisory_xact_lock_shared"] : ["pg_advisory_xact_lock", "pg_try_advisory_xact_lock"];
    if (wait) {
      await this.#query(`SELECT pg_catalog.${lock}(pg_catalog.hashtextextended($1::pg_catalog.text, 0))`, [lockKey]);
    } else {
      const [row] = (await this.#query(`SELECT pg_catalog.${tryLock}(pg_catalog.hashtextextended($1::pg_catalog.text, 0)) AS locked`, [lockKey])) as { locked: unknown }[];
      if (row?.locked !== true) throw new LockBusy();
    }
    return wait;
  }

  async #read(ref: StateRef): Promise<RateLimitState | null> {
    const columns = await postgresColumns(ref);
    // The state's one lock (the functions take the same), then its row.
    const record = isLimitRecord(ref);
    const wait = await this.#lock(ref, columns, record);
    // A statement of its own, after the lock: under READ COMMITTED it sees every commit made before
    // the lock was ours. (NOWAIT only for a row an older ratebound may hold without the lock.) A
    // record's row is not locked: its writers hold its exclusive lock until they commit.
    const select = `SELECT value, ts FROM ${this.table} WHERE ${WHERE_REF}${record ? "" : ` FOR UPDATE${wait ? "" : " NOWAIT"}`}`;
    const rows = await this.#query(select, columns, !wait && !record);
    if (rows.length === 0) return null;
    // Whatever the row holds goes to the core, which names the ref when it is not two finite numbers.
    const row = rows[0] as { value?: unknown; ts?: unknown };
    return { value: row.value, ts: row.ts } as RateLimitState;
  }

  async #write(ref: StateRef, state: RateLimitState | null, info?: WriteInfo): Promise<void> {
    const columns = await postgresColumns(ref);
    // A stored limit's records are written without being read: their exclusive lock first, which
    // waits for every grant that read them (under the shared one) to end.
    if (isLimitRecord(ref)) await this.#lock(ref, columns, false);
    if (state === null) {
      await this.#query(`DELETE FROM ${this.table} WHERE ${WHERE_REF}`, columns);
      return;
    }
    await this.#query(
      `INSERT INTO ${this.table} (name, key, shard, value, ts, full_at)
       VALUES ($1::pg_catalog.text, $2::pg_catalog.text, $3::pg_catalog.int4, $4::pg_catalog.float8, $5::pg_catalog.float8, $6::pg_catalog.float8)
       ON CONFLICT (name, key, shard) DO UPDATE SET value = excluded.value, ts = excluded.ts, full_at = excluded.full_at`,
      [...columns, state.value, state.ts, info?.fullAt ?? Infinity],
    );
  }
}

/**
 * A total order on refs' columns (name, then key, then shard), the same in every process and the
 * same as the decision function's `ORDER BY name COLLATE "C", key COLLATE "C", shard`: strings by
 * code point, which is UTF-8's byte order (UTF-16 units order U+E000–U+FFFF after surrogates).
 */
function refOrder(a: [string, string, number], b: [string, string, number]): number {
  return codePointOrder(a[0], b[0]) || codePointOrder(a[1], b[1]) || a[2] - b[2];
}

/** Compares two strings by code point (as their UTF-8 bytes compare). */
function codePointOrder(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let index = 0; index < length; index++) {
    const x = a.charCodeAt(index);
    const y = b.charCodeAt(index);
    if (x === y) continue;
    // A surrogate (U+D800–U+DFFF) starts a code point above U+FFFF: move it above U+E000–U+FFFF.
    const rank = (unit: number) => (unit >= 0xd800 && unit <= 0xdfff ? unit + 0x2000 : unit >= 0xe000 ? unit - 0x800 : unit);
    return rank(x) - rank(y);
  }
  return a.length - b.length;
}

/**
 * The text of a ref's transaction-scoped advisory lock (hashed with `hashtextextended(…, 0)`): a
 * state's one lock, taken before its row by the functions and the transactional path alike. JSON
 * of the table as the `table` option names it (`"ratebound"`, `"app"."limits"`: what every
 * version used, so that processes of two versions take the same lock) and the raw ref: text
 * PostgreSQL can hold, whatever the name and key contain.
 */
export function advisoryLockText(table: string, ref: StateRef): string {
  return JSON.stringify([table, ref.name, ref.key ?? null, ref.shard]);
}

/**
 * The most bytes of one `name` or `key` column: two of them and the shard stay under btree's
 * limit of 2,704 bytes per index row (8 kB pages), so no valid name and key is ever a store error.
 */
const MAX_COLUMN_BYTES = 1200;

/** Below this many UTF-16 units a column value is within {@link MAX_COLUMN_BYTES} whatever it holds. */
const SHORT_COLUMN_UNITS = Math.floor(MAX_COLUMN_BYTES / 3);

const utf8 = new TextEncoder();

/**
 * A ref's primary key columns, `[name, key, shard]`, as {@link columnText} forms them (a key
 * `''` for no key; a name or key that is empty, holds a NUL or starts with U+FFFF as U+FFFF and
 * its JSON); a form longer than {@link MAX_COLUMN_BYTES} (only escaped ones can be: a name or key
 * is at most 1024 bytes, but a NUL's escape takes 6) as U+FFFF, `#` and the SHA-256 of its UTF-8
 * in hex. JSON forms start `\uffff"`, so the three forms never meet.
 */
export async function postgresColumns(ref: StateRef): Promise<[string, string, number]> {
  return postgresColumnsNow(ref) ?? [await storable(columnText(ref.name)), ref.key === undefined ? "" : await storable(columnText(ref.key)), ref.shard];
}

/**
 * {@link postgresColumns} at once, for a ref whose name and key need no hash (every one within
 * {@link MAX_COLUMN_BYTES}); `undefined` for one that does. A pool's calls then join their group
 * commit in the order they were made.
 */
export function postgresColumnsNow(ref: StateRef): [string, string, number] | undefined {
  const name = asIs(columnText(ref.name));
  const key = ref.key === undefined ? "" : asIs(columnText(ref.key));
  return name === undefined || key === undefined ? undefined : [name, key, ref.shard];
}

/** A column value that is stored as it is, or `undefined` when it is too long (see {@link storable}). */
function asIs(column: string): string | undefined {
  return column.length <= SHORT_COLUMN_UNITS || utf8.encode(column).length <= MAX_COLUMN_BYTES ? column : undefined;
}

async function storable(column: string): Promise<string> {
  if (asIs(column) !== undefined) return column;
  const bytes = utf8.encode(column);
  const subtle = (globalThis as { crypto?: { subtle?: { digest(algorithm: string, data: Uint8Array): Promise<ArrayBuffer> } } }).crypto?.subtle;
  if (subtle === undefined) {
    throw new SqlStoreError("SQL_FAILED", "ratebound/postgres: a name or key this long needs crypto.subtle (Web Crypto) to be stored; nothing was written");
  }
  const digest = new Uint8Array(await subtle.digest("SHA-256", bytes));
  return "\uffff#" + Array.from(digest, (byte) => byte.toString(16).padStart(2, "0")).join("");
}
