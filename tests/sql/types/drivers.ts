// The real drivers' types satisfy ratebound's structural ones, checked by tsc against the built
// declarations (pkg/dist): pg's Client, PoolClient and Pool, postgres.js's sql and its transactions,
// PGlite and its transactions, and better-sqlite3's Database. Compiled by tests/sql/types.test.mjs, never run.
import { PGlite, type Transaction } from "@electric-sql/pglite";
import Database from "better-sqlite3";
import pg from "pg";
import postgres from "postgres";
import { MINUTE, RateLimiter, type RemoteAnswer, type RemoteBatch } from "ratebound";
import { createTable, createTableSql, postgresStore, pruneStates, type PostgresPoolLike, type PostgresQueryable, type PostgresStore } from "ratebound/postgres";
import { createTable as createSqliteTable, sqliteStore, type SqliteDatabaseLike } from "ratebound/sqlite";

const LIMITS = { post: { kind: "token bucket", rate: 10, period: MINUTE } } as const;

export async function pgDrivers(pool: pg.Pool, client: pg.Client): Promise<void> {
  const asPool: PostgresPoolLike = pool;
  const asClient: PostgresQueryable = client;
  const poolClient: PostgresQueryable = await pool.connect();
  await createTable(pool);
  await pruneStates(client, { now: Date.now() });
  await new RateLimiter(postgresStore(asPool), LIMITS).limit("post", { key: "ada" });
  await new RateLimiter(postgresStore(asClient), LIMITS).check("post");
  await new RateLimiter(postgresStore(poolClient), LIMITS).getValue("post");
  // The store decides next to its data: one statement per batch.
  const store: PostgresStore = postgresStore(pool, { table: "app.limits", maxAttempts: 5 });
  const batch: RemoteBatch = { refs: [{ name: "post", key: "ada", shard: 0 }], items: [], all: false };
  const answer: RemoteAnswer = await store.decide(batch);
  const migration: string = createTableSql({ table: "app.limits" });
  void [answer, migration];
}

export async function postgresJs(sql: postgres.Sql): Promise<void> {
  await createTable(sql);
  await new RateLimiter(postgresStore(sql), LIMITS).limit("post");
  await sql.begin(async (tx) => {
    await new RateLimiter(postgresStore(tx), LIMITS).limit("post", { key: "ada" });
  });
}

export async function pglite(db: PGlite): Promise<void> {
  await createTable(db);
  await new RateLimiter(postgresStore(db), LIMITS).limit("post");
  await db.transaction(async (tx: Transaction) => {
    await new RateLimiter(postgresStore(tx), LIMITS).limit("post", { key: "ada" });
  });
}

export async function betterSqlite(db: Database.Database): Promise<void> {
  const asDb: SqliteDatabaseLike = db;
  await createSqliteTable(asDb);
  await new RateLimiter(sqliteStore(db), LIMITS).limit("post", { key: "ada" });
}

// libSQL's client and its interactive transaction, as they are.
export async function libsql(client: import("@libsql/client").Client): Promise<boolean> {
  await createSqliteTable(client);
  const tx = await client.transaction("write");
  const { ok } = await new RateLimiter(sqliteStore(tx), LIMITS).limit("post", { key: "ada" });
  await tx.commit();
  return ok && (await new RateLimiter(sqliteStore(client), LIMITS).check("post")).ok;
}
