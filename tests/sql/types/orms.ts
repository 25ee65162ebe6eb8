// The ORMs' own types satisfy ratebound/postgres's, without casts, under strict: Drizzle's
// databases and transactions (node-postgres and postgres.js drivers), Kysely's database and
// transaction, and Prisma 7's client and interactive transaction (the client generated from
// tests/sql/prisma/schema.prisma by tests/sql/prisma-client.mjs, which types.test.mjs runs first).
// Compiled by tests/sql/types.test.mjs, never run.
import { drizzle as drizzleNodePg } from "drizzle-orm/node-postgres";
import { drizzle as drizzlePostgresJs } from "drizzle-orm/postgres-js";
import { Kysely, PostgresDialect } from "kysely";
import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import postgres from "postgres";
import { MINUTE, RateLimiter } from "ratebound";
import { createTable, postgresStore } from "ratebound/postgres";
import { PrismaClient } from "../../artifacts/prisma/generated/client.ts";

const LIMITS = { post: { kind: "token bucket", rate: 10, period: MINUTE } } as const;

interface Database {
  posts: { id: number; author: string; body: string };
}

export async function drizzleNodePostgres(pool: pg.Pool): Promise<boolean> {
  const db = drizzleNodePg(pool);
  await createTable(db);
  await new RateLimiter(postgresStore(db), LIMITS).getValue("post");
  return db.transaction(async (tx) => (await new RateLimiter(postgresStore(tx), LIMITS).limit("post", { key: "ada" })).ok);
}

export async function drizzleOnPostgresJs(url: string): Promise<boolean> {
  const db = drizzlePostgresJs(postgres(url));
  await new RateLimiter(postgresStore(db), LIMITS).reset("post");
  return db.transaction(async (tx) => (await new RateLimiter(postgresStore(tx), LIMITS).limit("post", { key: "ada" })).ok);
}

export async function kysely(pool: pg.Pool): Promise<boolean> {
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  await createTable(db);
  await new RateLimiter(postgresStore(db), LIMITS).check("post");
  return db.transaction().execute(async (trx) => {
    const { ok } = await new RateLimiter(postgresStore(trx), LIMITS).limit("post", { key: "ada" });
    if (ok) await trx.insertInto("posts").values({ id: 1, author: "ada", body: "hi" }).execute();
    return ok;
  });
}

export async function prisma(connectionString: string): Promise<boolean> {
  const client = new PrismaClient({ adapter: new PrismaPg({ connectionString }) });
  await createTable(client);
  await new RateLimiter(postgresStore(client), LIMITS).getValue("post");
  return client.$transaction(async (tx) => {
    const { ok } = await new RateLimiter(postgresStore(tx), LIMITS).limit("post", { key: "ada" });
    if (ok) await tx.post.create({ data: { author: "ada", body: "hi" } });
    return ok;
  });
}
