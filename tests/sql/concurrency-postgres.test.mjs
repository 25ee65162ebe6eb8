// Concurrency limits with leases on PostgreSQL (tests/concurrency/scenarios.mjs): PGlite
// in-process, and a real server (started here on a loopback port, stopped after) through a pg
// Pool. Each take, release and extend runs on the store's transactional path (the one grants take:
// one transaction that locks what it reads), not yet through a decision function in one statement.
// Concurrent takes on separate pool connections grant exactly max; the same takes through the
// store's bare read and write (each a transaction of its own) grant more.
import { after, before, describe, test } from "node:test";
import { PGlite } from "@electric-sql/pglite";
import pg from "pg";
import { startPostgres, failOnDeprecationWarnings } from "./postgres-server.mjs";
import { SCENARIOS, checkAndReset, overAdmitsWithoutTransaction } from "../concurrency/scenarios.mjs";
import { bareStore } from "../settle/scenarios.mjs";

const { RateLimiter } = await import("../../pkg/dist/node.js");
const { postgresStore, createTable } = await import("../../pkg/dist/postgres.js");

failOnDeprecationWarnings();

/** Registers the scenarios on `db()` (what postgresStore is handed). */
function suite(db) {
  const clock = { now: 1_700_000_000_000, read: () => clock.now };
  const options = { now: clock.read };
  const harness = {
    clock,
    connect: (limits) => new RateLimiter(postgresStore(db()), limits, options),
    bare: (limits) => new RateLimiter(bareStore(postgresStore(db())), limits, options),
  };
  for (const [name, scenario] of Object.entries({ ...SCENARIOS, checkAndReset })) test(name, () => scenario(harness));
  test("the same concurrent calls through the store's bare read and write, without its transaction, over-admit", () => overAdmitsWithoutTransaction(harness));
}

describe("concurrency limits on PGlite", () => {
  let db;
  before(async () => {
    db = new PGlite();
    await createTable(db);
  });
  after(async () => {
    if (db !== undefined && !db.closed) await db.close();
  });
  suite(() => db);
});

describe("concurrency limits on a real PostgreSQL server, through a pg Pool", () => {
  let server;
  let pool;
  before(async () => {
    server = await startPostgres({ maxConnections: 40 });
    pool = new pg.Pool({ connectionString: server.connectionString, max: 12 });
    await createTable(pool);
  });
  after(async () => {
    await pool?.end();
    server?.stop();
  });
  suite(() => pool);
});
