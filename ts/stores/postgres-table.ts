/**
 * ratebound/postgres's table: its SQL, `createTable` and `pruneStates`, and the shapes of the
 * connections they take. Re-exported by `ratebound/postgres`.
 * @module
 */
import { codedError, hasMethod, quotedTable } from "./shared/sql.js";
import { ownCopy } from "./shared/options.js";

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

/**
 * The SQL of {@link createTable}, for migrations: the table and its primary key.
 *
 * @param options `table`: its name, `name` or `schema.name` (default `"ratebound"`).
 * @returns One `CREATE TABLE IF NOT EXISTS` statement.
 * @example
 * writeFileSync("migrations/001_ratebound.sql", createTableSql() + ";\n");
 */
export function createTableSql(given: PostgresTableOptions = {}): string {
  const options = ownCopy("createTableSql", given, ["table"]);
  const table = quotedTable("postgres", options.table ?? "ratebound");
  return `CREATE TABLE IF NOT EXISTS ${table} (
  name text NOT NULL,
  key text NOT NULL,
  shard integer NOT NULL,
  value double precision NOT NULL,
  ts double precision NOT NULL,
  full_at double precision NOT NULL DEFAULT 'Infinity',
  PRIMARY KEY (name, key, shard)
)`;
}

/**
 * Creates ratebound's table with its primary key if it does not exist yet (safe to run on every start).
 *
 * @param db A `pg` Client or Pool, PGlite, or any {@link PostgresQueryable}.
 * @param options `table`: its name (default `"ratebound"`).
 * @returns When the table exists.
 * @example
 * await createTable(pool); // CREATE TABLE IF NOT EXISTS "ratebound" (…)
 */
export async function createTable(db: PostgresQueryable | PostgresJsLike, given: PostgresTableOptions = {}): Promise<void> {
  const options = ownCopy("createTable", given, ["table"]);
  const sql = createTableSql(options);
  try {
    await queryable(db).query(sql, []);
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
export async function pruneStates(db: PostgresQueryable | PostgresJsLike, given: PostgresTableOptions & { now?: number } = {}): Promise<number> {
  const options = ownCopy("pruneStates", given, ["table", "now"]);
  const table = quotedTable("postgres", options.table ?? "ratebound");
  try {
    const { rows } = await queryable(db).query(`WITH gone AS (DELETE FROM ${table} WHERE full_at <= $1 RETURNING 1) SELECT count(*)::int AS n FROM gone`, [
      options.now ?? Date.now(),
    ]);
    return (rows[0] as { n: number }).n;
  } catch (error) {
    throw codedError("postgres", error);
  }
}

/** Any supported `db` as a {@link PostgresQueryable}: postgres.js through {@link queryableOf}. */
export function queryable(db: PostgresQueryable | PostgresJsLike): PostgresQueryable {
  return hasMethod(db, "query") ? (db as PostgresQueryable) : queryableOf(db as PostgresJsLike);
}

/** A postgres.js `sql` as a {@link PostgresQueryable}. */
export function queryableOf(sql: PostgresJsLike): PostgresQueryable {
  return { query: async (text, params) => ({ rows: [...(await sql.unsafe(text, params))] }) };
}
