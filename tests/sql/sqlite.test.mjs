// ratebound/sqlite on better-sqlite3, on a database file: the app's transaction and the limit
// commit or roll back together, limitAll is all or nothing, colliding refs stay apart, a corrupt
// row fails closed; two connections never both admit (four worker threads admit exactly the
// bound), while the same traffic through a store without the transaction over-admits.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import Database from "better-sqlite3";
import { COLLIDING_REFS, stateFor } from "../hosts/collisions.mjs";

const { RateLimiter } = await import("../../pkg/dist/node.js");
const sqliteHost = await import("../../pkg/dist/sqlite.js");

const NOW = 1_700_000_000_000;
const LIMITS = {
  daily: { kind: "token bucket", rate: 10, period: 86_400_000 },
  perUser: { kind: "token bucket", rate: 3, period: 86_400_000 },
  global: { kind: "fixed window", rate: 2, period: 86_400_000, start: 0 },
  burst: { kind: "token bucket", rate: 50, period: 86_400_000 },
};
const limiterOn = (store, limits = LIMITS) => new RateLimiter(store, limits, { now: () => NOW });

describe("better-sqlite3 on a file", () => {
  let dir;
  let path;
  let db;
  const rowOf = (name, key) => db.prepare("SELECT value, ts FROM ratebound WHERE name = ? AND key = ?").get(name, key) ?? null;
  const posts = (author) => db.prepare("SELECT body FROM posts WHERE author = ? ORDER BY id").all(author).map((row) => row.body);
  /** The app's own transaction on `connection`. */
  async function inTransaction(fn, connection = db) {
    connection.exec("BEGIN IMMEDIATE");
    try {
      const result = await fn(connection);
      connection.exec("COMMIT");
      return result;
    } catch (error) {
      if (connection.inTransaction) connection.exec("ROLLBACK");
      throw error;
    }
  }

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "ratebound-sqlite-"));
    path = join(dir, "app.db");
    db = new Database(path);
    db.pragma("journal_mode = WAL");
    await sqliteHost.createTable(db);
    db.exec("CREATE TABLE posts (id INTEGER PRIMARY KEY, author TEXT NOT NULL, body TEXT)");
  });
  after(() => {
    db?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("createTable is idempotent and makes the table with its primary key", async () => {
    await sqliteHost.createTable(db);
    const columns = db.prepare("SELECT name, type, pk FROM pragma_table_info('ratebound')").all();
    assert.deepEqual(
      columns.map((column) => `${column.name} ${column.type} ${column.pk}`),
      ["name TEXT 1", "key TEXT 2", "shard INTEGER 3", "value REAL 0", "ts REAL 0", "full_at REAL 0"],
    );
  });

  test("a rolled-back transaction consumes nothing and its insert is gone too", async () => {
    const thrown = await inTransaction(async (tx) => {
      assert.equal((await limiterOn(sqliteHost.sqliteStore(tx)).limit("daily", { key: "rolled", count: 4 })).ok, true);
      tx.prepare("INSERT INTO posts (author, body) VALUES (?, ?)").run("rolled", "never");
      throw new Error("the app failed after the limit granted");
    }).catch((error) => error.message);
    assert.equal(thrown, "the app failed after the limit granted");
    assert.equal(rowOf("daily", "rolled"), null);
    assert.deepEqual(posts("rolled"), []);
  });

  test("the app's own insert and the limit commit together, and a refused call inserts nothing", async () => {
    const limiter = limiterOn(sqliteHost.sqliteStore(db));
    const sent = [];
    for (const id of [1, 2, 3, 4]) {
      sent.push(
        await inTransaction(async (tx) => {
          const { ok } = await limiter.limit("perUser", { key: "ada" });
          if (ok) tx.prepare("INSERT INTO posts (author, body) VALUES (?, ?)").run("ada", `post ${id}`);
          return ok;
        }),
      );
    }
    assert.deepEqual(sent, [true, true, true, false]);
    assert.deepEqual(posts("ada"), ["post 1", "post 2", "post 3"]);
    assert.deepEqual(rowOf("perUser", "ada"), { value: 0, ts: NOW });
    // The write hint: refilling 3 tokens at 3 a day, the state is full again a day later.
    assert.equal(db.prepare("SELECT full_at FROM ratebound WHERE name = 'perUser' AND key = 'ada'").get().full_at, NOW + 86_400_000);
  });

  test("limitAll takes two limits together or not at all", async () => {
    const limiter = limiterOn(sqliteHost.sqliteStore(db));
    const batch = (user) => limiter.limitAll([{ name: "perUser", key: user }, { name: "global", key: "all" }]);
    assert.deepEqual(await batch("u1"), { ok: true });
    assert.deepEqual(await batch("u2"), { ok: true });
    assert.equal((await batch("u3")).ok, false);
    assert.equal(rowOf("perUser", "u3"), null);
  });

  test("a limitAll whose second write breaks a constraint writes neither state, and rejects with SQLite's code", async () => {
    db.exec("CREATE TRIGGER no_bad_key BEFORE INSERT ON ratebound WHEN NEW.key = 'forbidden' BEGIN SELECT RAISE(ABORT, 'forbidden key'); END");
    try {
      const error = await limiterOn(sqliteHost.sqliteStore(db))
        .limitAll([{ name: "perUser", key: "fine" }, { name: "perUser", key: "forbidden" }])
        .catch((caught) => caught);
      assert.ok(error instanceof Error);
      assert.equal(error.code, "SQLITE_CONSTRAINT_TRIGGER");
      assert.equal(rowOf("perUser", "fine"), null);
      assert.equal(db.inTransaction, false, "the store rolled its own transaction back");
    } finally {
      db.exec("DROP TRIGGER no_bad_key");
    }
  });

  test("every colliding (name, key, shard) keeps its own state, and a state makes an exact round trip", async () => {
    const store = sqliteHost.sqliteStore(db);
    await store.transaction(async (tx) => COLLIDING_REFS.forEach((ref, index) => tx.write(ref, stateFor(index))));
    const states = await store.transaction(async (tx) => COLLIDING_REFS.map((ref) => tx.read(ref)));
    assert.deepEqual(states, COLLIDING_REFS.map((_, index) => stateFor(index)));
    const exact = { value: 0.1 + 0.2, ts: NOW + 1 / 3 };
    await store.write({ name: "exact", shard: 0 }, exact);
    assert.deepEqual(await store.read({ name: "exact", shard: 0 }), exact);
  });

  test("a corrupt row fails the call with CORRUPT_STATE naming the ref, writes nothing, and stays as it was", async () => {
    db.prepare("INSERT INTO ratebound (name, key, shard, value, ts) VALUES ('daily', 'corrupt', 0, 'garbage', ?)").run(NOW);
    const error = await inTransaction(async (tx) => {
      tx.prepare("INSERT INTO posts (author, body) VALUES ('corrupt', 'before')").run();
      const failed = await limiterOn(sqliteHost.sqliteStore(tx))
        .limitAll([{ name: "perUser", key: "corrupt" }, { name: "daily", key: "corrupt" }])
        .catch((caught) => caught);
      tx.prepare("INSERT INTO posts (author, body) VALUES ('corrupt', 'after')").run();
      return failed;
    });
    assert.equal(error.code, "CORRUPT_STATE");
    assert.match(error.message, /daily/);
    assert.deepEqual(rowOf("daily", "corrupt"), { value: "garbage", ts: NOW });
    assert.equal(rowOf("perUser", "corrupt"), null);
    assert.deepEqual(posts("corrupt"), ["before", "after"]);
  });

  test("two connections in one process: calls racing on both never over-admit, and each loser fails with SQLITE_BUSY", async () => {
    const other = new Database(path, { timeout: 0 });
    const first = new Database(path, { timeout: 0 });
    try {
      const limiters = [first, other].map((connection) => limiterOn(sqliteHost.sqliteStore(connection)));
      const outcomes = await Promise.all(Array.from({ length: 40 }, (_, index) => limiters[index % 2].limit("daily", { key: "two" }).catch((error) => error)));
      const admitted = outcomes.filter((outcome) => outcome.ok === true).length;
      const codes = new Set(outcomes.filter((outcome) => outcome instanceof Error).map((error) => error.code));
      assert.ok(admitted >= 1 && admitted <= 10, `admitted ${admitted}`);
      assert.deepEqual([...codes], admitted + outcomes.filter((outcome) => outcome.ok === false).length === 40 ? [] : ["SQLITE_BUSY"]);
      assert.equal(rowOf("daily", "two").value, 10 - admitted);
    } finally {
      first.close();
      other.close();
    }
  });

  /** Four worker threads, a connection each, 30 calls apiece on one key of "burst" (50 tokens; `limits` may make it another kind). */
  async function fourThreads(key, guarded, limits = LIMITS) {
    const results = await Promise.all(
      Array.from({ length: 4 }, () => {
        const worker = new Worker(new URL("./sqlite-worker.mjs", import.meta.url), { workerData: { path, key, calls: 30, limits, now: NOW, guarded } });
        return new Promise((resolve, reject) => {
          worker.once("message", resolve);
          worker.once("error", reject);
        }).finally(() => worker.terminate());
      }),
    );
    assert.deepEqual(results.flatMap((result) => result.errors), []);
    const posted = results.reduce((sum, result) => sum + result.posted, 0);
    assert.equal(db.prepare("SELECT count(*) AS n FROM posts WHERE author = ?").get(key).n, posted, "every admitted app transaction left its post");
    return { admitted: results.reduce((sum, result) => sum + result.admitted, 0), value: rowOf("burst", key).value };
  }

  test("four worker threads with a connection each, 30 calls apiece, admit exactly the bound of 50 and leave 0", async () => {
    assert.deepEqual(await fourThreads("threads", true), { admitted: 50, value: 0 });
  });

  test("the same threads through the store's bare read and write, without its transaction, over-admit (so the test above can fail)", async () => {
    let worst = { admitted: 0 };
    // Lost updates need two threads between one read and its write: a few rounds make that certain.
    for (let round = 0; round < 10 && worst.admitted <= 50; round++) {
      const result = await fourThreads(`bare-${round}`, false);
      if (result.admitted > worst.admitted) worst = result;
    }
    assert.ok(worst.admitted > 50, `admitted ${worst.admitted} of 50`);
  });

  // "burst" as a sliding window of 50 a day: its window's row counts what was granted.
  const slidingBurst = { burst: { kind: "sliding window", rate: 50, period: 86_400_000 } };

  test("a sliding window: the same four threads admit exactly its rate of 50, and its window holds 50", async () => {
    assert.deepEqual(await fourThreads("sliding-threads", true, slidingBurst), { admitted: 50, value: 50 });
  });

  test("a sliding window: the same threads without the store's transaction over-admit (so the test above can fail)", async () => {
    let worst = 0;
    for (let round = 0; round < 10 && worst <= 50; round++) worst = Math.max(worst, (await fourThreads(`sliding-bare-${round}`, false, slidingBurst)).admitted);
    assert.ok(worst > 50, `admitted ${worst} of 50`);
  });

  test("reset deletes the state, and pruneStates deletes only states that are full", async () => {
    const limiter = limiterOn(sqliteHost.sqliteStore(db));
    await limiter.limit("daily", { key: "reset-me" });
    await limiter.reset("daily", { key: "reset-me" });
    assert.equal(rowOf("daily", "reset-me"), null);
    db.exec("INSERT INTO ratebound (name, key, shard, value, ts, full_at) VALUES ('prune', 'full', 0, 1, 0, 10), ('prune', 'later', 0, 1, 0, 1e15)");
    assert.equal(await sqliteHost.pruneStates(db, { now: 100 }), 1);
    assert.deepEqual(db.prepare("SELECT key FROM ratebound WHERE name = 'prune'").all().map((row) => row.key), ["later"]);
  });

  test("a closed connection fails the call with a code", async () => {
    const closed = new Database(path);
    closed.close();
    const error = await limiterOn(sqliteHost.sqliteStore(closed)).limit("daily").catch((caught) => caught);
    assert.ok(error instanceof Error);
    assert.equal(error.code, "SQL_FAILED");
  });
});
