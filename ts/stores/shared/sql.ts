/**
 * What the SQL hosts (`ratebound/postgres`, `ratebound/sqlite`) share: how a
 * ref becomes column values, the error they fail closed with, table names,
 * and a queue that gives one connection to one call at a time.
 * @module
 */
import { RateboundTypeError, type RateLimitState, type StateRef, type WriteInfo } from "ratebound";

export type { WriteInfo };

/**
 * How a call against a SQL store failed when the database driver gave no
 * string `code` of its own (errors that carry one, such as SQLSTATE `40001`
 * from `pg` or `SQLITE_BUSY` from better-sqlite3, are passed on unchanged).
 * Whatever the code, the call wrote nothing.
 *
 * - `SQL_FAILED`: the driver threw an error without a code of its own (for example "Connection
 *   terminated"); `cause` holds it. Retry once the database is reachable.
 * - `SQL_LOCK_CONTENDED`: every attempt found a state it needed locked by another transaction
 *   (`maxAttempts` of them). Retry later, or give the limit fewer shards.
 * - `SQL_BAD_ROW`: the connection answered with something that is not what ratebound asked
 *   for: `query()` resolved without `{ rows: [...] }` (a wrapper around the driver that changes
 *   its answers), or the decision function answered for another batch (a function of that name
 *   that is not ratebound's). Pass the driver's own client, and run `createTable(db)` again.
 *
 * Errors of the database itself keep its SQLSTATE as their `code` (`40001`, `40P01`, `55P03`,
 * `57014`, `42883` when the decision function is missing, …), and socket errors their own.
 *
 * @example
 * try { await limiter.limit("api", { key }); }
 * catch (error) { if (error instanceof SqlStoreError) return new Response("Busy", { status: 503 }); }
 * @see {@link https://github.com/ratebound/ratebound/blob/main/docs/errors.md#sql-sqlstoreerror | docs/errors.md}: every code, what it means, what to do.
 */
export class SqlStoreError extends Error {
  /** Why the call failed: see the class's documentation. */
  readonly code: "SQL_FAILED" | "SQL_LOCK_CONTENDED" | "SQL_BAD_ROW";

  /**
   * @param code Why the call failed.
   * @param message What happened, for people.
   * @param cause The driver's error, when there was one.
   */
  constructor(code: SqlStoreError["code"], message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "SqlStoreError";
    this.code = code;
  }
}

/**
 * A driver's failure as the store reports it: an `Error` that already carries a
 * string `code` is kept (its code is the database's own word for what went
 * wrong), anything else is wrapped in a {@link SqlStoreError} `SQL_FAILED`.
 *
 * @param host `"postgres"` or `"sqlite"`, for the message.
 * @param error What the driver threw or rejected with.
 * @returns An `Error` with a string `code`.
 */
export function codedError(host: string, error: unknown): Error {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  const missing = missingTable(host, code, message);
  if (error instanceof Error && typeof code === "string") {
    if (missing === undefined) return error;
    // The driver's own code stays (code that switches on it keeps working); the message says what to do.
    return Object.assign(new Error(`ratebound/${host}: ${message}${missing}`, { cause: error }), { name: error.name, code });
  }
  return new SqlStoreError("SQL_FAILED", `ratebound/${host}: the database driver failed: ${message}${missing ?? "; nothing was written"}`, error);
}

/**
 * What to do when the driver's error says ratebound's table does not exist (PostgreSQL's
 * `42P01`; SQLite's and D1's "no such table"), or `undefined` for any other error.
 */
function missingTable(host: string, code: unknown, message: string): string | undefined {
  const missing = host === "postgres" ? code === "42P01" : /\bno such table\b/i.test(message);
  return missing
    ? `; ratebound's table is missing: run createTable(db) once at startup (from ratebound/${host}), or apply createTableSql() in your migrations; nothing was written`
    : undefined;
}

/** The first character of an encoded column value: a noncharacter, so never a real name's first. */
const ENCODED = "\uffff";

/**
 * A name or key as it is stored in a text column, readable as itself in the
 * common case. A string that is empty, holds a NUL (which PostgreSQL's `text`
 * cannot store), or starts with U+FFFF is stored as U+FFFF followed by its
 * JSON; no other stored value starts with U+FFFF, so the encoding is
 * one-to-one, and an empty column is free to mean "no key".
 *
 * @param text A limit's name or key.
 * @returns The column value.
 * @example
 * columnText("sendMessage"); // "sendMessage"
 * columnText("");            // "\uffff\"\""
 */
export function columnText(text: string): string {
  return text === "" || text.includes("\u0000") || text.startsWith(ENCODED) ? ENCODED + JSON.stringify(text) : text;
}

/**
 * The primary key of a ref's row: `[name, key, shard]`, with `key` the empty
 * string for a limit's shared state (no key) and the key `""` encoded by
 * {@link columnText}, so the two never meet.
 *
 * @param ref A limit's name, key and shard.
 * @returns The values of the `name`, `key` and `shard` columns.
 * @example
 * refColumns({ name: "api", key: "ada", shard: 0 }); // ["api", "ada", 0]
 */
export function refColumns(ref: StateRef): [string, string, number] {
  return [columnText(ref.name), ref.key === undefined ? "" : columnText(ref.key), ref.shard];
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * A table name, checked and double-quoted for SQL: `name` or `schema.name`, each part a plain
 * identifier (letters, digits, `_`), so that no option can inject SQL.
 *
 * @param host `"postgres"` or `"sqlite"`, for the message.
 * @param table The name as given.
 * @returns The quoted name, for example `"public"."ratebound"`.
 */
export function quotedTable(host: string, table: unknown): string {
  return tableParts(host, table)
    .map((part) => `"${part}"`)
    .join(".");
}

/**
 * A table name, checked: `[name]` or `[schema, name]`, each part a plain identifier (letters,
 * digits, `_`), so that no option can inject SQL.
 *
 * @param host `"postgres"` or `"sqlite"`, for the message.
 * @param table The name as given.
 * @returns Its parts, unquoted.
 * @throws RateboundTypeError (`code: "INVALID_ARGUMENT"`) for anything else.
 */
export function tableParts(host: string, table: unknown): string[] {
  const parts = typeof table === "string" ? table.split(".") : [];
  if (parts.length < 1 || parts.length > 2 || !parts.every((part) => IDENTIFIER.test(part))) {
    throw invalidOption(
      `ratebound/${host}: table must be a name like "ratebound" or "schema.ratebound" (letters, digits and _; got ${describe(table)})`,
      "table",
    );
  }
  return parts;
}

/**
 * A bad adapter option or argument: the core's `RateboundTypeError` (a `TypeError` with
 * `code: "INVALID_ARGUMENT"`), thrown when the store is made (never during a call).
 *
 * @param message What is wrong and what to do, for people.
 * @param field The argument or option at fault.
 * @returns The error, to throw.
 */
export function invalidOption(message: string, field?: string): RateboundTypeError {
  return new RateboundTypeError(message, field);
}

/** A value as an option error shows it: JSON for plain data, else its type. */
export function describe(value: unknown): string {
  if (value === null || typeof value === "string" || typeof value === "number" || typeof value === "boolean") return JSON.stringify(value);
  if (value === undefined) return "undefined";
  const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof name === "string" && name !== "Object" ? `a ${name}` : `a ${typeof value}`;
}

/** The call that has a connection now, per connection: the next one waits for it. */
const queues = new WeakMap<object, Promise<void>>();

/**
 * Runs `work` when every earlier call queued on `connection` has finished: a
 * connection runs one transaction at a time, so two calls on it never mix
 * their statements (one `BEGIN` inside another's, a read between another's
 * read and write).
 *
 * @param connection The connection (any object), the queue's key.
 * @param work The call.
 * @returns What `work` returns.
 */
export async function oneAtATime<T>(connection: object, work: () => Promise<T>): Promise<T> {
  const previous = queues.get(connection);
  let done!: () => void;
  const mine = new Promise<void>((resolve) => (done = resolve));
  queues.set(connection, mine);
  if (previous !== undefined) await previous;
  try {
    return await work();
  } finally {
    if (queues.get(connection) === mine) queues.delete(connection);
    done();
  }
}

/**
 * Whether `x` is an object with a method called `name`.
 *
 * @param x Anything.
 * @param name A method's name.
 * @returns `true` when `x[name]` is a function.
 */
export function hasMethod(x: unknown, name: string): boolean {
  return (typeof x === "object" || typeof x === "function") && x !== null && typeof (x as Record<string, unknown>)[name] === "function";
}

/** The SQLite statements (better-sqlite3 and D1) of one table, with `?` parameters in order. */
export function sqliteStatements(table: string) {
  const where = "WHERE name = ? AND key = ? AND shard = ?";
  return {
    read: `SELECT value, ts FROM ${table} ${where}`,
    delete: `DELETE FROM ${table} ${where}`,
    upsert: `INSERT INTO ${table} (name, key, shard, value, ts, full_at) VALUES (?, ?, ?, ?, ?, coalesce(?, 9e999))
      ON CONFLICT (name, key, shard) DO UPDATE SET value = excluded.value, ts = excluded.ts, full_at = excluded.full_at`,
  };
}

/** A row as the core gets it: whatever the columns hold, for the core to judge (and name the ref when not two finite numbers). */
export function stateOf(row: unknown): RateLimitState | null {
  if (row === undefined || row === null) return null;
  const { value, ts } = row as { value?: unknown; ts?: unknown };
  return { value, ts } as RateLimitState;
}

/**
 * The parameters of an upsert: the ref's columns, the state, and when it is full again. Without
 * the hint, or when it is `Infinity`, `null` is bound and the SQL stores 9e999 (infinity), so
 * no driver is asked to bind a non-finite number.
 */
export function upsertParams(ref: StateRef, state: RateLimitState, info?: WriteInfo): unknown[] {
  const fullAt = info?.fullAt;
  return [...refColumns(ref), state.value, state.ts, typeof fullAt === "number" && Number.isFinite(fullAt) ? fullAt : null];
}

