/**
 * ratebound/sqlite over libSQL (`@libsql/client`), which is asynchronous: its client, and the
 * interactive transaction it opens (`await client.transaction("write")`).
 *
 * - **The client** (`createClient({ url })`): each call runs in a transaction of its own,
 *   `client.transaction("write")`, which opens with `BEGIN IMMEDIATE`: the write lock is taken
 *   before the first read, so two connections never both decide on one state. On a local
 *   database (`file:` URLs, `:memory:`) a process's calls on one client take turns: the client's
 *   driver is synchronous, so a second `BEGIN IMMEDIATE` in the same process would wait for the
 *   lock with the event loop blocked, and fail `SQLITE_BUSY`, while the first could not finish.
 * - **A transaction** (`await client.transaction("write")`): each call runs inside it, in a
 *   savepoint, so the app's writes and the limit commit or roll back together; calls on one
 *   transaction run one at a time.
 * @module
 */
import type { RateLimitState, RateLimitStore, StateRef } from "ratebound";
import { codedError, hasMethod, oneAtATime, refColumns, sqliteStatements, stateOf, upsertParams, type WriteInfo } from "./shared/sql.js";

/** What ratebound uses of a libSQL client or transaction: `execute({ sql, args })`. */
export interface LibsqlExecutorLike {
  /** Runs one statement with `?` parameters. */
  execute(statement: { sql: string; args: any[] }): Promise<{ rows: ArrayLike<unknown>; rowsAffected: number }>;
}

/** A libSQL client (`createClient` from `@libsql/client`), as ratebound uses it. */
export interface LibsqlClientLike extends LibsqlExecutorLike {
  /** Opens an interactive transaction (`"write"`: `BEGIN IMMEDIATE`). */
  transaction(mode: "write"): Promise<LibsqlTransactionLike>;
  /** `"file"` for a local database, else the remote protocol (`"http"`, `"ws"`, …). */
  readonly protocol: string;
}

/** A libSQL interactive transaction (`await client.transaction("write")`), as ratebound uses it. */
export interface LibsqlTransactionLike extends LibsqlExecutorLike {
  /** Commits it. */
  commit(): Promise<void>;
  /** Rolls it back. */
  rollback(): Promise<void>;
  /** Frees its connection (rolling back what is not committed). */
  close(): void;
  /** Whether it is over. */
  readonly closed: boolean;
}

/** Whether `db` is a libSQL client or one of its transactions, by their methods. */
export function isLibsql(db: unknown): db is LibsqlClientLike | LibsqlTransactionLike {
  return hasMethod(db, "execute") && hasMethod(db, "batch") && (isLibsqlClient(db) || (hasMethod(db, "commit") && hasMethod(db, "rollback")));
}

function isLibsqlClient(db: unknown): db is LibsqlClientLike {
  return hasMethod(db, "transaction") && hasMethod(db, "executeMultiple") && typeof (db as { protocol?: unknown }).protocol === "string";
}

/** Runs one statement; a driver failure becomes an `Error` with a `code` (libSQL's, such as `SQLITE_BUSY`). */
async function execute(db: LibsqlExecutorLike, sql: string, args: unknown[]): Promise<{ rows: ArrayLike<unknown>; rowsAffected: number }> {
  try {
    return await db.execute({ sql, args });
  } catch (error) {
    throw codedError("sqlite", error);
  }
}

/** Runs `sql` once with `args` on a libSQL client or transaction (createTable, pruneStates); resolves to the rows it changed. */
export async function libsqlRun(db: LibsqlExecutorLike, sql: string, args: unknown[] = []): Promise<number> {
  return (await execute(db, sql, args)).rowsAffected;
}

/**
 * A store over a libSQL client or transaction (see the module's comment).
 *
 * @param db The client, or a transaction it opened.
 * @param table The quoted table.
 * @returns The store.
 */
export function libsqlStore(db: LibsqlClientLike | LibsqlTransactionLike, table: string): RateLimitStore {
  const sql = sqliteStatements(table);
  const storeOn = (executor: LibsqlExecutorLike): RateLimitStore => ({
    read: async (ref: StateRef) => stateOf((await execute(executor, sql.read, refColumns(ref))).rows[0]),
    write: async (ref: StateRef, state: RateLimitState | null, info?: WriteInfo) => {
      if (state === null) await execute(executor, sql.delete, refColumns(ref));
      else await execute(executor, sql.upsert, upsertParams(ref, state, info));
    },
  });
  const inOwnTransaction = async <T>(client: LibsqlClientLike, body: (store: RateLimitStore) => Promise<T>): Promise<T> => {
    let tx: LibsqlTransactionLike;
    try {
      tx = await client.transaction("write");
    } catch (error) {
      throw codedError("sqlite", error);
    }
    try {
      const result = await body(storeOn(tx));
      try {
        await tx.commit();
      } catch (error) {
        throw codedError("sqlite", error);
      }
      return result;
    } finally {
      // Closing a transaction that did not commit rolls it back.
      tx.close();
    }
  };
  const inCallersTransaction = async <T>(tx: LibsqlTransactionLike, body: (store: RateLimitStore) => Promise<T>): Promise<T> => {
    await execute(tx, "SAVEPOINT ratebound_call", []);
    let result: T;
    try {
      result = await body(storeOn(tx));
    } catch (error) {
      try {
        await tx.execute({ sql: "ROLLBACK TO ratebound_call", args: [] });
        await tx.execute({ sql: "RELEASE ratebound_call", args: [] });
      } catch {
        // The transaction is over (closed or rolled back): nothing of the call remains.
      }
      throw error;
    }
    await execute(tx, "RELEASE ratebound_call", []);
    return result;
  };
  const transaction = <T>(body: (store: RateLimitStore) => Promise<T>): Promise<T> => {
    if (!isLibsqlClient(db)) return oneAtATime(db, () => inCallersTransaction(db, body));
    if (db.protocol === "file") return oneAtATime(db, () => inOwnTransaction(db, body));
    return inOwnTransaction(db, body);
  };
  return {
    read: (ref) => transaction((store) => Promise.resolve(store.read(ref))),
    write: (ref, state, info?: WriteInfo) => transaction(async (store) => void (await store.write(ref, state, info))),
    transaction,
  };
}
