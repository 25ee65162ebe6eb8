/**
 * ratebound over PostgreSQL. Works with `pg` (Client, PoolClient, Pool), PGlite, postgres.js, and
 * anything with `query(text, params) → { rows }`.
 *
 * `limit`, `check`, `limitAll` and `checkAll` are ONE statement: {@link PostgresStore.decide}
 * calls the function `createTable` installs (`<table>_decide_v1`, a port of the core's decision,
 * see `postgres-decide.ts`), which locks every state the call reads, decides and writes inside
 * the server. On a pool that is one round trip; inside the caller's transaction the locks are
 * held to its end, so the limit commits or rolls back with the app's own writes.
 *
 * Grants and settles, `getValue` and `reset` run as a transaction of reads and writes (the
 * caller's own when it has one): each state is locked before it is read, a stored row with
 * `SELECT … FOR UPDATE`, a state that does not exist yet with a transaction-scoped advisory lock
 * on the ref, the same lock the function takes. Under READ COMMITTED two transactions never both
 * decide on the same state.
 * @module
 */
import { withJitter, type RateLimitState, type RateLimitStore, type RemoteAnswer, type RemoteBatch, type RemoteItem, type StateRef } from "ratebound";
import { queryableOf, type PostgresJsLike, type PostgresQueryable } from "./postgres-table.js";
import { decideFunctionName } from "./postgres-decide.js";
import { fromOrm, type PostgresOrmClient } from "./postgres-clients.js";
import { SqlStoreError, codedError, columnText, describe, hasMethod, invalidOption, oneAtATime, tableParts, type WriteInfo } from "./shared/sql.js";
import { ownCopy } from "./shared/options.js";

export { SqlStoreError, type WriteInfo } from "./shared/sql.js";
export { createTable, createTableSql, pruneStates, type PostgresJsLike, type PostgresQueryable, type PostgresTableOptions } from "./postgres-table.js";
export type { DrizzlePostgresLike, KyselyLike, KyselyRawQuery, PostgresOrmClient, PrismaLike } from "./postgres-clients.js";

/** A {@link RateLimitStore} that decides next to its data (see `RemoteBatch` in docs/internals.md). */
export interface PostgresStore extends RateLimitStore {
  /** Runs `body` in one transaction (the caller's own when it has one). */
  transaction<T>(body: (store: RateLimitStore) => Promise<T>): Promise<T>;
  /**
   * Decides `batch` in ONE statement: the installed function locks, reads, decides exactly as
   * the core's `decide_batch` and writes. Rejects with an `Error` carrying a string `code`
   * (the SQLSTATE, a socket code, or {@link SqlStoreError}'s), having written nothing.
   */
  decide(batch: RemoteBatch): Promise<RemoteAnswer>;
}

/** A pool (`pg.Pool`, or one with its shape): each call takes a connection of its own. */
export interface PostgresPoolLike extends PostgresQueryable {
  /** Takes a connection from the pool. */
  connect(): Promise<PostgresQueryable & { release(destroy?: boolean | Error): void }>;
  /** How many connections the pool holds (what tells a pool from a client). */
  readonly totalCount: number;
}

/** Options of {@link postgresStore}, {@link createTable} and {@link pruneStates}. */
export interface PostgresStoreOptions {
  /** The table, `name` or `schema.name`; default `"ratebound"`. */
  table?: string;
  /** How many times a call runs when a second state it needs is locked by another transaction; default 20. */
  maxAttempts?: number;
  /** Numbers in `[0, 1)` for the backoff's jitter; default: the runtime's cryptographic source. */
  random?: () => number;
  /**
   * Called after each attempt that will run again, with the attempt (1-based) and why: `"locked"`
   * when a second state was locked by another transaction, else the SQLSTATE (`40001`, `40P01`).
   */
  onRetry?: (attempt: number, reason: string) => void;
}

/** Thrown inside an attempt when a second state is locked by another transaction: the attempt is rolled back and run again. */
class LockBusy extends Error {}

/**
 * One attempt of one call on one connection that is inside a transaction. It locks each state
 * before deciding on it: a stored row with `SELECT … FOR UPDATE` (one statement: it waits for the
 * row, then reads its latest version), and a state that does not exist yet with a
 * transaction-scoped advisory lock on the ref, then reads again (and locks the row, should
 * another transaction have created it meanwhile). Only a transaction holding that advisory lock
 * creates the row, so two transactions never both see the state missing.
 *
 * An attempt waits for a state only when it is greater (by {@link refOrder}) than every state
 * the attempt holds; any other is only tried (`NOWAIT`, `pg_try_advisory_xact_lock`), and when it
 * is taken the attempt is rolled back and runs again. Waits thus always go up the order, so two
 * calls never wait on each other in a cycle.
 */
class Attempt implements RateLimitStore {
  /** The greatest ref (by {@link refOrder}) this attempt has locked; `undefined` before the first. */
  #greatest: [string, string, number] | undefined;
  constructor(
    readonly connection: PostgresQueryable,
    readonly table: string,
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

  async read(ref: StateRef): Promise<RateLimitState | null> {
    // Waiting for a ref greater than every one held cannot close a cycle; any other is only tried.
    const columns = await postgresColumns(ref);
    const wait = this.#greatest === undefined || refOrder(columns, this.#greatest) > 0;
    if (wait) this.#greatest = columns;
    const select = `SELECT value, ts FROM ${this.table} WHERE name = $1 AND key = $2 AND shard = $3 FOR UPDATE${wait ? "" : " NOWAIT"}`;
    let rows = await this.#query(select, columns, !wait);
    if (rows.length === 0) {
      const lockKey = advisoryLockText(this.table, ref);
      if (wait) {
        await this.#query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [lockKey]);
      } else {
        const [row] = (await this.#query("SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0)) AS locked", [lockKey])) as { locked: unknown }[];
        if (row?.locked !== true) throw new LockBusy();
      }
      // A statement of its own, after the lock: under READ COMMITTED it sees every commit made before the lock was ours.
      rows = await this.#query(select, columns, !wait);
    }
    if (rows.length === 0) return null;
    // Whatever the row holds goes to the core, which names the ref when it is not two finite numbers.
    const row = rows[0] as { value?: unknown; ts?: unknown };
    return { value: row.value, ts: row.ts } as RateLimitState;
  }

  async write(ref: StateRef, state: RateLimitState | null, info?: WriteInfo): Promise<void> {
    const columns = await postgresColumns(ref);
    if (state === null) {
      await this.#query(`DELETE FROM ${this.table} WHERE name = $1 AND key = $2 AND shard = $3`, columns);
      return;
    }
    await this.#query(
      `INSERT INTO ${this.table} (name, key, shard, value, ts, full_at) VALUES ($1, $2, $3, $4, $5, $6)
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
 * The text of a ref's transaction-scoped advisory lock (hashed with `hashtextextended(…, 0)`),
 * taken before reading a state that has no row yet, by the function and the transactional path
 * alike. JSON of the raw ref: text PostgreSQL can hold, whatever the name and key contain.
 */
function advisoryLockText(table: string, ref: StateRef): string {
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
  return [await storable(columnText(ref.name)), ref.key === undefined ? "" : await storable(columnText(ref.key)), ref.shard];
}

async function storable(column: string): Promise<string> {
  if (column.length <= SHORT_COLUMN_UNITS) return column;
  const bytes = utf8.encode(column);
  if (bytes.length <= MAX_COLUMN_BYTES) return column;
  const subtle = (globalThis as { crypto?: { subtle?: { digest(algorithm: string, data: Uint8Array): Promise<ArrayBuffer> } } }).crypto?.subtle;
  if (subtle === undefined) {
    throw new SqlStoreError("SQL_FAILED", "ratebound/postgres: a name or key this long needs crypto.subtle (Web Crypto) to be stored; nothing was written");
  }
  const digest = new Uint8Array(await subtle.digest("SHA-256", bytes));
  return "\uffff#" + Array.from(digest, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** SQLSTATEs after which a transaction of our own is safely run again: serialization failure, deadlock. */
const RETRYABLE = new Set(["40001", "40P01"]);

/** How a connection's transaction starts, commits and rolls back. */
type Framing = { begin: string; commit: string; rollback: string[] };
const OWN: Framing = { begin: "BEGIN", commit: "COMMIT", rollback: ["ROLLBACK"] };
const NESTED: Framing = {
  begin: "SAVEPOINT ratebound_call",
  commit: "RELEASE SAVEPOINT ratebound_call",
  rollback: ["ROLLBACK TO SAVEPOINT ratebound_call", "RELEASE SAVEPOINT ratebound_call"],
};

/**
 * A store over PostgreSQL. Pass it to `new RateLimiter(store, limits)`.
 *
 * `limit`, `check`, `limitAll` and `checkAll` are ONE statement each (run `createTable(db)` or
 * apply `createTableSql()` first: it installs the function that statement calls); grants,
 * settles, `getValue` and `reset` are one transaction each. Where they run:
 *
 * - **A client or a transaction** (`pg` Client or PoolClient, a PGlite transaction): in the
 *   caller's transaction when the connection is inside one, so the app's writes and the limit
 *   commit or roll back together, and a failed call leaves that transaction as it was and
 *   usable (the statement's function, and the transactional path's savepoint, roll back what
 *   the call did). Outside one, each call commits alone. Calls on one connection run one at a time.
 * - **A pool** (`pg.Pool`): a decision is one `pool.query` (one round trip, its own
 *   transaction); a transaction takes a connection and runs `BEGIN … COMMIT` on it.
 * - **PGlite itself**: a decision is one `db.query`; a transaction runs in `db.transaction()`.
 * - **postgres.js**: its `sql` runs a decision as one statement and a transaction in
 *   `sql.begin()`; a transaction's `sql` (the `tx` of `sql.begin(async (tx) => …)`) runs both
 *   inside the app's transaction (a transaction in `tx.savepoint()`).
 *
 * Each state a call reads is locked first (its row `FOR UPDATE`; a state with no row yet through
 * a transaction-scoped advisory lock on the ref), so under READ COMMITTED concurrent calls never
 * over-admit or lose an update. Under REPEATABLE READ and SERIALIZABLE a call still never
 * over-admits: a decision on a stale snapshot fails with SQLSTATE `40001`, which a call of its
 * own retries and a call in the caller's transaction passes on.
 *
 * A failure rejects the call with an `Error` carrying a string `code` (the SQLSTATE, a Node
 * socket code, or {@link SqlStoreError}'s), having written nothing.
 *
 * @param client A `pg` Client, PoolClient or Pool, PGlite or a PGlite transaction, a postgres.js `sql`, a Drizzle, Kysely or Prisma database or transaction (see `postgres-clients.ts`), or any {@link PostgresQueryable}.
 * @param options `table` (default `"ratebound"`), `maxAttempts` (default 20), `random`, `onRetry`.
 * @returns The store.
 * @throws RateboundTypeError (a `TypeError`, `code: "INVALID_ARGUMENT"`) for a `db` or an option it cannot use.
 * @example
 * await client.query("BEGIN");
 * const { ok } = await new RateLimiter(postgresStore(client), LIMITS).limit("post", { key: userId });
 * if (ok) await client.query("INSERT INTO posts (author, body) VALUES ($1, $2)", [userId, body]);
 * await client.query("COMMIT");
 */
export function postgresStore(client: PostgresQueryable | PostgresPoolLike | PostgresJsLike | PostgresOrmClient, given: PostgresStoreOptions = {}): PostgresStore {
  const db = fromOrm(client);
  const options = ownCopy("postgresStore", given, ["table", "maxAttempts", "random", "onRetry"]);
  const postgresJs = hasMethod(db, "unsafe") && (hasMethod(db, "begin") || hasMethod(db, "savepoint")) ? (db as PostgresJsLike) : undefined;
  if (postgresJs === undefined && !hasMethod(db, "query")) throw invalidOption(notAConnection(db), "db");
  const parts = tableParts("postgres", options.table ?? "ratebound");
  const table = parts.map((part) => `"${part}"`).join(".");
  const { decide: decideFunction, decideOne: decideOneFunction } = decideFunctionName(parts);
  // Every parameter is text on the wire (drivers that serialize by the server's type, as
  // postgres.js and PGlite do, would turn the string "true" into false), cast in SQL.
  const decideText = `SELECT ${decideFunction}($1::text::text[], $2::text::text[], $3::text::integer[], $4::text::text[], $5::text::float8[], $6::text::boolean) AS answer`;
  // The one-item function's parameters take their types from its signature (text, integer and
  // float8 only: every driver sends a string of digits as such), which costs the server less than casts.
  const decideOneText = `SELECT ${decideOneFunction}($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) AS answer`;
  const maxAttempts = options.maxAttempts ?? 20;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) {
    throw invalidOption(`ratebound/postgres: maxAttempts must be an integer >= 1 (got ${describe(maxAttempts)})`, "maxAttempts");
  }
  for (const field of ["random", "onRetry"] as const) {
    if (options[field] !== undefined && typeof options[field] !== "function") {
      throw invalidOption(`ratebound/postgres: ${field} must be a function (got ${describe(options[field])})`, field);
    }
  }
  const isPool = postgresJs === undefined && hasMethod(db, "connect") && !hasMethod(db, "release") && typeof (db as { totalCount?: unknown }).totalCount === "number";
  const isPGlite = !isPool && hasMethod(db, "transaction") && !hasMethod(db, "connect");

  /** Waits before attempt `attempt + 1`, after telling `onRetry` why. */
  async function backOff(attempt: number, reason: string): Promise<void> {
    options.onRetry?.(attempt, reason);
    await new Promise((resolve) => setTimeout(resolve, withJitter(0, Math.min(100, 2 ** (attempt + 1)), options.random)));
  }

  /** The error of a call whose every attempt found a state taken. */
  function contended(attempt: number, cause?: unknown): SqlStoreError {
    return new SqlStoreError(
      "SQL_LOCK_CONTENDED",
      `ratebound/postgres: another transaction held a state this call needed, ${attempt} times in a row; nothing was written. ` +
        "Retry later, or shard the limit less (a sharded decision locks two shards).",
      cause,
    );
  }

  /** Runs `body` until an attempt commits; `frame` starts an attempt on a connection, commits it, or rolls it back. */
  async function attempts<T>(frame: Frame<T>, body: (store: RateLimitStore) => Promise<T>, retrySqlstate: boolean): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await frame((connection) => body(new Attempt(connection, table)));
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        const again = error instanceof LockBusy || (retrySqlstate && typeof code === "string" && RETRYABLE.has(code));
        if (!again) throw error;
        if (attempt >= maxAttempts) throw contended(attempt, error instanceof LockBusy ? undefined : error);
        await backOff(attempt, error instanceof LockBusy ? "locked" : String(code));
      }
    }
  }

  /** Runs a decision statement where `db` says, and returns its rows. */
  async function runDecide(text: string, params: (string | null)[], fn: string): Promise<unknown[]> {
    const rowsOf = (answer: { rows?: unknown }) => {
      if (typeof answer !== "object" || answer === null || !Array.isArray(answer.rows)) throw badRow("query() did not answer with { rows: [...] }");
      return answer.rows as unknown[];
    };
    try {
      // A pool's query() listens to the client it checks out until it is back (pg-pool does).
      if (isPool || isPGlite) return rowsOf(await (db as PostgresQueryable).query(text, params));
      if (postgresJs?.begin !== undefined) return [...(await postgresJs.unsafe(text, params))];
      if (postgresJs !== undefined) return await oneAtATime(postgresJs, async () => [...(await postgresJs.unsafe(text, params))]);
      const connection = db as PostgresQueryable;
      return await oneAtATime(connection, () => whileListening(connection, async () => rowsOf(await connection.query(text, params))));
    } catch (error) {
      if (error instanceof SqlStoreError) throw error;
      if ((error as { code?: unknown }).code === "42883") {
        throw Object.assign(
          new Error(
            `ratebound/postgres: the function ${fn} is missing: run createTable(db) (or apply createTableSql()) ` +
              "once with this version of ratebound; nothing was written",
            { cause: error },
          ),
          { name: "PostgresError", code: "42883" },
        );
      }
      throw codedError("postgres", error);
    }
  }

  /** One round trip: the function locks, reads, decides and writes; see {@link PostgresStore.decide}. */
  async function decide(batch: RemoteBatch): Promise<RemoteAnswer> {
    const one = oneItem(batch);
    const columns = await Promise.all(batch.refs.map(postgresColumns));
    let text: string;
    let params: (string | null)[];
    if (one !== undefined) {
      const [fresh] = one.fresh as [RateLimitState];
      const [name, key, shard] = columns[0]!;
      text = decideOneText;
      params = [name, key, String(shard), advisoryLockText(table, batch.refs[0]!), String(one.kind), numberText(one.rate), numberText(one.period),
        numberText(one.capacity), one.maxReserved === null ? null : numberText(one.maxReserved), one.start === null ? null : numberText(one.start),
        numberText(one.count), one.reserve ? "1" : "0", one.write ? "1" : "0", numberText(one.now), numberText(fresh.value), numberText(fresh.ts)];
    } else {
      text = decideText;
      params = batchParams(batch, columns);
    }
    // A call of its own reruns on a serialization failure or a deadlock; in the caller's
    // transaction that is the caller's to do (the function rolled its own work back).
    const retry = isPool || isPGlite || postgresJs?.begin !== undefined;
    for (let attempt = 1; ; attempt++) {
      const rows = await runDecide(text, params, one === undefined ? decideFunction : decideOneFunction);
      const answer = (rows[0] as { answer?: unknown } | undefined)?.answer;
      if (typeof answer !== "string") throw badRow("the decision function answered with no text");
      if (!answer.startsWith("error ")) return parseAnswer(answer, batch);
      const [, code = "", ...words] = answer.split(" ");
      const message = words.join(" ");
      if (retry && RETRYABLE.has(code)) {
        if (attempt >= maxAttempts) throw contended(attempt, functionError(code, message));
        await backOff(attempt, code);
        continue;
      }
      throw functionError(code, message);
    }
  }

  /** The general function's parameters for `batch`. */
  function batchParams(batch: RemoteBatch, columns: [string, string, number][]): string[] {
    const numbers: (number | null)[] = [];
    for (const item of batch.items) {
      const [first = 0, second] = item.reads;
      numbers.push(item.kind, item.rate, item.period, item.capacity, item.maxReserved, item.shards, item.start, item.count);
      numbers.push(item.reserve ? 1 : 0, item.write ? 1 : 0, item.now, first + 1, second === undefined ? 0 : second + 1);
      const [fresh = { value: Number.NaN, ts: Number.NaN }, freshSecond] = item.fresh;
      numbers.push(fresh.value, fresh.ts, freshSecond?.value ?? null, freshSecond?.ts ?? null);
    }
    return [
      textArray(columns.map((column) => column[0])),
      textArray(columns.map((column) => column[1])),
      `{${columns.map((column) => String(column[2])).join(",")}}`,
      textArray(batch.refs.map((ref) => advisoryLockText(table, ref))),
      `{${numbers.map(numberText).join(",")}}`,
      batch.all ? "true" : "false",
    ];
  }
  async function transaction<T>(body: (store: RateLimitStore) => Promise<T>): Promise<T> {
    if (isPool) {
      // A connection per attempt: a call backing off before its next attempt holds none.
      return attempts(async (attempt) => {
        let connection: Awaited<ReturnType<PostgresPoolLike["connect"]>>;
        try {
          connection = await (db as PostgresPoolLike).connect();
        } catch (error) {
          throw codedError("postgres", error);
        }
        const health = { broken: false };
        // pg-pool takes its own 'error' listener off a client it hands out: until the client is
        // back in the pool, a lost connection's 'error' event is ours to hear, or it would end the
        // process (issue 24). The call itself fails through the query that the loss rejects.
        const unlisten = listen(connection, () => (health.broken = true));
        try {
          return await framed(connection, OWN, () => attempt(connection), health);
        } finally {
          // A connection that could not even roll back is destroyed, not handed to the next call.
          connection.release(health.broken ? new Error("ratebound/postgres: the connection failed") : undefined);
          // Released, the client has the pool's listener again (or is being destroyed with it).
          unlisten();
        }
      }, body, true);
    }
    if (postgresJs?.begin !== undefined) {
      const sql = postgresJs as Required<PostgresJsLike>;
      return attempts((attempt) => wrapped(() => sql.begin((tx: PostgresJsLike) => attempt(queryableOf(tx)))), body, true);
    }
    if (postgresJs?.savepoint !== undefined) {
      const sql = postgresJs as Required<PostgresJsLike>;
      return oneAtATime(sql, () =>
        attempts((attempt) => wrapped(() => sql.savepoint((tx: PostgresJsLike) => attempt(queryableOf(tx)))), body, false),
      );
    }
    if (isPGlite) {
      const pglite = db as PostgresQueryable & { transaction<R>(run: (tx: PostgresQueryable) => Promise<R>): Promise<R> };
      return attempts((attempt) => wrapped(() => pglite.transaction((tx) => attempt(tx))), body, true);
    }
    const connection = db as PostgresQueryable;
    return oneAtATime(connection, () => whileListening(connection, async () => {
      // SAVEPOINT fails (SQLSTATE 25P01) outside a transaction block, and changes nothing there.
      const inCallersTransaction = await run(connection, NESTED.begin).then(
        () => true,
        (error: unknown) => {
          if ((error as { code?: unknown }).code === "25P01") return false;
          throw error;
        },
      );
      const health = { broken: false };
      if (!inCallersTransaction) return attempts((attempt) => framed(connection, OWN, () => attempt(connection), health), body, true);
      // The first attempt runs in the savepoint just taken, a later one in a fresh one. A failure
      // in the caller's transaction is the caller's to retry: only a busy lock runs it again here.
      let begun = true;
      return attempts(
        (attempt) => {
          const framing = begun ? { ...NESTED, begin: "" } : NESTED;
          begun = false;
          return framed(connection, framing, () => attempt(connection), health);
        },
        body,
        false,
      );
    }));
  }

  return {
    transaction,
    decide,
    read: (ref) => transaction((store) => Promise.resolve(store.read(ref))),
    write: (ref, state, info?: WriteInfo) => transaction(async (store) => void (await (store as Attempt).write(ref, state, info))),
  };
}

/** What an option error says of a `db` that has no `query`: what to pass instead. */
function notAConnection(db: unknown): string {
  const redis = ["evalsha", "sendCommand", "defineCommand", "eval"].some((method) => hasMethod(db, method));
  if (redis) return "ratebound/postgres: db looks like a Redis client: pass it to redisStore(client) from ratebound/redis instead";
  return `ratebound/postgres: db must have a query(text, params) method, like a pg Client, Pool or PGlite, or be a postgres.js sql (got ${describe(db)})`;
}

/** The store's error for an answer that is not what the function returns. */
function badRow(what: string): SqlStoreError {
  return new SqlStoreError("SQL_BAD_ROW", `ratebound/postgres: ${what}; nothing was written`);
}

/** An error the decision function caught and returned, with its SQLSTATE as the code. */
function functionError(code: string, message: unknown): Error {
  return Object.assign(new Error(`ratebound/postgres: ${String(message)}; nothing was written`), { name: "PostgresError", code });
}

/**
 * The batch's one item when the one-item function decides it: one call (`limit` or `check`, or a
 * `limitAll` of one) on one state of a limit with one shard.
 */
function oneItem(batch: RemoteBatch): RemoteItem | undefined {
  if (batch.items.length !== 1 || batch.refs.length !== 1) return undefined;
  const item = batch.items[0]!;
  if (item.shards !== 1 || item.reads.length !== 1 || item.reads[0] !== 0 || item.fresh.length !== 1 || (item.kind !== 0 && item.kind !== 1)) return undefined;
  return item;
}

/** A `float8send` as 16 hex digits (big-endian), read back exactly. */
function float8Hex(hex: string | undefined): number {
  if (hex === undefined || !/^[0-9a-f]{16}$/.test(hex)) return Number.NaN;
  const view = new DataView(new ArrayBuffer(8));
  view.setUint32(0, parseInt(hex.slice(0, 8), 16));
  view.setUint32(4, parseInt(hex.slice(8), 16));
  return view.getFloat64(0);
}

/**
 * A function's answer: the batch function's `ok`, per ref the value and ts it held (`- -`: no
 * row), and a digit per item, `1` when written; or the one-item function's `one`, the value and
 * ts as 16 hex digits each, and its digit.
 */
function parseAnswer(answer: string, batch: RemoteBatch): RemoteAnswer {
  if (answer.startsWith("one ")) {
    const [, value, ts, digit, extra] = answer.split(" ");
    const stored = value === "-" && ts === "-" ? null : { value: float8Hex(value), ts: float8Hex(ts) };
    if ((digit !== "0" && digit !== "1") || extra !== undefined || batch.refs.length !== 1 || batch.items.length !== 1 || (stored !== null && (Number.isNaN(stored.value) || Number.isNaN(stored.ts)))) {
      throw badRow("the decision function answered for another batch");
    }
    return { stored: [stored], wrote: [digit === "1"] };
  }
  const words = answer.split(" ");
  const refs = batch.refs.length;
  const digits = words[1 + 2 * refs] ?? "";
  if (words[0] !== "ok" || words.length !== 2 + 2 * refs || digits.length !== batch.items.length) {
    throw badRow("the decision function answered for another batch");
  }
  const stored: unknown[] = [];
  for (let ref = 0; ref < refs; ref++) {
    const [value, ts] = [words[1 + 2 * ref], words[2 + 2 * ref]];
    // float8 text (shortest exact, NaN and ±Infinity spelled out) reads back exactly through Number().
    stored.push(value === "-" ? null : { value: Number(value), ts: Number(ts) });
  }
  return { stored, wrote: Array.from(digits, (digit) => digit === "1") };
}

/** A number as `float8in` reads it back exactly: JavaScript's shortest form, `-0` kept. */
function numberText(number: number | null): string {
  if (number === null) return "NULL";
  return Object.is(number, -0) ? "-0" : String(number);
}

/** A PostgreSQL array literal of strings (`NULL` for null), for a `$n::text[]` parameter. */
function textArray(values: readonly (string | null)[]): string {
  return `{${values.map((value) => (value === null ? "NULL" : `"${value.replace(/[\\"]/g, "\\$&")}"`)).join(",")}}`;
}

/** An event emitter's methods, as a `pg` Client has them. */
type Emitter = { on(event: string, listener: (error: unknown) => void): unknown; removeListener(event: string, listener: (error: unknown) => void): unknown };

/**
 * Listens to `connection`'s `'error'` events (when it emits them, as a `pg` Client does) until
 * the returned function is called; `heard` is told of each. Without a listener, the `'error'`
 * a lost connection emits is an unhandled event that ends the process.
 */
function listen(connection: unknown, heard: (error: unknown) => void = () => {}): () => void {
  if (!hasMethod(connection, "on") || !hasMethod(connection, "removeListener")) return () => {};
  const emitter = connection as Emitter;
  emitter.on("error", heard);
  return () => void emitter.removeListener("error", heard);
}

/** SQLSTATEs and socket codes that say the connection itself is gone. */
const CONNECTION_LOST = /^(08...|57P0[123]|ECONNRESET|EPIPE|ETIMEDOUT|ECONNREFUSED)$/;

/** Whether `error` (the driver's or the store's) says the connection is gone. */
function connectionLost(error: unknown): boolean {
  for (let cause = error, depth = 0; typeof cause === "object" && cause !== null && depth < 4; cause = (cause as { cause?: unknown }).cause, depth++) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === "string" && CONNECTION_LOST.test(code)) return true;
    if (/Connection terminated|not queryable/.test(String((cause as { message?: unknown }).message))) return true;
  }
  return false;
}

/**
 * Runs `work` on the caller's `connection` (a `pg` Client the app checked out) while listening to
 * its `'error'` events, so that losing the connection in the middle of a call rejects the call
 * instead of ending the process. When the call failed because the connection is gone (or an
 * `'error'` was heard), the listener stays until the connection's `'end'`: a dead client emits
 * its `'error'` after the query it failed, and it is the same failure the call reported.
 */
async function whileListening<T>(connection: unknown, work: () => Promise<T>): Promise<T> {
  let heard = false;
  const unlisten = listen(connection, () => (heard = true));
  try {
    const result = await work();
    unlisten();
    return result;
  } catch (error) {
    if (heard || connectionLost(error)) (connection as Partial<Emitter>).on?.("end", unlisten);
    else unlisten();
    throw error;
  }
}

/** Starts an attempt on a connection, commits it, or rolls it back. */
type Frame<T> = (attempt: (connection: PostgresQueryable) => Promise<T>) => Promise<T>;

/** A driver failure of `work` becomes an `Error` with a `code`; the store's own errors pass. */
async function wrapped<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof LockBusy || error instanceof SqlStoreError) throw error;
    throw codedError("postgres", error);
  }
}

/** Runs one statement of a transaction's framing. */
async function run(connection: PostgresQueryable, statement: string): Promise<void> {
  try {
    await connection.query(statement, []);
  } catch (error) {
    throw codedError("postgres", error);
  }
}

/**
 * `begin` (unless empty), the attempt, `commit`; on failure the rollback, then the failure.
 * A rollback that fails marks the connection broken (the database rolls back on its own).
 */
async function framed<T>(connection: PostgresQueryable, framing: Framing, attempt: () => Promise<T>, health: { broken: boolean }): Promise<T> {
  if (framing.begin !== "") await run(connection, framing.begin);
  let result: T;
  try {
    result = await attempt();
  } catch (error) {
    try {
      for (const statement of framing.rollback) await run(connection, statement);
    } catch {
      health.broken = true;
    }
    throw error;
  }
  await run(connection, framing.commit);
  return result;
}
