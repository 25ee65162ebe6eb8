/**
 * ratebound/postgres's table: its SQL, `createTable` and `pruneStates`, and the shapes of the
 * connections they take. Re-exported by `ratebound/postgres`.
 * @module
 */
import { codedError, describe, hasMethod, invalidOption, quotedTable, tableParts } from "./shared/sql.js";
import { ownCopy } from "./shared/options.js";
import { decideFunctionName, decideFunctionSql } from "./postgres-decide.js";
import { fromOrm, type PostgresOrmClient } from "./postgres-clients.js";

/** What ratebound uses of a connection: satisfied by `pg`'s Client and PoolClient, PGlite and its transactions. */
export interface PostgresQueryable {
  /** Runs one statement with `$1`-style parameters. */
  query(text: string, params?: unknown[]): Promise<{ rows: unknown[] }>;
}

/**
 * postgres.js (`postgres`): its `sql`, which runs each call in `sql.begin()`, or the `sql` of a
 * transaction (`sql.begin(async (tx) => …)`'s `tx`), which runs each call in `tx.savepoint()`.
 */
export interface PostgresJsLike {
  /** Runs one statement with `$1`-style parameters; resolves to its rows. */
  unsafe(text: string, params?: any[]): PromiseLike<readonly unknown[]>;
  /** Runs a transaction (the top-level `sql` has it). */
  begin?(run: (sql: any) => Promise<any>): Promise<any>;
  /** Runs a savepoint (a transaction's `sql` has it). */
  savepoint?(run: (sql: any) => Promise<any>): Promise<any>;
}

/** Options naming the table: `name` or `schema.name`, default `"ratebound"`. */
export interface PostgresTableOptions {
  /** The table, `name` or `schema.name`; default `"ratebound"`. */
  table?: string;
}

/** The statements of {@link createTable}, in order: the table, then the decision function and its helpers. */
function tableStatements(given: PostgresTableOptions, fn: string): string[] {
  const options = ownCopy(fn, given, ["table"]);
  const parts = tableParts("postgres", options.table ?? "ratebound");
  const table = parts.map((part) => `"${part}"`).join(".");
  const { schema, decide, decideOne } = decideFunctionName(parts);
  return [
    `CREATE TABLE IF NOT EXISTS ${table} (
  name text NOT NULL,
  key text NOT NULL,
  shard integer NOT NULL,
  value double precision NOT NULL,
  ts double precision NOT NULL,
  full_at double precision NOT NULL DEFAULT 'Infinity',
  PRIMARY KEY (name, key, shard)
)`,
    ...decideFunctionSql(schema, table, decide, decideOne),
  ];
}

/**
 * The SQL of {@link createTable}, for migrations: the table and its primary key, then
 * `CREATE OR REPLACE FUNCTION` for the function every `limit`, `check`, `limitAll` and `checkAll`
 * calls (`<table>_decide_v1`) and its helpers (`ratebound_v1_*`, in the table's schema). Every
 * statement is idempotent: apply it again after upgrading ratebound, on an existing table too.
 *
 * @param options `table`: its name, `name` or `schema.name` (default `"ratebound"`).
 * @returns The statements, separated by `;` (the last without one).
 * @throws RateboundTypeError (`code: "INVALID_ARGUMENT"`) for a bad `table`.
 * @example
 * writeFileSync("migrations/001_ratebound.sql", createTableSql() + ";\n");
 */
export function createTableSql(given: PostgresTableOptions = {}): string {
  return tableStatements(given, "createTableSql").join(";\n\n");
}

/**
 * Creates ratebound's table with its primary key if it does not exist yet, and installs (or
 * replaces) its decision function, in one statement and one transaction: safe to run on every
 * start, from many processes at once (they take turns on an advisory lock).
 *
 * @param db A `pg` Client or Pool, PGlite, a postgres.js `sql`, or any {@link PostgresQueryable}.
 * @param options `table`: its name (default `"ratebound"`).
 * @returns When the table and the function exist.
 * @throws RateboundTypeError (`code: "INVALID_ARGUMENT"`) for a bad `db` or `table`; rejects with the database's coded error.
 * @example
 * await createTable(pool); // CREATE TABLE IF NOT EXISTS "ratebound" (…), CREATE OR REPLACE FUNCTION "ratebound_decide_v1" (…)
 */
export async function createTable(db: PostgresQueryable | PostgresJsLike | PostgresOrmClient, given: PostgresTableOptions = {}): Promise<void> {
  const statements = tableStatements(given, "createTable");
  const connection = queryable(db);
  // One DO block: one statement on any driver (PGlite's query() takes one), one transaction, and
  // concurrent installs take turns (two CREATE OR REPLACE FUNCTION at once can fail with XX000).
  const block = [
    "DO $ratebound$ BEGIN",
    "PERFORM pg_advisory_xact_lock(hashtextextended('ratebound createTable', 0));",
    ...statements.map((statement, index) => `EXECUTE $ratebound_${index}$${statement}$ratebound_${index}$;`),
    "END $ratebound$",
  ].join("\n");
  try {
    await connection.query(block, []);
  } catch (error) {
    throw codedError("postgres", error);
  }
}

/**
 * Deletes every state that is full at `now`: deleting it changes no decision. Safe while the
 * limiter runs (a state written meanwhile carries a later `full_at` and stays).
 *
 * @param db A `pg` Client or Pool, PGlite, or any {@link PostgresQueryable}.
 * @param options `now` in milliseconds since the epoch (default `Date.now()`), and `table`.
 * @returns How many states were deleted.
 * @example
 * setInterval(() => pruneStates(pool), HOUR);
 */
export async function pruneStates(db: PostgresQueryable | PostgresJsLike | PostgresOrmClient, given: PostgresTableOptions & { now?: number } = {}): Promise<number> {
  const options = ownCopy("pruneStates", given, ["table", "now"]);
  const table = quotedTable("postgres", options.table ?? "ratebound");
  const connection = queryable(db);
  try {
    const { rows } = await connection.query(`WITH gone AS (DELETE FROM ${table} WHERE full_at <= $1 RETURNING 1) SELECT count(*)::int AS n FROM gone`, [
      options.now ?? Date.now(),
    ]);
    return (rows[0] as { n: number }).n;
  } catch (error) {
    throw codedError("postgres", error);
  }
}

/** Any supported `db` as a {@link PostgresQueryable}: postgres.js through {@link queryableOf}. */
export function queryable(client: PostgresQueryable | PostgresJsLike | PostgresOrmClient): PostgresQueryable {
  const db = fromOrm(client);
  if (hasMethod(db, "query")) return db as PostgresQueryable;
  if (hasMethod(db, "unsafe")) return queryableOf(db as PostgresJsLike);
  throw invalidOption(
    `ratebound/postgres: db must have a query(text, params) method, like a pg Client, Pool or PGlite, or be a postgres.js sql (got ${describe(db)})`,
    "db",
  );
}

/** A postgres.js `sql` as a {@link PostgresQueryable}. */
export function queryableOf(sql: PostgresJsLike): PostgresQueryable {
  return { query: async (text, params) => ({ rows: [...(await sql.unsafe(text, params))] }) };
}
