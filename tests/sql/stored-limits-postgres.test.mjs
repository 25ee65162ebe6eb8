// Limits stored in the host on PostgreSQL (tests/hosts/stored-limits-scenarios.mjs): on PGlite,
// and on a real server (Debian's, started here on a free loopback port) through two pools, one
// limiter each. The records are rows of the table, locked and checked inside the call's one
// statement: the statements are counted on the server.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { PGlite } from "@electric-sql/pglite";
import pg from "pg";
import { startPostgres } from "./postgres-server.mjs";
import { pgHost } from "./postgres-scenarios.mjs";
import { KEY_LIMIT_SHARD, LIMITS, NOW, pair, storedLimitScenarios } from "../hosts/stored-limits-scenarios.mjs";

const { RateLimiter } = await import("../../pkg/dist/node.js");

describe("stored limits on PGlite", () => {
  let table = 0;
  const db = new PGlite();
  after(() => db.close());
  storedLimitScenarios(test, async () => {
    const name = `stored_${table++}`;
    await pgHost.createTable(db, { table: name });
    return { store: pgHost.postgresStore(db, { table: name }) };
  });
});

describe("stored limits on a real PostgreSQL server", () => {
  let server;
  let pools = [];
  let table = 0;
  before(async () => {
    server = await startPostgres();
  });
  after(async () => {
    await Promise.all(pools.map((pool) => pool.end()));
    server?.stop();
  });
  const open = async () => {
    const name = `stored_${table++}`;
    const first = new pg.Pool({ connectionString: server.connectionString, max: 4 });
    const second = new pg.Pool({ connectionString: server.connectionString, max: 4 });
    pools.push(first, second);
    await pgHost.createTable(first, { table: name });
    return { store: pgHost.postgresStore(first, { table: name }), other: pgHost.postgresStore(second, { table: name }), pool: first, name };
  };

  storedLimitScenarios(test, open);

  test("a call is one statement with stored limits as without; after a change, its first call one more", async () => {
    const { store, other, pool, name } = await open();
    const { a, b } = pair(store, other);
    // Every statement the second pool sends, from here on.
    const sent = [];
    const secondPool = pools[pools.length - 1];
    const original = secondPool.query.bind(secondPool);
    secondPool.query = (text, ...rest) => {
      sent.push(typeof text === "string" ? text : text.text);
      return original(text, ...rest);
    };
    await b.limit("api", { key: "acme" });
    sent.length = 0;
    assert.deepEqual([(await b.limit("api", { key: "acme" })).ok, (await b.limit("api", { key: "acme" })).ok], [true, true]);
    assert.equal(sent.length, 2, sent.join("\n"));
    assert.ok(sent.every((text) => text.includes(`"${name}_decide_limits_v3"`)), sent.join("\n"));
    await a.setLimit("api", { kind: "token bucket", rate: 3, period: 60_000 }, { key: "acme" });
    sent.length = 0;
    assert.equal((await b.limit("api", { key: "acme" })).ok, true);
    assert.equal(sent.length, 2, "the first call after a change: one more statement");
    const next = [];
    for (let call = 0; call < 3; call++) next.push((await b.limit("api", { key: "acme" })).ok);
    assert.deepEqual(next, [true, true, false]);
    assert.equal(sent.length, 5);
    const rows = await pool.query(`SELECT shard, value, ts FROM ${name} WHERE shard >= $1 ORDER BY shard`, [KEY_LIMIT_SHARD]);
    assert.deepEqual(rows.rows.map((row) => [row.shard, row.value, row.ts]), [[KEY_LIMIT_SHARD, 3, 60_000], [KEY_LIMIT_SHARD + 1, 3, -1]]);
  });

  test("grants on two keys of a name never wait for each other on the name's stored limit; a setLimit waits for both", async () => {
    const { store, name } = await open();
    const { a } = pair(store);
    await a.setLimit("api", { kind: "token bucket", rate: 30, period: 60_000 });
    // A grant inside an app's transaction that stays open: it holds what it read until COMMIT.
    const client = new pg.Client({ connectionString: server.connectionString });
    await client.connect();
    try {
      await client.query("BEGIN");
      const inside = new RateLimiter(pgHost.postgresStore(client, { table: name }), LIMITS, { now: () => NOW, storedLimits: true });
      assert.equal((await inside.limit("api", { key: "k1", count: 20, grant: true })).ok, true);
      // Another key's grant reads the same name's records meanwhile, at its first try (no retry allowed).
      const pool = new pg.Pool({ connectionString: server.connectionString, max: 2 });
      pools.push(pool);
      const eager = new RateLimiter(pgHost.postgresStore(pool, { table: name, maxAttempts: 1 }), LIMITS, { now: () => NOW, storedLimits: true });
      const granted = await eager.limit("api", { key: "k2", count: 25, grant: true });
      assert.equal(granted.ok, true);
      assert.equal((await granted.grant.settle(5)).refunded, 20);
      // Changing the name's limit waits for the open transaction, which charged on the old one.
      let changed = false;
      const change = a.setLimit("api", { kind: "token bucket", rate: 40, period: 60_000 }).then(() => (changed = true));
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(changed, false, "setLimit waits for the grant that read the records");
      await client.query("COMMIT");
      await change;
      assert.deepEqual((await eager.getLimit("api", { key: "k1" })).config.rate, 40);
    } finally {
      await client.end();
    }
  });
});
