// ratebound/postgres takes the ORMs' databases and transactions as they are, on a real
// PostgreSQL server: Drizzle (node-postgres and postgres.js drivers), Kysely (PostgresDialect
// over pg) and Prisma 7 (@prisma/adapter-pg); and @neondatabase/serverless's Pool, its
// WebSockets reaching the server through a local proxy as Neon's do (its HTTP neon() is refused,
// naming the Pool). For each, the shared scenarios with the ORM's
// database for calls of their own and its transaction for the app's (a commit keeps the app's
// write and the limit together, a rollback consumes nothing), then 120 concurrent transactions
// and 120 concurrent calls of their own on one key admit exactly the capacity of 50.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import pg from "pg";
import postgres from "postgres";
import { sql as drizzleSql } from "drizzle-orm";
import { drizzle as drizzleNodePg } from "drizzle-orm/node-postgres";
import { drizzle as drizzlePostgresJs } from "drizzle-orm/postgres-js";
import { drizzle as drizzleNeon } from "drizzle-orm/neon-serverless";
import { drizzle as drizzleNeonHttp } from "drizzle-orm/neon-http";
import { CompiledQuery, Kysely, PostgresDialect } from "kysely";
import { PrismaPg } from "@prisma/adapter-pg";
import { neon, neonConfig, Pool as NeonPool } from "@neondatabase/serverless";
import ws from "ws";
import { startPostgres } from "./postgres-server.mjs";
import { limiterOn, pgHost, postgresScenarios } from "./postgres-scenarios.mjs";
import { prismaClient } from "./prisma-client.mjs";
import { startNeonProxy } from "./neon-proxy.mjs";

let server;
const closers = [];
before(async () => {
  server = await startPostgres();
  const proxy = await startNeonProxy(server.port);
  closers.push(() => proxy.stop());
  // Neon's driver, pointed at the local proxy: plain ws:// and no TLS (the server is on loopback).
  Object.assign(neonConfig, { webSocketConstructor: ws, wsProxy: () => `127.0.0.1:${proxy.port}/`, useSecureWebSocket: false, pipelineConnect: false, forceDisablePgSSL: true });
});
after(async () => {
  for (const close of closers.reverse()) await close().catch(() => {});
  server?.stop();
});

/** A fresh database on the server with ratebound's table and the scenarios' posts table; its URL. */
async function freshDatabase(name) {
  const admin = new pg.Client({ connectionString: server.connectionString });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = server.connectionString.replace(/\/postgres$/, `/${name}`);
  const setup = new pg.Client({ connectionString: url });
  await setup.connect();
  await pgHost.createTable(setup);
  await setup.query("CREATE TABLE posts (id serial PRIMARY KEY, author text NOT NULL, body text NOT NULL)");
  await setup.end();
  return url;
}

/** Drizzle's `sql` for a `$1`-style statement: the text between placeholders raw, each value a bound parameter. */
const drizzleStatement = (text, params) =>
  drizzleSql.join(text.split(/\$(\d+)/).map((piece, index) => (index % 2 === 1 ? drizzleSql`${params[Number(piece) - 1]}` : drizzleSql.raw(piece))));
const drizzleRows = (result) => (Array.isArray(result) ? [...result] : result.rows);

/**
 * Each ORM: `open(url)` → `{ db, query, transaction, txQuery, close }`, where `transaction(fn)`
 * runs `fn` in the ORM's own transaction (rolled back when `fn` throws) and `txQuery(tx, text,
 * params)` runs a statement in it through the ORM's own API.
 */
const orms = {
  "Drizzle (node-postgres)": async (url) => {
    const pool = new pg.Pool({ connectionString: url, max: 20 });
    const db = drizzleNodePg(pool);
    return {
      db,
      query: async (text, params = []) => (await pool.query(text, params)).rows,
      transaction: (fn) => db.transaction(fn),
      txQuery: async (tx, text, params) => drizzleRows(await tx.execute(drizzleStatement(text, params))),
      close: () => pool.end(),
    };
  },
  "Drizzle (postgres.js)": async (url) => {
    const client = postgres(url, { max: 20, onnotice: () => {} });
    const db = drizzlePostgresJs(client);
    return {
      db,
      query: async (text, params = []) => [...(await client.unsafe(text, params))],
      transaction: (fn) => db.transaction(fn),
      txQuery: async (tx, text, params) => drizzleRows(await tx.execute(drizzleStatement(text, params))),
      close: () => client.end(),
    };
  },
  "Drizzle (neon-serverless, Neon's Pool)": async (url) => {
    const pool = new NeonPool({ connectionString: url, max: 20 });
    const db = drizzleNeon({ client: pool });
    return {
      db,
      query: async (text, params = []) => (await pool.query(text, params)).rows,
      transaction: (fn) => db.transaction(fn),
      txQuery: async (tx, text, params) => drizzleRows(await tx.execute(drizzleStatement(text, params))),
      close: () => pool.end(),
    };
  },
  Kysely: async (url) => {
    const db = new Kysely({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 20 }) }) });
    return {
      db,
      query: async (text, params = []) => (await db.executeQuery(CompiledQuery.raw(text, params))).rows,
      transaction: (fn) => db.transaction().execute(fn),
      txQuery: async (trx, text, params) => (await trx.executeQuery(CompiledQuery.raw(text, params))).rows,
      close: () => db.destroy(),
    };
  },
  "Prisma 7 (@prisma/adapter-pg)": async (url) => {
    const { PrismaClient } = await prismaClient();
    // Interactive transactions wait up to 20 s for a connection and run up to 20 s (defaults 2 s and
    // 5 s), for 120 transactions at once on a pool of 20.
    const prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: url, max: 20 }), transactionOptions: { maxWait: 20_000, timeout: 20_000 } });
    return {
      db: prisma,
      query: (text, params = []) => prisma.$queryRawUnsafe(text, ...params),
      transaction: (fn) => prisma.$transaction(fn),
      txQuery: (tx, text, params) => tx.$queryRawUnsafe(text, ...params),
      close: () => prisma.$disconnect(),
    };
  },
  "@neondatabase/serverless Pool (WebSockets)": async (url) => {
    const pool = new NeonPool({ connectionString: url, max: 20 });
    return {
      db: pool,
      query: async (text, params = []) => (await pool.query(text, params)).rows,
      // The app's transaction as on pg: a connection of the pool, BEGIN … COMMIT on it.
      transaction: async (fn) => {
        const client = await pool.connect();
        try {
          await client.query("BEGIN");
          const result = await fn(client);
          await client.query("COMMIT");
          return result;
        } catch (error) {
          await client.query("ROLLBACK");
          throw error;
        } finally {
          client.release();
        }
      },
      txQuery: async (client, text, params) => (await client.query(text, params)).rows,
      ownQuery: true, // the scenarios' tx.query is the client's own
      close: () => pool.end(),
    };
  },
};

for (const [name, open] of Object.entries(orms)) {
  describe(`${name} on a real PostgreSQL server`, () => {
    let orm;
    before(async () => {
      orm = await open(await freshDatabase(name.toLowerCase().replace(/[^a-z0-9]+/g, "_").replace(/_$/, "")));
      closers.push(orm.close);
    });

    postgresScenarios({
      db: () => orm.db,
      query: (text, params) => orm.query(text, params),
      // The scenarios run their own statements as tx.query(text, params): here through the ORM's own API.
      inTransaction: (fn) =>
        orm.transaction((tx) => {
          if (!orm.ownQuery) tx.query = (text, params = []) => orm.txQuery(tx, text, params);
          return fn(tx);
        }),
    });

    test("120 concurrent ORM transactions on one key admit exactly the capacity of 50, each with its insert", async () => {
      const limits = { burst: { kind: "token bucket", rate: 50, period: 86_400_000 } };
      const outcomes = await Promise.all(
        Array.from({ length: 120 }, (_, index) =>
          orm.transaction(async (tx) => {
            const { ok } = await limiterOn(pgHost.postgresStore(tx), limits).limit("burst", { key: "tx" });
            if (ok) await orm.txQuery(tx, "INSERT INTO posts (author, body) VALUES ($1, $2)", ["burst", `post ${index}`]);
            return ok;
          }),
        ),
      );
      assert.equal(outcomes.filter(Boolean).length, 50);
      assert.deepEqual(await orm.query("SELECT value FROM ratebound WHERE name = 'burst' AND key = 'tx'"), [{ value: 0 }]);
      assert.deepEqual(await orm.query("SELECT count(*)::int AS n FROM posts WHERE author = 'burst'"), [{ n: 50 }]);
    });

    test("two stores on one ORM transaction take turns: their calls at once (each getValue and reset a savepoint) all succeed", async () => {
      const limits = { daily: { kind: "token bucket", rate: 10, period: 86_400_000 } };
      const values = await orm.transaction(async (tx) => {
        const [first, second] = [limiterOn(pgHost.postgresStore(tx), limits), limiterOn(pgHost.postgresStore(tx), limits)];
        const calls = [];
        for (let index = 0; index < 6; index++) {
          const limiter = index % 2 === 0 ? first : second;
          calls.push(limiter.getValue("daily", { key: `turns-${index}` }), limiter.reset("daily", { key: `turns-${index}` }));
        }
        return (await Promise.all(calls)).filter((answer) => answer !== undefined).map((answer) => answer.value);
      });
      assert.deepEqual(values, [10, 10, 10, 10, 10, 10]);
    });

    test("in a transaction, a driver's error reaches the app with its SQLSTATE: a table never created is 42P01, naming createTable", async () => {
      let failed;
      await orm
        .transaction(async (tx) => {
          failed = await limiterOn(pgHost.postgresStore(tx, { table: "never_created" })).limit("daily", { key: "k" }).catch((error) => error);
          throw new Error("roll back");
        })
        .catch(() => {});
      assert.ok(failed instanceof Error);
      // The bare table name is looked up on the search path first: no schema holds it (42P01).
      assert.equal(failed.code, "42P01");
      assert.match(failed.message, /run createTable\(db\)/);
    });

    test("120 concurrent calls of their own on the ORM's database admit exactly 50, and getValue and reset run in its transactions", async () => {
      const limits = { burst: { kind: "token bucket", rate: 50, period: 86_400_000 } };
      const limiter = limiterOn(pgHost.postgresStore(orm.db), limits);
      const outcomes = await Promise.all(Array.from({ length: 120 }, () => limiter.limit("burst", { key: "own" })));
      assert.equal(outcomes.filter((outcome) => outcome.ok).length, 50);
      assert.equal((await limiter.getValue("burst", { key: "own" })).value, 0);
      await limiter.reset("burst", { key: "own" });
      assert.deepEqual(await orm.query("SELECT value FROM ratebound WHERE name = 'burst' AND key = 'own'"), []);
      assert.equal((await limiter.getValue("burst", { key: "own" })).value, 50);
    });
  });
}

test("@neondatabase/serverless's neon() (HTTP, no interactive transactions) is refused with a coded error naming its Pool", () => {
  const sql = neon("postgresql://user:password@db.example.invalid/app");
  assert.throws(() => pgHost.postgresStore(sql), { code: "INVALID_ARGUMENT", message: /neon\(\).*pass its Pool or Client/ });
  // Drizzle's neon-http database is that neon() underneath.
  assert.throws(() => pgHost.postgresStore(drizzleNeonHttp({ client: sql })), { code: "INVALID_ARGUMENT", message: /neon\(\)/ });
});
