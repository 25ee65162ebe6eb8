// Settle on PostgreSQL (tests/settle/scenarios.mjs): PGlite in-process, and a real server (started
// here in a temporary directory on a loopback port, stopped after) through pg and postgres.js.
// Every settle is one transaction that locks what it reads; concurrent settles of one grant on
// separate pool connections refund once, while the same settles through the store's bare read and
// write (each a transaction of its own) refund more than once. A settle inside the app's own
// transaction rolls back with it.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { PGlite } from "@electric-sql/pglite";
import pg from "pg";
import postgres from "postgres";
import { startPostgres } from "./postgres-server.mjs";
import { SCENARIOS, bareStore, concurrentSettlesWithoutTransaction, settleLimits } from "../settle/scenarios.mjs";

const { RateLimiter } = await import("../../pkg/dist/node.js");
const { postgresStore, createTable } = await import("../../pkg/dist/postgres.js");
const KINDS = ["token bucket", "fixed window"];

/** Registers the scenarios on `db()` (what postgresStore is handed for calls of their own), both algorithms. */
function settleSuite(db, { bare = true } = {}) {
  for (const kind of KINDS) {
    describe(kind, () => {
      const clock = { now: 1_700_000_000_000 };
      const options = { now: () => clock.now };
      const harness = {
        kind,
        clock,
        connect: (limits) => new RateLimiter(postgresStore(db()), limits, options),
        bare: (limits) => new RateLimiter(bareStore(postgresStore(db())), limits, options),
      };
      for (const [name, scenario] of Object.entries(SCENARIOS)) test(name, () => scenario(harness));
      if (bare) {
        test("the same concurrent settles through the store's bare read and write, without its transaction, refund more than once", async () => {
          assert.ok((await concurrentSettlesWithoutTransaction(harness)).refunded > 300);
        });
      }
    });
  }
}

describe("settle on PGlite", () => {
  let db;
  before(async () => {
    db = new PGlite();
    await createTable(db);
  });
  after(async () => {
    if (db !== undefined && !db.closed) await db.close();
  });
  settleSuite(() => db);
});

describe("settle on a real PostgreSQL server", () => {
  let server;
  let pool;
  let sql;
  before(async () => {
    server = await startPostgres({ maxConnections: 60 });
    pool = new pg.Pool({ connectionString: server.connectionString, max: 20 });
    sql = postgres(server.connectionString, { max: 20, onnotice: () => {} });
    await createTable(pool);
  });
  after(async () => {
    await pool?.end();
    await sql?.end();
    server?.stop();
  });

  describe("through a pg Pool", () => settleSuite(() => pool));
  describe("through postgres.js", () => settleSuite(() => sql));

  test("a settle inside the app's transaction rolls back with it: the refund is undone and the grant settles again", async () => {
    const limiter = new RateLimiter(postgresStore(pool), settleLimits("token bucket", 86_400_000), { now: () => 1_700_000_000_000 });
    const granted = await limiter.limit("llm", { key: "rollback", count: 300, grant: true });
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      const inside = new RateLimiter(postgresStore(client), settleLimits("token bucket", 86_400_000), { now: () => 1_700_000_000_000 });
      assert.equal((await inside.settle(granted.grant.data, 0)).refunded, 300);
      await client.query("ROLLBACK");
    } finally {
      client.release();
    }
    assert.equal((await limiter.getValue("llm", { key: "rollback" })).value, 700);
    assert.equal((await granted.grant.settle(100)).refunded, 200);
  });
});
