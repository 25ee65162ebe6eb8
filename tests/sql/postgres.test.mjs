// ratebound/postgres on PGlite (in-process) and on a real PostgreSQL server (Debian's, started in a
// temporary directory on a loopback port for this file, stopped after): the shared scenarios on
// both; on the server, 120 concurrent transactions on one key never over-admit and lose no update,
// while the same traffic through a store without the lock does over-admit; a lost connection and
// a stale REPEATABLE READ snapshot fail closed.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { PGlite } from "@electric-sql/pglite";
import { createHash } from "node:crypto";
import pg from "pg";
import { startPostgres, failOnDeprecationWarnings } from "./postgres-server.mjs";
import { NOW, RateLimiter, limiterOn, pgHost, postgresScenarios } from "./postgres-scenarios.mjs";
import { seeded } from "../js/helpers.mjs";

failOnDeprecationWarnings();

const POSTS = "CREATE TABLE posts (id serial PRIMARY KEY, author text NOT NULL, body text NOT NULL)";

describe("PGlite", () => {
  let db;
  before(async () => {
    db = new PGlite();
    await pgHost.createTable(db);
    await db.query(POSTS);
  });
  after(async () => {
    if (db !== undefined && !db.closed) await db.close();
  });
  postgresScenarios({ db: () => db, inTransaction: (fn) => db.transaction(fn) });

  test("a decision is ONE statement on PGlite and inside its transaction, and -0 and 5e-324 make an exact round trip", async () => {
    const statements = [];
    const counted = (connection) => Object.assign(Object.create(connection), { query: (text, params) => (statements.push(text), connection.query(text, params)) });
    const tiny = { tiny: { kind: "token bucket", rate: 1, period: 1e300, capacity: 5e-324 } };
    const limiter = limiterOn(pgHost.postgresStore(counted(db)), tiny);
    assert.deepEqual(await limiter.limit("tiny", { key: "exact", count: -0 }), { ok: true });
    await db.transaction(async (tx) => {
      // (A table named with its schema needs no lookup of it: see the pool's test for the bare name's.)
      const store = pgHost.postgresStore(counted(tx), { table: "public.ratebound" });
      assert.deepEqual(await limiterOn(store, tiny).limit("tiny", { key: "exact", count: 5e-324 }), { ok: true });
    });
    const lookups = statements.filter((text) => /pg_catalog\.pg_namespace/.test(text));
    assert.equal(lookups.length, 1, "the bare table name's schema is looked up once");
    assert.equal(statements.length, 3, statements.join("\n"));
    const [row] = (await db.query("SELECT value::text AS value, ts::text AS ts FROM ratebound WHERE name = 'tiny' AND key = 'exact'")).rows;
    assert.deepEqual(row, { value: "0", ts: String(NOW) }, "5e-324 - 5e-324");
    // 5e-324 refills in 5e-24 ms, but the clock at NOW cannot tell that from 0: the honest wait is one step of it
    // (2^-12 ms), which the answer gives in whole ms, rounded up (src/result.rs caller_wait): 1.
    assert.deepEqual(await limiter.limit("tiny", { key: "exact", count: 5e-324 }), { ok: false, retryAfter: 1 });
  });

  test("a closed PGlite fails the call with a code (the suite's last test: it closes the database)", async () => {
    await db.close();
    const error = await limiterOn(pgHost.postgresStore(db)).limit("daily").catch((caught) => caught);
    assert.ok(error instanceof Error);
    assert.equal(typeof error.code, "string", `a code (got ${error.code}: ${error.message})`);
  });
});

describe("a real PostgreSQL server", () => {
  let server;
  let pool;
  const query = async (text, params = []) => (await pool.query(text, params)).rows;
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  /** The app's transaction on a connection of its own. */
  async function inTransaction(fn, { client = undefined, isolation = "" } = {}) {
    const connection = client ?? (await pool.connect());
    try {
      await connection.query(`BEGIN ${isolation}`);
      const result = await fn(connection);
      await connection.query("COMMIT");
      return result;
    } catch (error) {
      await connection.query("ROLLBACK").catch(() => {});
      throw error;
    } finally {
      if (client === undefined) connection.release();
    }
  }

  before(async () => {
    server = await startPostgres();
    pool = new pg.Pool({ connectionString: server.connectionString, max: 20 });
    await pgHost.createTable(pool);
    await pool.query(POSTS);
  });
  after(async () => {
    await pool?.end();
    server?.stop();
  });

  postgresScenarios({ db: () => pool, inTransaction: (fn) => inTransaction(fn) });

  /**
   * `requests` transactions open at once, each on its own connection: BEGIN, take one token of
   * `limit` for `key` through `makeStore(client)`, insert a post when admitted, 5 ms of app work,
   * COMMIT. Returns how many were admitted, and the state and posts left.
   */
  async function concurrentTransactions({ requests, limit, key, makeStore, named = limits }) {
    const clients = await Promise.all(
      Array.from({ length: requests }, async () => {
        const client = new pg.Client(server.connectionString);
        await client.connect();
        return client;
      }),
    );
    try {
      const outcomes = await Promise.all(
        clients.map((client) =>
          inTransaction(
            async (tx) => {
              const status = await limiterOn(makeStore(tx), named).limit(limit, { key });
              if (status.ok) await tx.query("INSERT INTO posts (author, body) VALUES ($1, 'burst')", [key]);
              await sleep(5);
              return status.ok;
            },
            { client },
          ).catch((error) => error),
        ),
      );
      const failed = outcomes.filter((outcome) => outcome instanceof Error);
      assert.deepEqual(failed.map(String), [], "no transaction failed");
      const [row] = await query("SELECT value, ts FROM ratebound WHERE name = $1 AND key = $2", [limit, key]);
      const [{ n }] = await query("SELECT count(*)::int AS n FROM posts WHERE author = $1", [key]);
      return { admitted: outcomes.filter((ok) => ok === true).length, value: row?.value, posts: n };
    } finally {
      await Promise.all(clients.map((client) => client.end()));
    }
  }

  /** A store that reads and writes the same rows without locking anything: what the lock prevents. */
  const unlocked = (tx) => ({
    async read(ref) {
      const { rows } = await tx.query("SELECT value, ts FROM ratebound WHERE name = $1 AND key = $2 AND shard = $3", [ref.name, ref.key, ref.shard]);
      return rows[0] ?? null;
    },
    async write(ref, state) {
      await tx.query(
        "INSERT INTO ratebound (name, key, shard, value, ts) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (name, key, shard) DO UPDATE SET value = excluded.value, ts = excluded.ts",
        [ref.name, ref.key, ref.shard, state.value, state.ts],
      );
    },
  });

  const CAPACITY = 50;
  const limits = { burst: { kind: "token bucket", rate: CAPACITY, period: 86_400_000 } };

  test("120 concurrent transactions on one new key admit exactly the capacity of 50 and leave 0", async () => {
    const result = await concurrentTransactions({ requests: 120, limit: "burst", key: "locked", makeStore: (tx) => pgHost.postgresStore(tx) });
    assert.deepEqual(result, { admitted: CAPACITY, value: 0, posts: CAPACITY });
  });

  test("120 concurrent transactions under the bound lose no update: 30 admitted leave 20", async () => {
    await query("INSERT INTO ratebound (name, key, shard, value, ts) VALUES ('burst', 'partial', 0, 50, $1)", [NOW]);
    const first = await concurrentTransactions({ requests: 30, limit: "burst", key: "partial", makeStore: (tx) => pgHost.postgresStore(tx) });
    assert.deepEqual(first, { admitted: 30, value: CAPACITY - 30, posts: 30 });
  });

  test("the same 120 transactions through a store without the lock over-admit (so the test above can fail)", async () => {
    const result = await concurrentTransactions({ requests: 120, limit: "burst", key: "unlocked", makeStore: unlocked });
    assert.ok(result.admitted > CAPACITY, `admitted ${result.admitted} of ${CAPACITY}`);
    assert.notEqual(result.value, CAPACITY - result.admitted, "and the value left does not account for them");
  });

  // A sliding window is decided by the driver inside the store's transaction (the functions decide the other kinds).
  const sliding = { slidingBurst: { kind: "sliding window", rate: CAPACITY, period: 86_400_000 } };

  test("120 concurrent transactions of a sliding window on one new key admit exactly its rate of 50, and its window holds 50", async () => {
    const result = await concurrentTransactions({ requests: 120, limit: "slidingBurst", key: "sliding-locked", makeStore: (tx) => pgHost.postgresStore(tx), named: sliding });
    assert.deepEqual(result, { admitted: CAPACITY, value: CAPACITY, posts: CAPACITY });
  });

  test("the same 120 transactions of a sliding window through a store without the lock over-admit (so the test above can fail)", async () => {
    const result = await concurrentTransactions({ requests: 120, limit: "slidingBurst", key: "sliding-unlocked", makeStore: unlocked, named: sliding });
    assert.ok(result.admitted > CAPACITY, `admitted ${result.admitted} of ${CAPACITY}`);
  });

  test("120 concurrent calls of a sliding window through a pool of 20 connections admit exactly 50", async () => {
    const limiter = limiterOn(pgHost.postgresStore(pool), sliding);
    const outcomes = await Promise.all(Array.from({ length: 120 }, () => limiter.limit("slidingBurst", { key: "pooled" }).catch((error) => error)));
    assert.deepEqual(outcomes.filter((outcome) => outcome instanceof Error).map(String), []);
    assert.equal(outcomes.filter((status) => status.ok).length, CAPACITY);
    assert.equal((await query("SELECT value FROM ratebound WHERE name = 'slidingBurst' AND key = 'pooled'"))[0].value, CAPACITY);
  });

  test("120 concurrent calls through a pool of 20 connections admit exactly 50", async () => {
    const limiter = limiterOn(pgHost.postgresStore(pool), limits);
    const outcomes = await Promise.all(Array.from({ length: 120 }, () => limiter.limit("burst", { key: "pooled" })));
    assert.equal(outcomes.filter((status) => status.ok).length, CAPACITY);
    assert.equal((await query("SELECT value FROM ratebound WHERE name = 'burst' AND key = 'pooled'"))[0].value, 0);
  });

  test("a sharded limit under 120 concurrent pooled calls never exceeds its bound and never deadlocks", async () => {
    const sharded = { shardedBurst: { kind: "token bucket", rate: 60, period: 86_400_000, shards: 10 } };
    const limiter = limiterOn(pgHost.postgresStore(pool), sharded);
    const outcomes = await Promise.all(Array.from({ length: 120 }, () => limiter.limit("shardedBurst", { key: "s" }).catch((error) => error)));
    assert.deepEqual(outcomes.filter((outcome) => outcome instanceof Error).map(String), []);
    const admitted = outcomes.filter((status) => status.ok).length;
    const [{ left }] = await query("SELECT sum(value) AS left FROM ratebound WHERE name = 'shardedBurst' AND key = 's'");
    assert.ok(admitted <= 60 && admitted >= 40, `admitted ${admitted}`);
    assert.ok(Math.abs(60 - admitted - left) < 1e-9, `the shards hold 60 - ${admitted} (got ${left})`);
  });

  /** A connection that counts the statements sent through it (pg's query()). */
  function counting(connection) {
    const counted = Object.create(connection);
    counted.statements = [];
    counted.query = (text, params) => (counted.statements.push(text), connection.query(text, params));
    return counted;
  }

  test("a decision is ONE statement: one query on a pool, one inside the app's transaction (limit, check, limitAll)", async () => {
    const onPool = counting(pool);
    const limiter = limiterOn(pgHost.postgresStore(onPool), limits);
    await limiter.limit("burst", { key: "one-statement" });
    // The bare table name's schema, looked up once per pool (or client) and table, before the first decision.
    assert.match(onPool.statements.shift(), /FROM pg_catalog\.pg_class c JOIN pg_catalog\.pg_namespace n/);
    await limiter.check("burst", { key: "one-statement" });
    await limiter.limitAll([{ name: "burst", key: "one-statement" }, { name: "burst", key: "one-statement-2" }]);
    await limiterOn(pgHost.postgresStore(onPool), limits).check("burst", { key: "one-statement" });
    assert.equal(onPool.statements.length, 4, onPool.statements.join("\n"));
    assert.ok(onPool.statements.every((text) => /^SELECT "public"\."ratebound_decide_(one_)?v3"\(\$1::pg_catalog\.text/.test(text)), onPool.statements.join("\n"));
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      const inside = counting(client);
      await limiterOn(pgHost.postgresStore(inside), limits).limit("burst", { key: "one-statement" });
      const decisions = inside.statements.filter((text) => !/pg_catalog\.pg_namespace/.test(text));
      assert.equal(inside.statements.length - decisions.length, 1, "the client's one lookup of the schema");
      assert.equal(decisions.length, 1, "no SAVEPOINT, no BEGIN: one statement in the app's transaction");
      await client.query("COMMIT");
    } finally {
      client.release();
    }
    assert.equal((await query("SELECT value FROM ratebound WHERE name = 'burst' AND key = 'one-statement'"))[0].value, CAPACITY - 3);
  });

  test("a decision in the app's transaction holds its lock to the end of that transaction: another call waits, then sees the commit", async () => {
    const key = "held-to-commit";
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      assert.deepEqual(await limiterOn(pgHost.postgresStore(client), limits).limit("burst", { key, count: 40 }), { ok: true });
      let settled = false;
      const other = limiterOn(pgHost.postgresStore(pool), limits)
        .limit("burst", { key, count: 20 })
        .finally(() => (settled = true));
      await sleep(300);
      assert.equal(settled, false, "the other call waits for the app's transaction");
      await client.query("COMMIT");
      assert.deepEqual(await other, { ok: false, retryAfter: 17_280_000 }, "and then decides on the 10 the commit left");
    } finally {
      client.release();
    }
  });

  test("a decision that fails inside the app's transaction leaves it usable: the app's own writes still commit", async () => {
    const key = "usable-after-failure";
    await limiterOn(pgHost.postgresStore(pool), limits).limit("burst", { key });
    const holder = await pool.connect();
    const client = await pool.connect();
    try {
      await holder.query("BEGIN");
      await holder.query("SELECT 1 FROM ratebound WHERE name = 'burst' AND key = $1 FOR UPDATE", [key]);
      await client.query("BEGIN");
      await client.query("INSERT INTO posts (author, body) VALUES ($1, 'before')", [key]);
      await client.query("SET LOCAL lock_timeout = '100ms'");
      const error = await limiterOn(pgHost.postgresStore(client), limits).limit("burst", { key }).catch((caught) => caught);
      assert.equal(error.code, "55P03", error.message);
      await client.query("INSERT INTO posts (author, body) VALUES ($1, 'after')", [key]);
      await client.query("COMMIT");
    } finally {
      await holder.query("ROLLBACK");
      holder.release();
      client.release();
    }
    assert.deepEqual((await query("SELECT body FROM posts WHERE author = $1 ORDER BY id", [key])).map((row) => row.body), ["before", "after"]);
    assert.equal((await query("SELECT value FROM ratebound WHERE name = 'burst' AND key = $1", [key]))[0].value, CAPACITY - 1);
  });

  test("a decision waits for a transaction (grants, settle, reset) that holds a new key's lock, and decides on what it committed: the two paths share their locks", async () => {
    const store = pgHost.postgresStore(pool);
    const ref = { name: "burst", key: "shared-locks", shard: 0 };
    let opened;
    const readDone = new Promise((resolve) => (opened = resolve));
    let release;
    const gate = new Promise((resolve) => (release = resolve));
    // The transactional path as a grant runs it: read (no row: it takes the ref's advisory lock), then write.
    const transaction = store.transaction(async (tx) => {
      assert.equal(await tx.read(ref), null);
      opened();
      await gate;
      await tx.write(ref, { value: 10, ts: NOW }, { now: NOW, fullAt: Infinity });
    });
    let decided = false;
    let decision;
    try {
      await readDone;
      decision = limiterOn(store, limits)
        .limit("burst", { key: "shared-locks", count: 4 })
        .finally(() => (decided = true));
      await sleep(300);
      assert.equal(decided, false, "the decision waits for the transaction's lock on the missing row");
    } finally {
      release();
      await transaction;
    }
    assert.deepEqual(await decision, { ok: true });
    assert.deepEqual(await query("SELECT value FROM ratebound WHERE name = 'burst' AND key = 'shared-locks'"), [{ value: 6 }], "10 committed, then 4 taken: no lost update");
  });

  test("concurrent calls on one pg Client outside a transaction queue up and each commits alone", async () => {
    const client = new pg.Client(server.connectionString);
    await client.connect();
    try {
      const limiter = limiterOn(pgHost.postgresStore(client), limits);
      const outcomes = await Promise.all(Array.from({ length: 60 }, () => limiter.limit("burst", { key: "one-client" })));
      assert.equal(outcomes.filter((status) => status.ok).length, CAPACITY);
      assert.equal((await query("SELECT value FROM ratebound WHERE name = 'burst' AND key = 'one-client'"))[0].value, 0);
    } finally {
      await client.end();
    }
  });

  test("a connection lost in the middle of the call fails it with a code, and nothing is written", async () => {
    const victim = await pool.connect();
    victim.on("error", () => {}); // the driver also reports the lost socket as an event
    const [{ pid }] = (await victim.query("SELECT pg_backend_pid() AS pid")).rows;
    let reads = 0;
    const error = await inTransaction(
      async (tx) => {
        const store = pgHost.postgresStore(tx);
        const dying = {
          read: store.read,
          write: store.write,
          transaction: (body) =>
            store.transaction((inner) =>
              body({
                read: async (ref) => {
                  if (reads++ === 1) await pool.query("SELECT pg_terminate_backend($1)", [pid]);
                  return inner.read(ref);
                },
                write: (ref, state, info) => inner.write(ref, state, info),
              }),
            ),
        };
        return limiterOn(dying).limitAll([{ name: "perUser", key: "lost" }, { name: "daily", key: "lost" }]);
      },
      { client: victim },
    ).catch((caught) => caught);
    victim.release(true);
    assert.ok(error instanceof Error, String(error));
    assert.equal(typeof error.code, "string", `a code (got ${error.code}: ${error.message})`);
    assert.deepEqual(await query("SELECT name FROM ratebound WHERE key = 'lost'"), []);
  });

  test("a state locked longer than the app's lock_timeout fails the call with 55P03, and nothing is written", async () => {
    const store = (tx) => pgHost.postgresStore(tx);
    for (const key of ["timeout-existing", "timeout-new"]) {
      if (key === "timeout-existing") await limiterOn(store(pool), limits).limit("burst", { key, count: 5 });
      const holder = await pool.connect();
      try {
        await holder.query("BEGIN");
        await limiterOn(store(holder), limits).limit("burst", { key }); // holds the state's lock until ROLLBACK
        const error = await inTransaction(async (tx) => {
          await tx.query("SET LOCAL lock_timeout = '100ms'");
          return limiterOn(store(tx), limits).limit("burst", { key });
        }).catch((caught) => caught);
        assert.ok(error instanceof Error, `${key}: rejected`);
        assert.equal(error.code, "55P03", `${key}: ${error.message}`);
      } finally {
        await holder.query("ROLLBACK");
        holder.release();
      }
    }
    assert.equal((await query("SELECT value FROM ratebound WHERE name = 'burst' AND key = 'timeout-existing'"))[0].value, 45);
    assert.deepEqual(await query("SELECT value FROM ratebound WHERE name = 'burst' AND key = 'timeout-new'"), []);
  });

  // Issue 24 item 5: a name and a key PostgreSQL could not index (their escaped form past btree's
  // 2,704 bytes, error 54000) were a store error, which onStoreError "open" turned into admitting
  // every call on a healthy database. Every valid name and key (at most 1024 bytes each) must be
  // stored and decided like any other.
  // Control characters in an order pglz cannot compress much (each escapes to 6 bytes of JSON).
  const shuffled = seeded(24);
  const CONTROL = Array.from({ length: 1024 }, () => String.fromCharCode(Math.floor(shuffled() * 32))).join("");
  const WORST = [
    ["1 KiB of NUL, 1 KiB of NUL", "\u0000".repeat(1024), "\u0000".repeat(1024)],
    ["1 KiB of control characters and NUL, the same", CONTROL, CONTROL],
    ["U+FFFF then 1 KiB, 341 U+FFFF (3 bytes each)", "\uffff" + "x".repeat(1021), "\uffff".repeat(341)],
    ["1 KiB of NUL, a key spelled as the stored form of 1 KiB of NUL", "\u0000".repeat(1024), null],
  ];
  /**
   * How a name or key is stored (README): as itself; escaped (U+FFFF and its JSON) when empty, with a
   * NUL or starting with U+FFFF; and when that is longer than 1200 bytes, U+FFFF, '#' and its SHA-256.
   */
  const columnForm = (text) => {
    const escaped = text === "" || text.includes("\u0000") || text.startsWith("\uffff") ? "\uffff" + JSON.stringify(text) : text;
    return Buffer.byteLength(escaped) <= 1200 ? escaped : "\uffff#" + createHash("sha256").update(escaped).digest("hex");
  };
  for (const [what, name, given] of WORST) {
    test(`the worst names and keys are stored and decided exactly under onStoreError "open", never a store error (${what})`, async () => {
      // A key spelled like another key's stored form is another key.
      const key = given ?? columnForm("\u0000".repeat(1024));
      const limits = { worst: { kind: "token bucket", rate: 2, period: 86_400_000, onStoreError: "open" } };
      const store = pgHost.postgresStore(pool);
      const limiter = new RateLimiter(store, { [name]: limits.worst }, { now: () => NOW });
      const results = [];
      for (let i = 0; i < 3; i++) results.push(await limiter.limit(name, { key }));
      assert.deepEqual(results, [{ ok: true }, { ok: true }, { ok: false, retryAfter: 43_200_000 }], "decided by the database, not degraded");
      assert.equal((await limiter.getValue(name, { key })).value, 0);
      const stored = await query("SELECT value FROM ratebound WHERE name = $1 AND key = $2 AND shard = 0", [columnForm(name), columnForm(key)]);
      assert.deepEqual(stored, [{ value: 0 }], "the row, under the forms README describes");
      const other = key.slice(0, -1) + (key.endsWith("\u0001") ? "\u0002" : "\u0001");
      assert.deepEqual(await limiter.check(name, { key: other }), { ok: true }, "a key that differs in its last character is another state");
      await limiter.reset(name, { key });
      assert.deepEqual(await limiter.limit(name, { key }), { ok: true }, "reset found the same row");
    });
  }

  test("under REPEATABLE READ a decision on a stale snapshot fails with 40001 instead of over-admitting", async () => {
    const limiter = (tx) => limiterOn(pgHost.postgresStore(tx), limits);
    for (const key of ["rr-existing", "rr-new"]) {
      if (key === "rr-existing") await limiterOn(pgHost.postgresStore(pool), limits).limit("burst", { key, count: 40 });
      const error = await inTransaction(
        async (tx) => {
          await tx.query("SELECT 1"); // the snapshot is taken here
          await limiterOn(pgHost.postgresStore(pool), limits).limit("burst", { key, count: 10 }); // another transaction commits
          return limiter(tx).limit("burst", { key, count: 10 });
        },
        { isolation: "ISOLATION LEVEL REPEATABLE READ" },
      ).catch((caught) => caught);
      assert.ok(error instanceof Error, `${key}: rejected (got ${JSON.stringify(error)})`);
      assert.equal(error.code, "40001", `${key}: ${error.message}`);
    }
    assert.equal((await query("SELECT value FROM ratebound WHERE name = 'burst' AND key = 'rr-existing'"))[0].value, 0);
    assert.equal((await query("SELECT value FROM ratebound WHERE name = 'burst' AND key = 'rr-new'"))[0].value, 40);
  });
});

test("bad arguments are refused at once with the core's RateboundTypeError (a TypeError, INVALID_ARGUMENT) that says what to do", async () => {
  // The class as an app imports it: "ratebound" in Node is the bundled entry, the one ratebound/postgres imports.
  const { RateboundTypeError } = await import("../../pkg/dist/node.bundle.js");
  const invalid = (message) => (error) => error instanceof RateboundTypeError && error instanceof TypeError && error.code === "INVALID_ARGUMENT" && message.test(error.message);
  assert.throws(() => pgHost.postgresStore(null), invalid(/ratebound\/postgres: db must have a query\(text, params\) method.*got null/));
  assert.throws(() => pgHost.postgresStore({}), invalid(/db must have a query/));
  const redisLike = { get() {}, set() {}, eval() {}, evalsha() {} };
  assert.throws(() => pgHost.postgresStore(redisLike), invalid(/db looks like a Redis client: pass it to redisStore\(client\) from ratebound\/redis/));
  assert.throws(() => pgHost.postgresStore({ query() {} }, { table: 'x"; DROP TABLE users; --' }), invalid(/table must be a name like "ratebound"/));
  assert.throws(() => pgHost.postgresStore({ query() {} }, { table: 7 }), invalid(/table must be a name like "ratebound" .*got 7/));
  assert.throws(() => pgHost.postgresStore({ query() {} }, { maxAttempts: 0 }), invalid(/maxAttempts must be an integer >= 1 \(got 0\)/));
  assert.throws(() => pgHost.postgresStore({ query() {} }, { onRetry: "log" }), invalid(/onRetry must be a function \(got "log"\)/));
  assert.throws(() => pgHost.createTableSql({ table: "a.b.c" }), invalid(/table must be a name/));
  await assert.rejects(() => pgHost.createTable({}), invalid(/db must have a query/));
  assert.match(pgHost.createTableSql({ table: "app.limits" }), /CREATE TABLE IF NOT EXISTS "app"\."limits"/);
  const sqliteHost = await import("../../pkg/dist/sqlite.js");
  assert.throws(() => sqliteHost.sqliteStore({ prepare() {} }), /ratebound\/sqlite: db must be a better-sqlite3, bun:sqlite or node:sqlite database, a libSQL client or transaction, or a D1 binding/);
  assert.throws(() => sqliteHost.sqliteStore({ prepare() {}, batch() {} }, { table: "1abc" }), /table must be a name/);
});
