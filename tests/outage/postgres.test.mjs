// onStoreError and timeout on a real PostgreSQL server (Debian's, in a temporary directory on a
// free loopback port, stopped after), through a pg Pool: the limiter's connections are killed
// with pg_terminate_backend and new ones refused (closed rejects, open admits degraded, the
// memory fallback admits at most the bound; once connections are allowed again, decisions are the
// database's); a table lock held by another connection keeps a transactional call past the
// timeout: the call answers at the timeout, its body's later write is refused, and after the lock
// is released the row shows that nothing committed late (without the timeout, the same call
// commits); a decision (one statement) held by a row lock past the timeout decides, once the lock
// is released, on what the holder committed. And a
// backend killed while a call waits for a row lock, with README's setup and nothing more, in a
// process of its own: the call rejects with a code and the process lives on (issue 24 item 3).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { RateLimiter } from "../../pkg/dist/node.js";
import { createTable, postgresStore } from "../../pkg/dist/postgres.js";
import { startPostgres, failOnDeprecationWarnings } from "../sql/postgres-server.mjs";
import { eventually } from "./stores.mjs";

failOnDeprecationWarnings();

const NOW = 1_700_000_000_000;
const BUCKET = { kind: "token bucket", rate: 5, period: 60_000 };
const LIMITS = {
  login: BUCKET, // closed: the default
  search: { ...BUCKET, onStoreError: "open" },
  feed: { ...BUCKET, onStoreError: { fallback: "memory" } },
};
const OUTAGE_CALLS = 20;

describe("a real PostgreSQL server", () => {
  let server;
  let admin; // on the `postgres` database: never part of an outage
  let app; // the limiter's pool, on the `app` database
  const appRow = async (name, key) => {
    const reader = new pg.Client({ connectionString: server.connectionString.replace(/\/postgres$/, "/app") });
    reader.on("error", () => {});
    await reader.connect();
    try {
      return (await reader.query("SELECT value, ts FROM ratebound WHERE name = $1 AND key = $2", [name, key])).rows[0] ?? null;
    } finally {
      await reader.end();
    }
  };
  /** A store over `app` that records how each transaction body ended and what reached the database's write. */
  function recordingStore() {
    const inner = postgresStore(app);
    const seen = { bodies: [], writes: 0 };
    const store = {
      seen,
      read: (ref) => inner.read(ref),
      write: (ref, state, info) => inner.write(ref, state, info),
      transaction: (body) =>
        inner.transaction(async (tx) => {
          const counted = { read: (ref) => tx.read(ref), write: (...args) => (seen.writes++, tx.write(...args)) };
          try {
            const result = await body(counted);
            seen.bodies.push({ ok: true });
            return result;
          } catch (error) {
            seen.bodies.push({ ok: false, error });
            throw error;
          }
        }),
    };
    return store;
  }

  before(async () => {
    server = await startPostgres({ maxConnections: 40 });
    admin = new pg.Pool({ connectionString: server.connectionString, max: 4 });
    // Killed connections emit "error" (ECONNRESET) on their client, idle or checked out: the calls report it.
    admin.on("error", () => {}).on("connect", (client) => client.on("error", () => {}));
    await admin.query("CREATE DATABASE app");
    app = new pg.Pool({ connectionString: server.connectionString.replace(/\/postgres$/, "/app"), max: 12, connectionTimeoutMillis: 2_000 });
    // README's setup and nothing more: the pool's own handler, no listener on any client the store checks out.
    app.on("error", () => {});
    await createTable(app);
  });
  after(async () => {
    await app?.end().catch(() => {});
    await admin?.end().catch(() => {});
    server?.stop();
  });

  test(`connections killed and refused: closed rejects with a code, open admits degraded, the fallback admits at most the bound over ${OUTAGE_CALLS} calls; allowed again, decisions are the database's`, { timeout: 30_000 }, async () => {
    const limiter = new RateLimiter(postgresStore(app), LIMITS, { now: () => NOW });
    for (const name of Object.keys(LIMITS)) assert.deepEqual(await limiter.limit(name, { key: "u1", count: 2 }), { ok: true });
    assert.deepEqual(await appRow("feed", "u1"), { value: 3, ts: NOW });

    await admin.query("ALTER DATABASE app ALLOW_CONNECTIONS false");
    const killed = await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'app' AND pid <> pg_backend_pid()");
    assert.ok(killed.rows.length >= 1, "the pool's connections were killed");
    const closed = await limiter.limit("login", { key: "u1" }).catch((error) => error);
    assert.ok(closed instanceof Error && typeof closed.code === "string", `closed rejects with a code (got ${closed?.code}: ${closed?.message})`);
    const admitted = { search: 0, feed: 0 };
    for (let i = 0; i < OUTAGE_CALLS; i++) {
      for (const name of ["search", "feed"]) {
        const result = await limiter.limit(name, { key: "u1" });
        assert.equal(result.degraded, "store-error", JSON.stringify(result));
        assert.equal(typeof result.cause.code, "string");
        if (result.ok) admitted[name]++;
      }
    }
    assert.deepEqual(admitted, { search: OUTAGE_CALLS, feed: 5 });
    assert.equal((await limiter.checkAll([{ name: "feed", key: "u1" }, { name: "search", key: "u1" }])).ok, false, "a batch takes the fallback");
    assert.ok((await limiter.reset("feed", { key: "u1" }).catch((error) => error)) instanceof Error, "reset fails closed");

    await admin.query("ALTER DATABASE app ALLOW_CONNECTIONS true");
    await eventually(async () => (await limiter.limit("feed", { key: "u1" })).degraded === undefined, 10_000);
    assert.deepEqual(await appRow("feed", "u1"), { value: 2, ts: NOW }, "the database's state moved on from before the outage");
    assert.deepEqual(await limiter.limit("feed", { key: "u1", count: 2 }), { ok: true });
    assert.deepEqual(await limiter.limit("feed", { key: "u1" }), { ok: false, retryAfter: 12_000 }, "the database decides, not the fallback");
    assert.deepEqual(await limiter.limit("login", { key: "u1" }), { ok: true });
  });

  /** Holds `LOCK TABLE ratebound IN ACCESS EXCLUSIVE MODE` on a connection of its own until `release()`. */
  async function lockTable() {
    const holder = await app.connect();
    await holder.query("BEGIN");
    await holder.query("LOCK TABLE ratebound IN ACCESS EXCLUSIVE MODE");
    return {
      release: async () => {
        await holder.query("COMMIT");
        holder.release();
      },
    };
  }

  test("a call held by a table lock past the timeout answers at the timeout; its later write is refused and nothing commits", { timeout: 30_000 }, async () => {
    for (const name of Object.keys(LIMITS)) await new RateLimiter(postgresStore(app), LIMITS, { now: () => NOW }).limit(name, { key: "locked", count: 2 });
    for (const name of Object.keys(LIMITS)) {
      const store = recordingStore();
      const limiter = new RateLimiter(store, LIMITS, { now: () => NOW, timeout: 200 });
      const lock = await lockTable();
      const started = Date.now();
      const answer = await limiter.limit(name, { key: "locked" }).catch((error) => error);
      const elapsed = Date.now() - started;
      assert.ok(elapsed >= 190 && elapsed < 1_500, `${name}: answered after ${elapsed} ms`);
      if (name === "login") assert.equal(answer.code, "STORE_TIMEOUT");
      else assert.deepEqual([answer.ok, answer.degraded, answer.cause.code], [true, "store-timeout", "STORE_TIMEOUT"]);
      assert.equal(store.seen.bodies.length, 0, "the body is still waiting for the lock");
      await lock.release();
      await eventually(() => store.seen.bodies.length === 1);
      assert.equal(store.seen.bodies[0].ok, false);
      assert.equal(store.seen.bodies[0].error.code, "STORE_TIMEOUT", "the body's write after the lock was released was refused");
      assert.equal(store.seen.writes, 0, "no write reached the database");
      assert.deepEqual(await appRow(name, "locked"), { value: 3, ts: NOW }, `${name}: the late write did not commit`);
    }
  });

  test("without the timeout the same locked call waits and commits once the lock is released (so the test above can fail)", { timeout: 30_000 }, async () => {
    const store = recordingStore();
    const limiter = new RateLimiter(store, LIMITS, { now: () => NOW, onStoreError: "open" });
    const lock = await lockTable();
    const pending = limiter.limit("login", { key: "locked" });
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(store.seen.bodies.length, 0, "held by the lock");
    await lock.release();
    assert.deepEqual(await pending, { ok: true });
    assert.equal(store.seen.writes, 1);
    assert.deepEqual(await appRow("login", "locked"), { value: 2, ts: NOW });
  });

  test("a row locked FOR UPDATE by another transaction: the fallback decides at the timeout; the late statements then decide on the holder's commit, never past the bound", { timeout: 30_000 }, async () => {
    const limiter = new RateLimiter(postgresStore(app), LIMITS, { now: () => NOW, timeout: 150 });
    await limiter.limit("feed", { key: "row", count: 1 });
    const holder = await app.connect();
    try {
      await holder.query("BEGIN");
      await holder.query("SELECT * FROM ratebound WHERE name = 'feed' AND key = 'row' FOR UPDATE");
      const results = [];
      for (let i = 0; i < 8; i++) results.push(await limiter.limit("feed", { key: "row" }));
      assert.ok(results.every((result) => result.degraded === "store-timeout"));
      assert.equal(results.filter((result) => result.ok).length, 5, "the fallback admits the bound");
      await holder.query("UPDATE ratebound SET value = 4 WHERE name = 'feed' AND key = 'row'");
      await holder.query("COMMIT");
    } finally {
      holder.release();
    }
    await new Promise((resolve) => setTimeout(resolve, 300)); // the late statements end
    // A decision is one statement, which a call that timed out cannot take back (as a Redis
    // script): each of the 8 took the row after the holder's commit and decided on what the
    // holder left, 4 tokens. So 4 were charged and 4 refused: none wrote over the holder's commit,
    // and together they never took more than the bound.
    assert.deepEqual(await appRow("feed", "row"), { value: 0, ts: NOW }, "the late statements decided on the holder's 4, in turn");
    assert.deepEqual(await limiter.limit("feed", { key: "row" }), { ok: false, retryAfter: 12_000 }, "the database decides again");
  });

  test("a backend killed while limit() waits for a row lock rejects the call with a code, and the process lives on (README's setup, 3 of 3 runs; issue 24 item 3)", { timeout: 60_000 }, async (t) => {
    // The child is an app as README sets it up: `new pg.Pool()` (PG* variables), pool.on("error"),
    // and nothing else; no listener on any client the store checks out. It runs three rounds on
    // the pool and three in its own transaction (README's BEGIN … limit … COMMIT on a checked-out
    // client): each time a row is held FOR UPDATE by another connection, limit() waits for it, and
    // that waiting backend is terminated.
    const child = String.raw`
      import pg from "pg";
      import { RateLimiter } from ${JSON.stringify(new URL("../../pkg/dist/node.js", import.meta.url).href)};
      import { createTable, postgresStore } from ${JSON.stringify(new URL("../../pkg/dist/postgres.js", import.meta.url).href)};
      const LIMITS = { post: { kind: "token bucket", rate: 10, period: 60_000, capacity: 3 } };
      const pool = new pg.Pool();
      pool.on("error", (error) => console.error("pool error:", error.message));
      await createTable(pool);
      // The test's own helpers: a connection that holds the row, and one that kills the waiter.
      const holder = new pg.Client();
      const admin = new pg.Client();
      for (const helper of [holder, admin]) helper.on("error", () => {}), await helper.connect();
      const [{ pid: holderPid }] = (await holder.query("SELECT pg_backend_pid() AS pid")).rows;
      const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
      async function killTheWaiter() {
        for (let waited = 0; waited < 10_000; waited += 20) {
          const { rows } = await admin.query("SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> $1", [holderPid]);
          if (rows.length > 0) {
            await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> $1", [holderPid]);
            return rows.length;
          }
          await sleep(20);
        }
        throw new Error("no call waited for the lock");
      }
      const outcome = (promise) => promise.then((result) => ({ result }), (error) => ({ code: error?.code, message: String(error?.message) }));
      const rounds = [];
      for (const how of ["pool", "pool", "pool", "transaction", "transaction", "transaction"]) {
        const key = "killed-" + how + "-" + rounds.length;
        await new RateLimiter(postgresStore(pool), LIMITS).limit("post", { key }); // the row exists
        await holder.query("BEGIN");
        await holder.query("SELECT 1 FROM ratebound WHERE key = $1 FOR UPDATE", [key]);
        let pending;
        if (how === "pool") {
          pending = outcome(new RateLimiter(postgresStore(pool), LIMITS).limit("post", { key }));
        } else {
          // README's transaction, as written there.
          pending = outcome((async () => {
            const client = await pool.connect();
            try {
              await client.query("BEGIN");
              const { ok } = await new RateLimiter(postgresStore(client), LIMITS).limit("post", { key });
              await client.query(ok ? "COMMIT" : "ROLLBACK");
              return ok;
            } catch (error) {
              await client.query("ROLLBACK").catch(() => {});
              throw error;
            } finally {
              client.release();
            }
          })());
        }
        const killed = await killTheWaiter();
        const answer = await pending;
        await holder.query("ROLLBACK");
        await sleep(200); // the dead socket's events arrive
        const after = await outcome(new RateLimiter(postgresStore(pool), LIMITS).limit("post", { key }));
        rounds.push({ how, killed, answer, after });
      }
      await holder.end();
      await admin.end();
      await pool.end();
      console.log(JSON.stringify(rounds));
    `;
    const env = { ...process.env, PGHOST: "127.0.0.1", PGPORT: String(server.port), PGUSER: "postgres", PGDATABASE: "app" };
    const cwd = fileURLToPath(new URL("../..", import.meta.url));
    const { code, stdout, stderr } = await new Promise((resolve) =>
      execFile(process.execPath, ["--input-type=module", "-e", child], { env, cwd, timeout: 50_000 }, (error, stdout, stderr) =>
        resolve({ code: error === null ? 0 : (error.code ?? error.signal), stdout, stderr }),
      ),
    );
    assert.equal(code, 0, `the process lived on (exit ${code})\n${stderr}`);
    const rounds = JSON.parse(stdout);
    assert.equal(rounds.length, 6);
    t.diagnostic(`codes: ${rounds.map(({ how, answer }) => `${how} ${answer.code}`).join(", ")}`);
    for (const { how, killed, answer, after } of rounds) {
      assert.equal(killed, 1, `${how}: one waiting backend was killed`);
      assert.equal(typeof answer.code, "string", `${how}: the call rejected with a code (got ${JSON.stringify(answer)})`);
      assert.deepEqual(after, { result: { ok: true } }, `${how}: the next call on the pool decides`);
    }
  });
});
