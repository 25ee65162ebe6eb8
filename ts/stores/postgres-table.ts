/**
 * ratebound/postgres's table: its SQL, `createTable` and `pruneStates`, and the shapes of the
 * connections they take. Re-exported by `ratebound/postgres`.
 * @module
 */
import { codedError, describe, hasMethod, invalidOption, tableParts } from "./shared/sql.js";
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

/** Stands for the schema in an unqualified table's statements until the install block knows it. */
const SCHEMA_PLACEHOLDER = '"@ratebound-schema@"';

/**
 * The schemas of the session's search path that hold a relation named `$1` (any kind: a view of
 * that name ahead of the table is as ambiguous as a table). Every name in it is `pg_catalog`'s, so
 * no schema ahead on the search path can change what it means.
 */
const SCHEMAS_HOLDING = `SELECT n.nspname::pg_catalog.text AS schema FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n
  ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
  WHERE c.relname OPERATOR(pg_catalog.=) $1::pg_catalog.name AND n.nspname OPERATOR(pg_catalog.=) ANY (pg_catalog.current_schemas(false))`;

/**
 * The one statement {@link createTable} runs and {@link createTableSql} returns: a `DO` block
 * that, under an advisory lock, finds the table's schema, pins its own `search_path` (so the
 * table's column types and the functions' signatures are `pg_catalog`'s), creates the table if it
 * does not exist and creates or replaces the functions, in that schema.
 *
 * The schema: the one named (`schema.name`); for a bare name, the one schema of the search path
 * that already holds a relation of that name, else `current_schema()` (where `CREATE TABLE` would
 * put it). Two schemas of the search path holding that name fail with `42P01` (name the schema).
 */
function installBlock(given: PostgresTableOptions, fn: string): string {
  const options = ownCopy(fn, given, ["table"]);
  const parts = tableParts("postgres", options.table ?? "ratebound");
  const name = parts[parts.length - 1]!;
  const qualified = parts.length === 2;
  const names = decideFunctionName(qualified ? parts[0]! : "@ratebound-schema@", name);
  const statements = [
    `CREATE TABLE IF NOT EXISTS ${names.table} (
  name text NOT NULL,
  key text NOT NULL,
  shard integer NOT NULL,
  value double precision NOT NULL,
  ts double precision NOT NULL,
  full_at double precision NOT NULL DEFAULT 'Infinity',
  PRIMARY KEY (name, key, shard)
)`,
    ...decideFunctionSql(names.schema, names.table, names.decide, names.decideOne, names.decideMany, names.decideLimits),
  ];
  // (Table names are letters, digits and _: a literal needs no escaping.)
  const target = qualified
    ? `target := '${parts[0]}';`
    : `holders := ARRAY(${SCHEMAS_HOLDING.replace("$1", `'${name}'`)});
  target := COALESCE(holders[1], pg_catalog.current_schema());`;
  return [
    "DO $ratebound$",
    "DECLARE",
    "  holders text[] := '{}';",
    "  target text;",
    "  previous text := pg_catalog.current_setting('search_path');",
    "BEGIN",
    "  PERFORM pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended('ratebound createTable', 0));",
    `  ${target}`,
    "  PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);",
    "  IF cardinality(holders) > 1 THEN",
    `    RAISE EXCEPTION USING ERRCODE = '42P01', MESSAGE = format('ratebound/postgres: %s schemas of the search path (%s) hold a relation named "${name}": name the table''s schema (table: "schema.${name}")', cardinality(holders), array_to_string(holders, ', '));`,
    "  END IF;",
    "  IF target IS NULL THEN",
    `    RAISE EXCEPTION USING ERRCODE = '3F000', MESSAGE = 'ratebound/postgres: the search path names no schema to create "${name}" in: name its schema (table: "schema.${name}")';`,
    "  END IF;",
    ...statements.map((statement, index) => {
      const quoted = `$ratebound_${index}$${statement}$ratebound_${index}$`;
      return qualified ? `  EXECUTE ${quoted};` : `  EXECUTE replace(${quoted}, '${SCHEMA_PLACEHOLDER}', quote_ident(target));`;
    }),
    "  PERFORM set_config('search_path', previous, true);",
    "END $ratebound$",
  ].join("\n");
}

/**
 * The SQL of {@link createTable}, for migrations: one `DO` block that creates the table and its
 * primary key if they do not exist, then runs `CREATE OR REPLACE FUNCTION` for the functions every
 * `limit`, `check`, `limitAll` and `checkAll` calls (`<table>_decide_v3`, `<table>_decide_one_v3`)
 * and their helpers (`ratebound_v3_*`), in the table's schema. It is idempotent: apply it again
 * after upgrading ratebound, on an existing table too. For a bare table name it finds the schema
 * when applied (see docs/postgres.md, "Security").
 *
 * @param options `table`: its name, `name` or `schema.name` (default `"ratebound"`).
 * @returns The statement (no trailing `;`).
 * @throws RateboundTypeError (`code: "INVALID_ARGUMENT"`) for a bad `table`.
 * @example
 * writeFileSync("migrations/001_ratebound.sql", createTableSql({ table: "app.ratebound" }) + ";\n");
 */
export function createTableSql(given: PostgresTableOptions = {}): string {
  return installBlock(given, "createTableSql");
}

/**
 * Creates ratebound's table with its primary key if it does not exist yet, and installs (or
 * replaces) its decision functions, in one statement and one transaction: safe to run on every
 * start, from many processes at once (they take turns on an advisory lock). An install of an
 * earlier version keeps its rows and its functions (`…_v1`, for processes still running that
 * version); the new ones are created beside them.
 *
 * @param db A `pg` Client or Pool, PGlite, a postgres.js `sql`, or any {@link PostgresQueryable}.
 * @param options `table`: its name (default `"ratebound"`).
 * @returns When the table and the functions exist.
 * @throws RateboundTypeError (`code: "INVALID_ARGUMENT"`) for a bad `db` or `table`; rejects with the database's coded error.
 * @example
 * await createTable(pool); // CREATE TABLE IF NOT EXISTS "public"."ratebound" (…), CREATE OR REPLACE FUNCTION "public"."ratebound_decide_v3" (…)
 */
export async function createTable(db: PostgresQueryable | PostgresJsLike | PostgresOrmClient, given: PostgresTableOptions = {}): Promise<void> {
  const block = installBlock(given, "createTable");
  const connection = queryable(db);
  // One DO block: one statement on any driver (PGlite's query() takes one), one transaction, and
  // concurrent installs take turns (two CREATE OR REPLACE FUNCTION at once can fail with XX000).
  try {
    await connection.query(block, []);
  } catch (error) {
    throw codedError("postgres", error);
  }
}

/** Each connection's resolved schemas, by bare table name: a lookup per connection object, not per call. */
const schemas = new WeakMap<object, Map<string, string>>();

/**
 * The schema that holds the table: the one named, or for a bare name the one schema of the
 * session's search path that holds a relation of that name, looked up once per `db` object (a pool,
 * a client) and table. Rejects, having written nothing, with `42P01` when no schema or more than
 * one holds it: a second one could be a schema ahead of the table's where another role created a
 * relation of that name to stand in for it.
 *
 * @param db The connection the lookup is cached on.
 * @param parts The table's name, `[name]` or `[schema, name]`.
 * @param rows Runs a statement where the store runs its statements and returns its rows.
 * @returns The schema, unquoted.
 */
export async function tableSchema(db: object, parts: readonly string[], rows: (text: string, params: unknown[]) => Promise<unknown[]>): Promise<string> {
  if (parts.length === 2) return parts[0]!;
  const name = parts[0]!;
  const known = schemas.get(db)?.get(name);
  if (known !== undefined) return known;
  const found = (await rows(SCHEMAS_HOLDING, [name])).map((row) => String((row as { schema?: unknown }).schema));
  if (found.length !== 1) {
    const message =
      found.length === 0
        ? `ratebound/postgres: no schema of the search path holds the table "${name}": run createTable(db) (or apply createTableSql()), or name its schema (table: "schema.${name}"); nothing was written`
        : `ratebound/postgres: ${found.length} schemas of the search path (${found.join(", ")}) hold a relation named "${name}": name the table's schema (table: "schema.${name}"), so that no schema ahead of it can stand in for it; nothing was written`;
    throw Object.assign(new Error(message), { name: "PostgresError", code: "42P01" });
  }
  if (!schemas.has(db)) schemas.set(db, new Map());
  schemas.get(db)!.set(name, found[0]!);
  return found[0]!;
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
  const parts = tableParts("postgres", options.table ?? "ratebound");
  const connection = queryable(db);
  try {
    const rows = async (text: string, params: unknown[]) => (await connection.query(text, params)).rows;
    const { table } = decideFunctionName(await tableSchema(db, parts, rows), parts[parts.length - 1]!);
    const deleted = await rows(
      `WITH gone AS (DELETE FROM ${table} WHERE full_at OPERATOR(pg_catalog.<=) $1::pg_catalog.float8 RETURNING 1) SELECT pg_catalog.count(*)::pg_catalog.int4 AS n FROM gone`,
      [options.now ?? Date.now()],
    );
    return (deleted[0] as { n: number }).n;
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
