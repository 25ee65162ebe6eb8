/**
 * The ORMs ratebound/postgres takes as they are — Drizzle (node-postgres and postgres.js
 * drivers), Kysely and Prisma, each a database or a transaction — turned into the connection
 * shapes `postgresStore` and `createTable` already run on:
 *
 * - a **transaction** (Drizzle's and Prisma's `tx`, Kysely's `trx`) becomes a connection inside
 *   the caller's transaction (`query(text, params) → { rows }`): every call runs in it, in a
 *   savepoint, and commits or rolls back with the app's own writes;
 * - a **Kysely or Prisma database** becomes a pool-like `{ query, transaction }` (the shape
 *   PGlite has): a decision is one statement on whichever connection the ORM picks, a transaction
 *   runs in the ORM's own `db.transaction()` / `prisma.$transaction()`;
 * - a **Drizzle database** is its documented `db.$client` (the `pg` Pool or Client, or the
 *   postgres.js `sql` it was made with), which the store already takes.
 *
 * Each ORM is told by what it is: Drizzle by its `drizzle:entityKind` class tags (`PgDatabase`),
 * Kysely by `isTransaction` and `executeQuery`, Prisma by `$queryRawUnsafe`. Parameters are always
 * bound (`$1`, `$2`, … with an array of values), never written into the text.
 * @module
 */
import type { PostgresJsLike, PostgresQueryable } from "./postgres-table.js";
import { describe, hasMethod, invalidOption } from "./shared/sql.js";

/**
 * A Drizzle PostgreSQL database or transaction (`drizzle(pool)`, `db.transaction(async (tx) => …)`),
 * on the node-postgres or the postgres.js driver. ratebound runs its statements through the
 * session's `prepareQuery({ sql, params })`, the way Drizzle's own `execute` does, with the
 * parameters bound.
 */
export interface DrizzlePostgresLike {
  /** Drizzle's public handle on the session that runs the database's (or transaction's) queries. */
  readonly _: {
    readonly session: {
      prepareQuery(query: { sql: string; params: unknown[] }, fields: undefined, name: undefined, isResponseInArrayMode: boolean): { execute(): Promise<unknown> };
    };
  };
}

/** The query Kysely's `executeQuery` runs: the shape of its `CompiledQuery.raw(sql, parameters)`. */
export interface KyselyRawQuery {
  readonly sql: string;
  readonly parameters: readonly unknown[];
  readonly query: { readonly kind: "RawNode"; readonly sqlFragments: readonly string[]; readonly parameters: readonly never[] };
  readonly queryId: { readonly queryId: string };
}

/** A Kysely database or transaction (`new Kysely({ dialect: new PostgresDialect({ pool }) })`, `db.transaction().execute(async (trx) => …)`). */
export interface KyselyLike {
  /** `true` for a transaction's `trx`. */
  readonly isTransaction: boolean;
  /** Runs a compiled query. */
  executeQuery(query: KyselyRawQuery): Promise<{ rows: unknown[] }>;
}

/** A Prisma client or the `tx` of its interactive transaction (`prisma.$transaction(async (tx) => …)`), e.g. over `@prisma/adapter-pg`. */
export interface PrismaLike {
  /** Runs a statement with `$1`-style parameters; resolves to its rows. */
  $queryRawUnsafe(query: string, ...values: any[]): PromiseLike<unknown>;
  /** Runs a statement with `$1`-style parameters; resolves to how many rows it changed. */
  $executeRawUnsafe(query: string, ...values: any[]): PromiseLike<number>;
}

/** An ORM's database or transaction that ratebound/postgres takes as it is. */
export type PostgresOrmClient = DrizzlePostgresLike | KyselyLike | PrismaLike;

/** A database that runs a transaction in a callback (PGlite has this shape): what a Kysely or Prisma database becomes. */
type Transactional = PostgresQueryable & { transaction<R>(run: (tx: PostgresQueryable) => Promise<R>): Promise<R> };

/** One adapter per ORM object, so that two stores on one transaction share its one-call-at-a-time queue. */
const adapters = new WeakMap<object, PostgresQueryable | Transactional>();

/**
 * `db` as a connection shape the store runs on when it is an ORM's database or transaction (see
 * the module's comment), else `db` itself.
 */
export function fromOrm<T>(db: T | PostgresOrmClient): T | PostgresQueryable | PostgresJsLike {
  if (typeof db === "function" && ["query", "unsafe", "transaction"].every((method) => hasMethod(db, method)) && !hasMethod(db, "begin")) {
    // @neondatabase/serverless's neon(): each query is an HTTP request of its own, and its
    // transaction() takes a list of queries fixed in advance, so a grant or a reset (read, decide,
    // write in one transaction) cannot run on it.
    throw invalidOption(
      "ratebound/postgres: db looks like @neondatabase/serverless's neon() (queries over HTTP, no interactive transactions): " +
        "pass its Pool or Client (WebSockets), e.g. postgresStore(new Pool({ connectionString })), which run transactions",
      "db",
    );
  }
  if (typeof db !== "object" || db === null) return db as T;
  const known = adapters.get(db);
  if (known !== undefined) return known;
  let adapted: PostgresQueryable | Transactional;
  const drizzle = drizzleKind(db);
  if (drizzle === "PgDatabase") {
    // The documented driver client a Drizzle database was made with: a pool, a client or a postgres.js sql.
    const client = (db as { $client?: unknown }).$client;
    // (Through fromOrm again: neon-http's client is Neon's HTTP neon(), which is refused.)
    if (typeof client === "object" || typeof client === "function") return fromOrm(client as PostgresQueryable);
    adapted = drizzleConnection(db as DrizzlePostgresLike);
  } else if (drizzle === "PgTransaction") {
    adapted = drizzleConnection(db as DrizzlePostgresLike);
  } else if (hasMethod(db, "executeQuery") && typeof (db as { isTransaction?: unknown }).isTransaction === "boolean") {
    const kysely = db as KyselyLike & { transaction(): { execute<R>(run: (trx: KyselyLike) => Promise<R>): Promise<R> } };
    const connection = kyselyConnection(kysely);
    adapted = kysely.isTransaction ? connection : { query: connection.query, transaction: (run) => kysely.transaction().execute((trx) => run(kyselyConnection(trx))) };
  } else if (hasMethod(db, "$queryRawUnsafe") && hasMethod(db, "$executeRawUnsafe")) {
    const prisma = db as PrismaLike & { $transaction?<R>(run: (tx: PrismaLike) => Promise<R>): Promise<R> };
    const connection = prismaConnection(prisma);
    // A client has $connect; its interactive transaction's tx does not (Prisma denies it there),
    // though Prisma 7's tx has a $transaction of its own (a nested one, and never two at once).
    adapted = !hasMethod(prisma, "$connect") || !hasMethod(prisma, "$transaction") ? connection : { query: connection.query, transaction: (run) => prisma.$transaction!((tx) => run(prismaConnection(tx))) };
  } else {
    return db as T;
  }
  adapters.set(db, adapted);
  return adapted;
}

/** The Drizzle class `db` is made from (`PgDatabase` or `PgTransaction`), from the tags Drizzle's own `is()` reads; else `undefined`. */
function drizzleKind(db: object): "PgDatabase" | "PgTransaction" | undefined {
  const tag = Symbol.for("drizzle:entityKind");
  let found: "PgDatabase" | undefined;
  for (let prototype = Object.getPrototypeOf(db); prototype !== null; prototype = Object.getPrototypeOf(prototype)) {
    const kind = (prototype.constructor as Record<symbol, unknown> | undefined)?.[tag];
    if (kind === "PgTransaction") return kind;
    if (kind === "PgDatabase") found = kind;
  }
  return found;
}

/** A Drizzle database's or transaction's session as a connection; Drizzle's wrapper of a driver error gives way to the driver's (its SQLSTATE). */
function drizzleConnection(db: DrizzlePostgresLike): PostgresQueryable {
  return {
    query: async (text, params = []) => {
      let result: unknown;
      try {
        result = await db._.session.prepareQuery({ sql: text, params }, undefined, undefined, false).execute();
      } catch (error) {
        const cause = (error as { cause?: unknown }).cause;
        if ((error as { code?: unknown }).code === undefined && cause instanceof Error) throw cause;
        throw error;
      }
      // node-postgres answers with its result ({ rows }), postgres.js with the rows themselves.
      return { rows: Array.isArray(result) ? [...result] : (result as { rows: unknown[] }).rows };
    },
  };
}

/** A Kysely database or transaction as a connection: each statement as Kysely's `CompiledQuery.raw(text, params)`. */
function kyselyConnection(db: KyselyLike): PostgresQueryable {
  return {
    query: (text, params = []) =>
      db.executeQuery({
        sql: text,
        parameters: Object.freeze([...params]),
        query: Object.freeze({ kind: "RawNode", sqlFragments: Object.freeze([text]), parameters: Object.freeze([]) }),
        queryId: Object.freeze({ queryId: "ratebound" }),
      }),
  };
}

/**
 * A Prisma client or transaction as a connection. A raw query's error becomes the driver's, with
 * its SQLSTATE as the code (Prisma reports `P2010`, the SQLSTATE in `meta.driverAdapterError`).
 * `pg_advisory_xact_lock` (and its `_shared` form) returns `void`, a column Prisma cannot read: that statement runs as
 * `$executeRawUnsafe` (its answer is not read). A number goes as its exact text (`float8in` reads
 * JavaScript's shortest form back exactly): Prisma would send `Infinity` as `NULL`.
 */
function prismaConnection(db: PrismaLike): PostgresQueryable {
  return {
    query: async (text, given = []) => {
      const params = given.map((param) => (typeof param === "number" ? (Object.is(param, -0) ? "-0" : String(param)) : param));
      try {
        if (/^SELECT (?:pg_catalog\.)?pg_advisory_xact_lock(?:_shared)?\(/.test(text)) {
          await db.$executeRawUnsafe(text, ...params);
          return { rows: [] };
        }
        const rows = await db.$queryRawUnsafe(text, ...params);
        return { rows: Array.isArray(rows) ? rows : [] };
      } catch (error) {
        const cause = (error as { meta?: { driverAdapterError?: { cause?: { code?: unknown; originalCode?: unknown; originalMessage?: unknown; message?: unknown } } } }).meta
          ?.driverAdapterError?.cause;
        const code = cause?.originalCode ?? cause?.code;
        if (typeof code !== "string") throw error;
        const message = cause?.originalMessage ?? cause?.message;
        throw Object.assign(new Error(typeof message === "string" ? message : `SQLSTATE ${code}`, { cause: error }), { name: "PostgresError", code });
      }
    },
  };
}

/** What an option error says of a `db` that has no `query`: what to pass instead. */
export function notAConnection(db: unknown): string {
  const redis = ["evalsha", "sendCommand", "defineCommand", "eval"].some((method) => hasMethod(db, method));
  if (redis) return "ratebound/postgres: db looks like a Redis client: pass it to redisStore(client) from ratebound/redis instead";
  return `ratebound/postgres: db must have a query(text, params) method, like a pg Client, Pool or PGlite, or be a postgres.js sql (got ${describe(db)})`;
}
