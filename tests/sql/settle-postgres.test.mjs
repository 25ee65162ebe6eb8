// Settle on PostgreSQL (tests/settle/scenarios.mjs): PGlite in-process, and a real server (started
// here in a temporary directory on a loopback port, stopped after) through pg and postgres.js.
// Every settle is one transaction that locks what it reads; concurrent settles of one grant on
// separate pool connections refund once, while the same settles through the store's bare read and
// write (each a transaction of its own) refund more than once. A settle inside the app's own
// transaction rolls back with it, and a grant whose charge rolled back with the app's transaction
// refunds nothing, on pg, postgres.js and PGlite (issue 24 item 1).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { PGlite } from "@electric-sql/pglite";
import pg from "pg";
import postgres from "postgres";
import { startPostgres, failOnDeprecationWarnings } from "./postgres-server.mjs";
import { SCENARIOS, bareStore, concurrentSettlesWithoutTransaction, grantFiguresAreLimitFigures, settleLimits } from "../settle/scenarios.mjs";

const { RateLimiter } = await import("../../pkg/dist/node.js");
const { postgresStore, createTable } = await import("../../pkg/dist/postgres.js");

failOnDeprecationWarnings();
const KINDS = ["token bucket", "fixed window"];

/**
 * Issue 24 item 1: a grant taken in the app's transaction that then rolls back must refund
 * nothing, by `grant.cancel()` (README's catch-block pattern) or `limiter.settle(data, 0)`, even
 * beside an earlier committed grant on the same key still inside its refund window (which the old
 * refund ledger let it spend). `inRolledBackTransaction(body)` runs `body(tx)` in the app's
 * transaction on `tx` and rolls it back.
 */
async function rolledBackGrantRefundsNothing(db, inRolledBackTransaction, key, { handleOutlivesTransaction = true } = {}) {
  const NOW = 1_700_000_000_000;
  const limits = settleLimits("token bucket", 86_400_000);
  const limiter = new RateLimiter(postgresStore(db), limits, { now: () => NOW });
  const earlier = await limiter.limit("llm", { key, count: 300, grant: true });
  const rolledBack = [];
  await inRolledBackTransaction(async (tx) => {
    const inside = new RateLimiter(postgresStore(tx), limits, { now: () => NOW });
    for (let i = 0; i < 2; i++) rolledBack.push(await inside.limit("llm", { key, count: 200, grant: true }));
    assert.deepEqual(rolledBack.map((granted) => granted.ok), [true, true], "granted inside the transaction");
  });
  assert.equal((await limiter.getValue("llm", { key })).value, 700, "the rolled-back charges consumed nothing");
  // README's catch block cancels through the handle, whose limiter is on the app's connection
  // (a pg client lives on after ROLLBACK; a PGlite or postgres.js transaction does not).
  const [cancelled, settled] = rolledBack;
  const cancel = handleOutlivesTransaction ? cancelled.grant.cancel() : limiter.settle(JSON.parse(JSON.stringify(cancelled.grant.data)), 0);
  assert.equal((await cancel).refunded, 0, "cancel() refunds nothing");
  assert.equal((await limiter.settle(JSON.parse(JSON.stringify(settled.grant.data)), 0)).refunded, 0, "settle(data, 0) refunds nothing");
  assert.equal((await limiter.getValue("llm", { key })).value, 700, "the state gained nothing");
  assert.equal((await earlier.grant.cancel()).refunded, 300, "the committed grant still refunds its own charge");
  assert.equal((await limiter.getValue("llm", { key })).value, 1000);
}

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
      test("a grant answers the figures limit answers (issue 28 item 7)", () => grantFiguresAreLimitFigures(harness));
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

  test("a grant whose charge rolled back with the app's transaction refunds nothing, by cancel() or settle(data, 0) (issue 24 item 1)", () =>
    rolledBackGrantRefundsNothing(
      db,
      (body) =>
        db.transaction(async (tx) => {
          await body(tx);
          await tx.rollback();
        }),
      "pglite-rolled-back",
      { handleOutlivesTransaction: false },
    ));
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

  test("a grant whose charge rolled back with the app's transaction refunds nothing, by cancel() or settle(data, 0) (issue 24 item 1)", () =>
    rolledBackGrantRefundsNothing(
      pool,
      async (body) => {
        const client = await pool.connect();
        try {
          await client.query("BEGIN");
          await body(client);
        } finally {
          await client.query("ROLLBACK");
          client.release();
        }
      },
      "pg-rolled-back",
    ));

  test("the same through postgres.js: a charge rolled back with sql.begin refunds nothing (issue 24 item 1)", () =>
    rolledBackGrantRefundsNothing(
      sql,
      (body) =>
        sql
          .begin(async (tx) => {
            await body(tx);
            throw new Error("the app's transaction fails after the grant");
          })
          .catch((error) => assert.equal(error.message, "the app's transaction fails after the grant")),
      "postgres-js-rolled-back",
      { handleOutlivesTransaction: false },
    ));

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
