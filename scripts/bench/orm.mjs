// Wall time per sequential limit() through each ORM ratebound/postgres takes, against pg itself,
// on a throwaway PostgreSQL server: calls of their own on the database, and one transaction of the
// ORM's around each call. `node scripts/bench/orm.mjs` (after `node scripts/build.mjs`); docs/postgres.md quotes it.
import pg from "pg";
import { drizzle } from "drizzle-orm/node-postgres";
import { Kysely, PostgresDialect } from "kysely";
import { PrismaPg } from "@prisma/adapter-pg";
import { startPostgres } from "../../tests/sql/postgres-server.mjs";
import { prismaClient } from "../../tests/sql/prisma-client.mjs";

const { RateLimiter } = await import("../../pkg/dist/node.js");
const pgHost = await import("../../pkg/dist/postgres.js");
const CALLS = 1000;
const server = await startPostgres();
try {
  const pool = new pg.Pool({ connectionString: server.connectionString, max: 4 });
  await pgHost.createTable(pool);
  const { PrismaClient } = await prismaClient();
  const prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: server.connectionString, max: 4 }) });
  const kysely = new Kysely({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: server.connectionString, max: 4 }) }) });
  const drizzleDb = drizzle(pool);
  const limits = { api: { kind: "token bucket", rate: 1e9, period: 1000 } };
  const limit = (db, index) => new RateLimiter(pgHost.postgresStore(db), limits).limit("api", { key: `k${index % 50}` });
  const cases = {
    "pg Pool, calls of their own": (index) => limit(pool, index),
    "Kysely database, calls of their own": (index) => limit(kysely, index),
    "Prisma client, calls of their own": (index) => limit(prisma, index),
    "pg PoolClient, BEGIN / call / COMMIT": async (index) => {
      const client = await pool.connect();
      try {
        await client.query("BEGIN");
        await limit(client, index);
        await client.query("COMMIT");
      } finally {
        client.release();
      }
    },
    "Drizzle transaction": (index) => drizzleDb.transaction((tx) => limit(tx, index)),
    "Kysely transaction": (index) => kysely.transaction().execute((trx) => limit(trx, index)),
    "Prisma transaction": (index) => prisma.$transaction((tx) => limit(tx, index)),
  };
  // A warm-up round, then the measured one.
  for (const measured of [false, true]) {
    for (const [name, call] of Object.entries(cases)) {
      const start = performance.now();
      for (let index = 0; index < CALLS; index++) await call(index);
      if (measured) console.log(`${name}: ${Math.round(((performance.now() - start) / CALLS) * 1000)} µs per call`);
    }
  }
  await prisma.$disconnect();
  await kysely.destroy();
  await pool.end();
} finally {
  server.stop();
}
