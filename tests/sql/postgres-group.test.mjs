// ratebound/postgres's group commit on a pool, on a real PostgreSQL server: the calls made while
// the pool's statements are in flight go together in ONE statement (counted at the client), a
// call on an idle pool is not delayed, no more statements are in flight than the pool has
// connections, a call in the app's transaction still decides alone, and a batch's failure fails
// only what it must (a corrupt row its call; a lost connection its statement's calls). That the
// calls of one statement are decided exactly as one by one is the differential's
// (postgres-differential.test.mjs, its grouped traffic).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import pg from "pg";
import { startPostgres, failOnDeprecationWarnings } from "./postgres-server.mjs";
import { limiterOn, pgHost } from "./postgres-scenarios.mjs";

failOnDeprecationWarnings();

const CAPACITY = 1000;
const LIMITS = { big: { kind: "token bucket", rate: CAPACITY, period: 86_400_000 }, two: { kind: "token bucket", rate: 2, period: 86_400_000 } };
const MANY = /^SELECT "public"\."ratebound_decide_many_v3"\(\$1::pg_catalog\.text::pg_catalog\.text\[\]/;
const ALONE = /^SELECT "public"\."ratebound_decide(_one)?_v3"\(/;

/** A pool whose decision statements are counted, and how many were in flight at most. */
function counting(pool) {
  const counted = Object.create(pool);
  counted.statements = [];
  counted.inFlight = 0;
  counted.mostInFlight = 0;
  counted.query = async (text, params) => {
    const decision = MANY.test(text) || ALONE.test(text);
    if (decision) {
      counted.statements.push(text);
      counted.mostInFlight = Math.max(counted.mostInFlight, ++counted.inFlight);
    }
    try {
      return await pool.query(text, params);
    } finally {
      if (decision) counted.inFlight--;
    }
  };
  return counted;
}

describe("group commit on a pool (a real PostgreSQL server)", () => {
  let server;
  let pool;
  const value = async (name, key) => (await pool.query("SELECT value FROM ratebound WHERE name = $1 AND key = $2", [name, key])).rows[0]?.value;

  before(async () => {
    server = await startPostgres({ maxConnections: 30 });
    pool = new pg.Pool({ connectionString: server.connectionString, max: 3 });
    pool.on("error", () => {});
    await pgHost.createTable(pool);
  });
  after(async () => {
    await pool?.end();
    server?.stop();
  });

  test("100 calls made at once on 100 keys are ONE statement, each decided as alone", async () => {
    const counted = counting(pool);
    const limiter = limiterOn(pgHost.postgresStore(counted), LIMITS);
    await limiter.limit("big", { key: "warm-up" }); // the bare table name's schema, looked up once
    counted.statements.length = 0;
    const outcomes = await Promise.all(Array.from({ length: 100 }, (_, index) => limiter.limit("two", { key: `k${index}`, count: index % 3 })));
    assert.deepEqual(outcomes.map((outcome) => outcome.ok), Array.from({ length: 100 }, (_, index) => index % 3 < 3));
    assert.equal(counted.statements.length, 1, counted.statements.join("\n"));
    assert.match(counted.statements[0], MANY);
    for (const index of [0, 1, 2, 50, 99]) assert.equal(await value("two", `k${index}`), 2 - (index % 3));
  });

  test("calls on one key in one statement are decided in arrival order: 3 calls on a limit of 2 admit the first two", async () => {
    const counted = counting(pool);
    const limiter = limiterOn(pgHost.postgresStore(counted), LIMITS);
    await limiter.check("two", { key: "order-warm-up" });
    counted.statements.length = 0;
    const outcomes = await Promise.all([1, 1, 1].map((count) => limiter.limit("two", { key: "order", count })));
    assert.deepEqual(outcomes.map((outcome) => outcome.ok), [true, true, false]);
    assert.equal(counted.statements.length, 1);
    assert.equal(await value("two", "order"), 0);
  });

  test("a call on an idle pool is not delayed: its statement is sent before the next macrotask, alone", async () => {
    const counted = counting(pool);
    const limiter = limiterOn(pgHost.postgresStore(counted), LIMITS);
    await limiter.limit("big", { key: "idle" });
    for (let call = 0; call < 5; call++) {
      counted.statements.length = 0;
      const pending = limiter.limit("big", { key: "idle" });
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(counted.statements.length, 1, "sent at once, with no timer and no wait for company");
      assert.match(counted.statements[0], ALONE);
      assert.equal((await pending).ok, true);
    }
  });

  test("a closed loop of 24 workers on a pool of 3: at most 3 statements in flight, far fewer statements than calls, no update lost", async () => {
    const counted = counting(pool);
    const limiter = limiterOn(pgHost.postgresStore(counted), LIMITS);
    await limiter.limit("big", { key: "loop" });
    counted.statements.length = 0;
    let admitted = 0;
    await Promise.all(
      Array.from({ length: 24 }, async () => {
        for (let call = 0; call < 20; call++) if ((await limiter.limit("big", { key: "loop" })).ok) admitted++;
      }),
    );
    assert.equal(admitted, 480);
    assert.ok(counted.mostInFlight <= 3, `${counted.mostInFlight} statements in flight on a pool of 3`);
    assert.ok(counted.statements.length < 480 / 3, `${counted.statements.length} statements for 480 calls`);
    assert.equal(await value("big", "loop"), CAPACITY - 481);
  });

  test("calls in the app's transaction on a checked-out client decide alone, one statement each", async () => {
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      const counted = counting(client);
      const limiter = limiterOn(pgHost.postgresStore(counted), LIMITS);
      const outcomes = await Promise.all(Array.from({ length: 5 }, () => limiter.limit("big", { key: "in-transaction" })));
      assert.ok(outcomes.every((outcome) => outcome.ok));
      assert.equal(counted.statements.length, 5);
      assert.ok(counted.statements.every((text) => ALONE.test(text)), counted.statements.join("\n"));
      await client.query("ROLLBACK");
    } finally {
      client.release();
    }
    assert.equal(await value("big", "in-transaction"), undefined, "rolled back with the app's transaction");
  });

  test("a corrupt row fails its own call alone: the other calls of its statement are decided and written", async () => {
    const counted = counting(pool);
    const limiter = limiterOn(pgHost.postgresStore(counted), LIMITS);
    await limiter.check("two", { key: "left" });
    await pool.query("INSERT INTO ratebound (name, key, shard, value, ts) VALUES ('two', 'corrupt', 0, 'NaN', 0)");
    counted.statements.length = 0;
    const outcomes = await Promise.all(["left", "corrupt", "right"].map((key) => limiter.limit("two", { key }).catch((error) => error)));
    assert.equal(counted.statements.length, 1, "the three calls went in one statement");
    assert.equal(outcomes[0].ok, true);
    assert.equal(outcomes[1].code, "CORRUPT_STATE", String(outcomes[1]));
    assert.equal(outcomes[2].ok, true);
    assert.deepEqual([await value("two", "left"), await value("two", "corrupt"), await value("two", "right")], [1, Number.NaN, 1]);
  });

  test("a lost connection fails the calls of its statement with a code, writing nothing; the pool decides the next ones", async () => {
    const counted = counting(pool);
    const limiter = limiterOn(pgHost.postgresStore(counted), LIMITS);
    await limiter.limit("big", { key: "lost-warm-up" });
    // The app holds "held" in its transaction: the statement deciding it waits for the lock.
    const holder = await pool.connect();
    await holder.query("BEGIN");
    await limiterOn(pgHost.postgresStore(holder), LIMITS).limit("big", { key: "held" });
    counted.statements.length = 0;
    const calls = ["held", "lost-a", "lost-b"].map((key) => limiter.limit("big", { key }).catch((error) => error));
    const killer = new pg.Client(server.connectionString);
    await killer.connect();
    try {
      for (let tries = 0; ; tries++) {
        const { rows } = await killer.query("SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity WHERE query LIKE '%decide_many_v3%' AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()");
        if (rows.length > 0) break;
        assert.ok(tries < 200, "the statement waits for the held lock");
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    } finally {
      await killer.end();
    }
    const outcomes = await Promise.all(calls);
    assert.equal(counted.statements.length, 1, "the three calls went in one statement");
    for (const outcome of outcomes) {
      assert.ok(outcome instanceof Error, `failed (got ${JSON.stringify(outcome)})`);
      assert.equal(typeof outcome.code, "string", String(outcome));
    }
    await holder.query("COMMIT");
    holder.release();
    assert.equal(await value("big", "lost-a"), undefined, "nothing written");
    assert.equal(await value("big", "held"), CAPACITY - 1, "only the app's own call");
    assert.equal((await limiter.limit("big", { key: "lost-a" })).ok, true);
  });
});
