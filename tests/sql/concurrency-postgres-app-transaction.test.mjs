// Concurrency limits with leases taken inside the app's own transaction on a real PostgreSQL server
// (started here on a loopback port, stopped after): a limiter over postgresStore(client), the
// client a checked-out pg PoolClient after the app's BEGIN, takes its lease in a savepoint of the
// app's transaction, and the slot's locks are held until the app's COMMIT or ROLLBACK. Concurrent
// app transactions on one key grant exactly max, each committing the lease with the app's own
// row; the same transactions with the limit outside them (the store's bare read and write on the
// pool, reads that wait) grant more. A rolled-back transaction holds no slot; a committed lease is
// released or extended later through `limiter.lease(data)` on a store of its own (the pool).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import pg from "pg";
import { startPostgres, failOnDeprecationWarnings } from "./postgres-server.mjs";
import { freshKey } from "../concurrency/scenarios.mjs";
import { bareStore } from "../settle/scenarios.mjs";

const { RateLimiter } = await import("../../pkg/dist/node.js");
const { postgresStore, createTable } = await import("../../pkg/dist/postgres.js");

failOnDeprecationWarnings();

const LIMITS = { jobs: { kind: "concurrency", max: 3, lease: 60_000 } };
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

describe("concurrency limits inside the app's transaction on a real PostgreSQL server", () => {
  let server;
  let pool;
  before(async () => {
    server = await startPostgres({ maxConnections: 40 });
    pool = new pg.Pool({ connectionString: server.connectionString, max: 16 });
    await createTable(pool);
    await pool.query("CREATE TABLE jobs (id serial PRIMARY KEY, key text NOT NULL, lease jsonb NOT NULL)");
  });
  after(async () => {
    await pool?.end();
    server?.stop();
  });

  /**
   * One app transaction: BEGIN, a lease on `key` through `storeOf(client)`, the app's row holding
   * the lease's data, a pause (the app's work), then COMMIT when granted (or `commit: false`),
   * else ROLLBACK. Answers the lease's data, or null when refused.
   */
  async function appTransaction(key, { storeOf = postgresStore, commit = true, holdMs = 30 } = {}) {
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      const answer = await new RateLimiter(storeOf(client), LIMITS).limit("jobs", { key });
      const data = answer.ok ? answer.lease.toJSON() : null;
      // A refused take left the transaction usable: the app can still write (and roll back).
      await client.query("INSERT INTO jobs (key, lease) VALUES ($1, $2)", [key, JSON.stringify(data)]);
      await sleep(holdMs);
      await client.query(answer.ok && commit ? "COMMIT" : "ROLLBACK");
      return data;
    } catch (error) {
      await client.query("ROLLBACK").catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }

  const rowsOf = async (key) => (await pool.query("SELECT lease FROM jobs WHERE key = $1", [key])).rows.map((row) => row.lease);
  const onPool = () => new RateLimiter(postgresStore(pool), LIMITS);

  test("12 app transactions at once on one key, a connection each, grant exactly max, each lease committed with the app's row", async () => {
    const key = freshKey("app-race");
    const leases = await Promise.all(Array.from({ length: 12 }, () => appTransaction(key)));
    const granted = leases.filter((data) => data !== null);
    assert.equal(granted.length, 3);
    assert.deepEqual(granted.map((data) => data.slots[0]).sort(), [0, 1, 2], "one slot each");
    assert.deepEqual((await rowsOf(key)).map((data) => data.id).sort(), granted.map((data) => data.id).sort(), "the refused transactions rolled their rows back");
    assert.equal((await onPool().limit("jobs", { key })).ok, false, "the committed leases hold every slot");
  });

  test("the same app transactions with the limit outside them (the store's bare read and write on the pool) over-admit (the control)", async () => {
    const key = freshKey("app-bare");
    const leases = await Promise.all(Array.from({ length: 12 }, () => appTransaction(key, { storeOf: () => bareStore(postgresStore(pool)) })));
    const granted = leases.filter((data) => data !== null).length;
    assert.ok(granted > 3, `${granted} of 12 granted on 3 slots (expected more than 3)`);
  });

  test("a rolled-back app transaction holds no slot, and its lease's data releases nothing", async () => {
    const key = freshKey("app-rollback");
    const rolledBack = await appTransaction(key, { commit: false });
    assert.ok(rolledBack !== null, "granted inside the transaction");
    assert.deepEqual(await rowsOf(key), [], "the app's row rolled back with it");
    const limiter = onPool();
    const taken = await limiter.limit("jobs", { key, count: 3 });
    assert.equal(taken.ok, true, "every slot is free after the rollback");
    assert.deepEqual(await limiter.lease(rolledBack).release(), { released: 0 }, "a rolled-back lease gives back nothing");
    assert.deepEqual(await taken.lease.release(), { released: 3 });
  });

  test("a committed lease is extended and released later through limiter.lease(data) on a store of its own", async () => {
    const key = freshKey("app-later");
    const committed = await Promise.all([appTransaction(key), appTransaction(key), appTransaction(key)]);
    assert.ok(committed.every((data) => data !== null));
    const [data] = await rowsOf(key);
    const limiter = onPool();
    assert.equal((await limiter.limit("jobs", { key })).ok, false, "three committed leases hold the three slots");
    const handle = limiter.lease(data);
    const { expiresAt } = await handle.extend(120_000);
    assert.ok(expiresAt >= Date.now() + 119_000, `extended to ${expiresAt}`);
    assert.deepEqual(await handle.release(), { released: 1 });
    assert.deepEqual(await limiter.lease(data).release(), { released: 0 }, "released once");
    const next = await limiter.limit("jobs", { key });
    assert.deepEqual(next.ok && next.lease.slots, data.slots, "the released slot is the one free");
  });

  test("while an app transaction holds an uncommitted take, another take on the key waits for its end and sees the outcome", async () => {
    const key = freshKey("app-wait");
    const limits = { jobs: { kind: "concurrency", max: 1, lease: 60_000 } };
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      const inside = await new RateLimiter(postgresStore(client), limits).limit("jobs", { key });
      assert.equal(inside.ok, true);
      let outside;
      const waiting = new RateLimiter(postgresStore(pool), limits).limit("jobs", { key }).then((answer) => (outside = answer));
      await sleep(200);
      assert.equal(outside, undefined, "the other take waits on the slot's lock");
      await client.query("ROLLBACK");
      await waiting;
      assert.equal(outside.ok, true, "after the rollback the slot was free");
      assert.deepEqual(await outside.lease.release(), { released: 1 });
    } finally {
      await client.query("ROLLBACK").catch(() => {});
      client.release();
    }
  });
});
