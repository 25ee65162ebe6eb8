/**
 * ratebound over PostgreSQL. Works with `pg` (Client, PoolClient, Pool), PGlite, postgres.js, and
 * anything with `query(text, params) → { rows }`.
 *
 * `limit`, `check`, `limitAll` and `checkAll` are ONE statement: {@link PostgresStore.decide}
 * calls a function `createTable` installs (`<table>_decide_one_v3` or `<table>_decide_v3`, a port
 * of the core's decision, see `postgres-decide.ts`), which locks every state the call reads,
 * decides and writes inside the server. On a pool that is one round trip, shared by the calls
 * that arrive while the store's statements are in flight (group commit: `<table>_decide_many_v3`
 * decides them in one statement, in arrival order); inside the caller's transaction the locks are
 * held to its end, so the limit commits or rolls back with the app's own writes.
 *
 * Grants and settles, `getValue` and `reset` run as a transaction of reads and writes (the
 * caller's own when it has one, see `postgres-attempt.ts`): each state is locked before it is
 * read, with the same advisory lock the functions take, then its row. Two transactions never both
 * decide on the same state, and ratebound's calls never wait on each other in a cycle.
 *
 * Every statement names the table and the functions with their schema and casts each parameter
 * to a `pg_catalog` type (see docs/postgres.md, "Security"): nothing another role creates in a
 * schema on the caller's search path can stand in for them.
 * @module
 */
import { withJitter, type RateLimitStore, type RemoteAnswer, type RemoteBatch } from "ratebound";
import { queryableOf, tableSchema, type PostgresJsLike, type PostgresQueryable } from "./postgres-table.js";
import { quoteIdentifier } from "./postgres-decide.js";
import { fromOrm, notAConnection, type PostgresOrmClient } from "./postgres-clients.js";
import { Attempt, LockBusy, advisoryLockText, contended, postgresColumns, postgresColumnsNow } from "./postgres-attempt.js";
import {
  answerOf,
  badRow,
  batchParams,
  decideStatements,
  expectParam,
  manyAnswers,
  manyParams,
  oneItem,
  oneParams,
  parseAnswer,
  parseLimitsAnswer,
  type DecideStatements,
  type GroupCall,
} from "./postgres-call.js";
import { GroupCommit } from "./shared/group-commit.js";
import { NESTED, OWN, framed, listen, run, whileListening, wrapped, type Frame } from "./postgres-connection.js";
import { SqlStoreError, codedError, describe, hasMethod, invalidOption, oneAtATime, tableParts, type WriteInfo } from "./shared/sql.js";
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

/** The most items one group commit's statement carries (a call with more goes alone). */
const GROUP_ITEMS = 128;

/** SQLSTATEs after which a transaction of our own is safely run again: serialization failure, deadlock. */
const RETRYABLE = new Set(["40001", "40P01"]);

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
 *   transaction); while the pool's size of them are in flight, the calls that arrive wait and
 *   go together in the next one (group commit, decided in arrival order exactly as one by one).
 *   A transaction takes a connection and runs `BEGIN … COMMIT` on it.
 * - **PGlite itself**: a decision is one `db.query`; a transaction runs in `db.transaction()`.
 * - **postgres.js**: its `sql` (a pool: group commit as above) runs a decision as one statement and a transaction in
 *   `sql.begin()`; a transaction's `sql` (the `tx` of `sql.begin(async (tx) => …)`) runs both
 *   inside the app's transaction (a transaction in `tx.savepoint()`).
 *
 * Each state a call reads is locked first (a transaction-scoped advisory lock on the ref, then its
 * row `FOR UPDATE`), in one global order, so under READ COMMITTED concurrent calls never
 * over-admit or lose an update, and at no isolation level do they deadlock each other. Under
 * REPEATABLE READ and SERIALIZABLE a call still never over-admits: a decision on a stale snapshot
 * fails with SQLSTATE `40001`, which a call of its own retries and a call in the caller's
 * transaction passes on.
 *
 * A bare `table` name is looked up once per `db` object in the session's search path (one
 * statement); a name with its schema is not (see docs/postgres.md, "Security").
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
  // The table as each ref's advisory lock names it: as the option gives it, as every version did.
  const lockTable = parts.map(quoteIdentifier).join(".");
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

  let resolved: Promise<DecideStatements> | undefined;
  /** The statements once {@link statements} has them. */
  let known: DecideStatements | undefined;
  /** The statements, every name in them with its schema: for a bare table name, looked up at the first call (see `tableSchema`). */
  function statements(): Promise<DecideStatements> {
    resolved ??= tableSchema(db, parts, runStatement).then(
      (schema) => (known = decideStatements(schema, parts[parts.length - 1]!)),
      (error: unknown) => {
        resolved = undefined;
        throw error;
      },
    );
    return resolved;
  }

  /** Runs `body` until an attempt commits; `frame` starts an attempt on a connection, commits it, or rolls it back. */
  async function attempts<T>(frame: Frame<T>, body: (store: RateLimitStore) => Promise<T>, retrySqlstate: boolean): Promise<T> {
    const { table } = await statements();
    for (let attempt = 1; ; attempt++) {
      try {
        return await frame(async (connection) => {
          const attempt = new Attempt(connection, table, lockTable);
          try {
            return await body(attempt);
          } finally {
            // No statement of the attempt may follow its COMMIT or ROLLBACK on the connection.
            await attempt.idle();
          }
        });
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        const again = error instanceof LockBusy || (retrySqlstate && typeof code === "string" && RETRYABLE.has(code));
        if (!again) throw error;
        if (attempt >= maxAttempts) throw contended(attempt, error instanceof LockBusy ? undefined : error);
        await backOff(attempt, error instanceof LockBusy ? "locked" : String(code));
      }
    }
  }

  /** Runs a statement where `db` says (outside any transaction of the store's), and returns its rows. */
  async function runStatement(text: string, params: unknown[]): Promise<unknown[]> {
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
      throw codedError("postgres", error);
    }
  }

  /** Runs a decision statement, and returns its rows; a missing function `fn` says what to do. */
  async function runDecide(text: string, params: (string | null)[], fn: string): Promise<unknown[]> {
    try {
      return await runStatement(text, params);
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

  /** One statement deciding `batch` alone; rejects with the function's error or the statement's. */
  async function decideAlone({ batch, columns }: GroupCall): Promise<RemoteAnswer> {
    const names = await statements();
    const limits = batch.limits;
    if (limits !== undefined && limits.length > 0) {
      // Stored limits: checked in the same statement, against what the batch was planned on.
      const params = [...batchParams(batch, columns, lockTable), expectParam(limits)];
      return answerOf(await runDecide(names.decideLimitsText, params, names.decideLimits), (answer) => parseLimitsAnswer(answer, batch));
    }
    const one = oneItem(batch);
    const [text, params] = one !== undefined
      ? [names.decideOneText, oneParams(one, columns[0]!, advisoryLockText(lockTable, batch.refs[0]!))]
      : [names.decideText, batchParams(batch, columns, lockTable)];
    return answerOf(await runDecide(text, params, one === undefined ? names.decide : names.decideOne), (answer) => parseAnswer(answer, batch));
  }

  /** A group commit's statement: one call as it goes alone, several in one call of the many-calls function. */
  async function decideGroup(calls: GroupCall[]): Promise<(RemoteAnswer | Error)[]> {
    if (calls.length === 1) return [await decideAlone(calls[0]!)];
    const names = await statements();
    const rows = await runDecide(names.decideManyText, manyParams(calls, lockTable), names.decideMany);
    return answerOf(rows, (answer) => manyAnswers(answer, calls));
  }

  // A pool's calls go together (group commit): the calls that arrive while the pool's connections
  // all run a statement of this store's go in the next one, one statement for many calls. Up to
  // the pool's size of statements in flight, so that no connection of the pool idles while calls
  // wait. A client, a transaction or PGlite decides each call alone, in the caller's order.
  // (pg.Pool's size and postgres.js's are both `options.max`, 10 by default.)
  const poolSize = (db as { options?: { max?: unknown } }).options?.max;
  const group = isPool || postgresJs?.begin !== undefined
    ? new GroupCommit<GroupCall, RemoteAnswer>({
        maxSize: GROUP_ITEMS,
        size: (call) => call.batch.items.length,
        inFlight: typeof poolSize === "number" && Number.isInteger(poolSize) && poolSize >= 1 ? poolSize : 10,
        send: decideGroup,
      })
    : undefined;

  /** One statement (shared with other calls on a pool): the function locks, reads, decides and writes; see {@link PostgresStore.decide}. */
  async function decide(batch: RemoteBatch): Promise<RemoteAnswer> {
    // At once when nothing needs waiting for (no long name to hash, the table's schema known): the
    // calls on a pool join their group commit in the order they were made.
    const now = batch.refs.map(postgresColumnsNow);
    const columns = now.every((column) => column !== undefined) ? (now as [string, string, number][]) : await Promise.all(batch.refs.map(postgresColumns));
    const call: GroupCall = { batch, columns };
    if (known === undefined) await statements();
    // A call of its own reruns on a serialization failure or a deadlock; in the caller's
    // transaction that is the caller's to do (the function rolled its own work back).
    const retry = isPool || isPGlite || postgresJs?.begin !== undefined;
    for (let attempt = 1; ; attempt++) {
      let failure: Error;
      try {
        // A batch on stored limits goes alone (its statement checks the records it was planned on).
        return await (group === undefined || batch.limits?.length ? decideAlone(call) : group.enqueue(call));
      } catch (error) {
        // The function's error, or the statement's: under SERIALIZABLE a commit can fail (40001,
        // read/write dependencies found at COMMIT, after the function returned): nothing was committed.
        failure = error as Error;
      }
      const code = (failure as { code?: unknown }).code;
      if (!(retry && typeof code === "string" && RETRYABLE.has(code))) throw failure;
      if (attempt >= maxAttempts) throw contended(attempt, failure);
      await backOff(attempt, code);
    }
  }

  async function transaction<T>(body: (store: RateLimitStore) => Promise<T>): Promise<T> {
    // The table's schema first: its lookup is a statement of its own on the connection, which
    // must not wait in the connection's queue behind the transaction about to take it.
    await statements();
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
    checksStoredLimits: true,
    read: (ref) => transaction((store) => Promise.resolve(store.read(ref))),
    write: (ref, state, info?: WriteInfo) => transaction(async (store) => void (await (store as Attempt).write(ref, state, info))),
  };
}
