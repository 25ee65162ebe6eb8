/**
 * ratebound over SQLite: `better-sqlite3` (synchronous, so a decision never
 * waits on I/O) and Cloudflare D1 (an optimistic host: its commit is one
 * `batch()` that re-checks what was read).
 *
 * On better-sqlite3 a call that owns its transaction opens it with
 * `BEGIN IMMEDIATE`, which takes the database's write lock before the first
 * read: two connections (or processes) can never both decide on the same
 * state. Inside the caller's transaction it runs in a savepoint.
 * @module
 */
import { wrongArgument, type RateLimitState, type RateLimitStore, type StateRef } from "ratebound";
import { codedError, hasMethod, oneAtATime, quotedTable, refColumns, sqliteStatements, stateOf, upsertParams, type WriteInfo } from "./shared/sql.js";
import { d1Store, type D1DatabaseLike, type D1StoreOptions } from "./d1.js";
import { OPTIMISTIC_OPTIONS, ownCopy } from "./shared/options.js";
import { isLibsql, libsqlRun, libsqlStore, type LibsqlClientLike, type LibsqlTransactionLike } from "./sqlite-libsql.js";

export { SqlStoreError, type WriteInfo } from "./shared/sql.js";
export type { LibsqlClientLike, LibsqlExecutorLike, LibsqlTransactionLike } from "./sqlite-libsql.js";
export { d1Store, d1Transaction, D1ConflictError, D1Transaction, type D1DatabaseLike, type D1PreparedStatementLike, type D1StoreOptions } from "./d1.js";

/** One prepared statement, as better-sqlite3 has it. */
export interface SqliteStatementLike {
  /** Runs it and returns the first row, or `undefined`. */
  get(...params: unknown[]): unknown;
  /** Runs it for its effect. */
  run(...params: unknown[]): unknown;
}

/**
 * What ratebound uses of a synchronous SQLite connection: a better-sqlite3 or `bun:sqlite`
 * `Database` (`inTransaction`), or a `node:sqlite` `DatabaseSync` (`isTransaction`).
 */
export type SqliteDatabaseLike = SqliteConnectionBase & ({ readonly inTransaction: boolean } | { readonly isTransaction: boolean });

/** The methods every synchronous SQLite connection ratebound takes has. */
export interface SqliteConnectionBase {
  /** Compiles a statement. */
  prepare(sql: string): SqliteStatementLike;
  /** Runs SQL without parameters. */
  exec(sql: string): unknown;
}

/** Whether a transaction is open on `db`, under the name its driver gives it (undefined: none). */
function openTransaction(db: object): boolean | undefined {
  const { inTransaction, isTransaction } = db as { inTransaction?: unknown; isTransaction?: unknown };
  if (typeof inTransaction === "boolean") return inTransaction;
  return typeof isTransaction === "boolean" ? isTransaction : undefined;
}

/** Options of {@link sqliteStore} and {@link createTable}. */
export interface SqliteStoreOptions extends D1StoreOptions {
  /** The table, `name` or `schema.name`; default `"ratebound"`. */
  table?: string;
}

/**
 * The SQL of {@link createTable}, for migrations: the table and its primary key.
 *
 * @param options `table`: its name (default `"ratebound"`).
 * @returns One `CREATE TABLE IF NOT EXISTS` statement.
 * @example
 * db.exec(createTableSql()); // what createTable(db) runs
 */
export function createTableSql(given: Pick<SqliteStoreOptions, "table"> = {}): string {
  const options = ownCopy("createTableSql", given, ["table"]);
  const table = quotedTable("sqlite", options.table ?? "ratebound");
  return `CREATE TABLE IF NOT EXISTS ${table} (
  name TEXT NOT NULL,
  key TEXT NOT NULL,
  shard INTEGER NOT NULL,
  value REAL NOT NULL,
  ts REAL NOT NULL,
  full_at REAL NOT NULL DEFAULT 9e999,
  PRIMARY KEY (name, key, shard)
)`;
}

/**
 * Creates ratebound's table with its primary key if it does not exist yet (safe on every start).
 *
 * @param db A better-sqlite3 `Database`, a libSQL client or transaction, or a D1 binding.
 * @param options `table`: its name (default `"ratebound"`).
 * @returns When the table exists.
 * @example
 * await createTable(new Database("app.db"));
 */
export async function createTable(db: SqliteDatabaseLike | D1DatabaseLike | LibsqlClientLike | LibsqlTransactionLike, given: Pick<SqliteStoreOptions, "table"> = {}): Promise<void> {
  const options = ownCopy("createTable", given, ["table"]);
  const sql = createTableSql(options);
  try {
    if (isLibsql(db)) await libsqlRun(db, sql);
    else if (isD1(db)) await db.prepare(sql).run();
    else db.prepare(sql).run();
  } catch (error) {
    throw codedError("sqlite", error);
  }
}

/**
 * Deletes every state that is full at `now`: deleting it changes no decision. Safe while the
 * limiter runs (a state written meanwhile carries a later `full_at` and stays).
 *
 * @param db A better-sqlite3 `Database`, a libSQL client or transaction, or a D1 binding.
 * @param options `now` in milliseconds since the epoch (default `Date.now()`), and `table`.
 * @returns How many states were deleted.
 * @example
 * setInterval(() => pruneStates(db), HOUR);
 */
export async function pruneStates(db: SqliteDatabaseLike | D1DatabaseLike | LibsqlClientLike | LibsqlTransactionLike, given: Pick<SqliteStoreOptions, "table"> & { now?: number } = {}): Promise<number> {
  const options = ownCopy("pruneStates", given, ["table", "now"]);
  const sql = `DELETE FROM ${quotedTable("sqlite", options.table ?? "ratebound")} WHERE full_at <= ?`;
  const now = options.now ?? Date.now();
  try {
    if (isLibsql(db)) return await libsqlRun(db, sql, [now]);
    if (isD1(db)) {
      const result = (await db.prepare(sql).bind(now).run()) as { meta?: { changes?: number } };
      return result.meta?.changes ?? 0;
    }
    return (db.prepare(sql).run(now) as { changes: number }).changes;
  } catch (error) {
    throw codedError("sqlite", error);
  }
}

/** Whether `db` is a D1 binding (it batches) rather than a better-sqlite3 connection. */
function isD1(db: unknown): db is D1DatabaseLike {
  return hasMethod(db, "batch") && hasMethod(db, "prepare") && !hasMethod(db, "transaction");
}

/** What to use instead when `db` is another database's client. */
function sqliteShapeHint(db: unknown): string {
  if (hasMethod(db, "evalsha") || hasMethod(db, "evalSha") || hasMethod(db, "sendCommand")) return "; a Redis client: use redisStore(client) from ratebound/redis";
  if (hasMethod(db, "query") || hasMethod(db, "unsafe")) return "; a PostgreSQL client: use postgresStore(db) from ratebound/postgres";
  return "";
}

/**
 * A {@link RateLimitStore} over SQLite. Pass it to `new RateLimiter(store, limits)`; each call
 * (`limit`, `check`, `limitAll`, `checkAll`, `getValue`, `reset`) is then one transaction.
 *
 * - **better-sqlite3, `bun:sqlite`, `node:sqlite`**: when the connection is inside a transaction
 *   (`db.inTransaction`; `isTransaction` on `node:sqlite`'s `DatabaseSync`), the
 *   call joins it in a savepoint, so the app's writes and the limit commit or roll back together
 *   (open yours with `BEGIN IMMEDIATE`: a deferred `BEGIN` that another connection beats to the
 *   write lock fails with `SQLITE_BUSY`). Otherwise the call runs `BEGIN IMMEDIATE … COMMIT`:
 *   the write lock is taken before the first read, so two connections never both admit;
 *   another connection waits up to its busy timeout (better-sqlite3's `timeout`, default 5 s),
 *   then fails with `SQLITE_BUSY`. Calls on one connection run one at a time.
 * - **libSQL** (`@libsql/client`): a call of its own is a `client.transaction("write")`
 *   (`BEGIN IMMEDIATE`); passed the app's `await client.transaction("write")`, the call joins it
 *   in a savepoint. On a local file a client's calls take turns in the process (see docs/sqlite.md).
 * - **Cloudflare D1**: see {@link d1Store}.
 *
 * A failure rejects the call with an `Error` carrying a string `code` (SQLite's, such as
 * `SQLITE_BUSY` or `SQLITE_CONSTRAINT_CHECK`, or `SqlStoreError`'s), having written nothing.
 *
 * @param db A better-sqlite3 or `bun:sqlite` `Database`, a `node:sqlite` `DatabaseSync`, a libSQL client or transaction, or a D1
 *   binding (`env.DB`).
 * @param options `table` (default `"ratebound"`); for D1, `maxAttempts` and `random`.
 * @returns The store.
 * @example
 * const db = new Database("app.db");
 * const limiter = new RateLimiter(sqliteStore(db), LIMITS);
 * db.exec("BEGIN IMMEDIATE");
 * try {
 *   if ((await limiter.limit("post", { key: userId })).ok) db.prepare("INSERT INTO posts (author) VALUES (?)").run(userId);
 *   db.exec("COMMIT");
 * } catch (error) { db.exec("ROLLBACK"); throw error; }
 */
export function sqliteStore(db: SqliteDatabaseLike | D1DatabaseLike | LibsqlClientLike | LibsqlTransactionLike, given: SqliteStoreOptions = {}): RateLimitStore {
  const options = ownCopy("sqliteStore", given, ["table", ...OPTIMISTIC_OPTIONS]);
  if (isD1(db)) return d1Store(db, options);
  if (isLibsql(db)) return libsqlStore(db, quotedTable("sqlite", options.table ?? "ratebound"));
  if (!hasMethod(db, "prepare") || !hasMethod(db, "exec") || openTransaction(db) === undefined) {
    throw wrongArgument(
      "ratebound/sqlite",
      "db",
      `db must be a better-sqlite3, bun:sqlite or node:sqlite database, a libSQL client or transaction, or a D1 binding (got ${db === null ? "null" : typeof db})${sqliteShapeHint(db)}`,
    );
  }
  const connection = db as SqliteDatabaseLike;
  const table = quotedTable("sqlite", options.table ?? "ratebound");
  const sql = sqliteStatements(table);
  const prepared = new Map<string, SqliteStatementLike>();
  /** Runs a cached statement; a driver failure becomes an `Error` with a `code`. */
  const run = <R>(text: string, use: (statement: SqliteStatementLike) => R): R => {
    try {
      let statement = prepared.get(text);
      if (statement === undefined) prepared.set(text, (statement = connection.prepare(text)));
      return use(statement);
    } catch (error) {
      throw codedError("sqlite", error);
    }
  };
  const exec = (text: string) => {
    try {
      connection.exec(text);
    } catch (error) {
      throw codedError("sqlite", error);
    }
  };
  const store: RateLimitStore = {
    read: (ref: StateRef) => stateOf(run(sql.read, (statement) => statement.get(...refColumns(ref)))),
    write: (ref: StateRef, state: RateLimitState | null, info?: WriteInfo) => {
      if (state === null) run(sql.delete, (statement) => statement.run(...refColumns(ref)));
      else run(sql.upsert, (statement) => statement.run(...upsertParams(ref, state, info)));
    },
  };
  const transaction = <T>(body: (store: RateLimitStore) => Promise<T>): Promise<T> =>
    oneAtATime(db, async () => {
      const own = openTransaction(connection) !== true;
      exec(own ? "BEGIN IMMEDIATE" : "SAVEPOINT ratebound_call");
      let result: T;
      try {
        result = await body(store);
      } catch (error) {
        try {
          if (own) {
            if (openTransaction(connection)) connection.exec("ROLLBACK");
          } else {
            connection.exec("ROLLBACK TO ratebound_call");
            connection.exec("RELEASE ratebound_call");
          }
        } catch {
          // The connection is closed, or SQLite already rolled back: nothing of the call remains.
        }
        throw error;
      }
      exec(own ? "COMMIT" : "RELEASE ratebound_call");
      return result;
    });
  return { ...store, transaction };
}
