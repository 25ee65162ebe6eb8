// ratebound/sqlite over libSQL (@libsql/client, asynchronous) on a local database file: the
// client, where each call is a transaction("write") of its own (BEGIN IMMEDIATE), and the app's
// interactive transaction, where the limit commits or rolls back with the app's writes. The bound
// is exact under concurrency on one client and across worker threads with a client each; the same
// concurrent calls through the store's bare read and write over-admit (so the test can fail).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { createClient } from "@libsql/client";
import { bareStore } from "../settle/scenarios.mjs";

const { RateLimiter } = await import("../../pkg/dist/node.js");
const sqliteHost = await import("../../pkg/dist/sqlite.js");

const NOW = 1_700_000_000_000;
const LIMITS = {
  daily: { kind: "token bucket", rate: 10, period: 86_400_000 },
  perUser: { kind: "token bucket", rate: 3, period: 86_400_000 },
  burst: { kind: "token bucket", rate: 50, period: 86_400_000 },
};
const limiterOn = (store) => new RateLimiter(store, LIMITS, { now: () => NOW });

describe("libSQL (@libsql/client) on a local database file", () => {
  let dir;
  let url;
  let client;
  const rows = async (sql, args = []) => (await client.execute({ sql, args })).rows.map((row) => ({ ...row }));
  const rowOf = async (name, key) => (await rows("SELECT value, ts FROM ratebound WHERE name = ? AND key = ?", [name, key]))[0] ?? null;
  const posts = async (author) => (await rows("SELECT author FROM posts WHERE author = ?", [author])).length;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "ratebound-libsql-"));
    url = pathToFileURL(join(dir, "app.db")).href;
    client = createClient({ url });
    await client.execute("PRAGMA journal_mode = WAL");
    await client.execute("CREATE TABLE posts (id INTEGER PRIMARY KEY, author TEXT NOT NULL)");
  });
  after(() => {
    client?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("createTable is idempotent and makes the table with its primary key", async () => {
    await sqliteHost.createTable(client);
    await sqliteHost.createTable(client);
    const columns = await rows("SELECT name, pk FROM pragma_table_info('ratebound') ORDER BY cid");
    assert.deepEqual(columns.map((column) => `${column.name}:${column.pk}`), ["name:1", "key:2", "shard:3", "value:0", "ts:0", "full_at:0"]);
  });

  test("in the app's transaction, the limit and the app's insert commit together, and a refused call inserts nothing", async () => {
    const send = async () => {
      const tx = await client.transaction("write");
      try {
        const { ok } = await limiterOn(sqliteHost.sqliteStore(tx)).limit("perUser", { key: "ada" });
        if (ok) await tx.execute({ sql: "INSERT INTO posts (author) VALUES (?)", args: ["ada"] });
        await tx.commit();
        return ok;
      } finally {
        tx.close();
      }
    };
    const sent = [];
    for (let index = 0; index < 4; index++) sent.push(await send());
    assert.deepEqual(sent, [true, true, true, false]);
    assert.equal(await posts("ada"), 3);
    assert.deepEqual(await rowOf("perUser", "ada"), { value: 0, ts: NOW });
  });

  test("a rolled-back transaction consumes nothing and its insert is gone too", async () => {
    const tx = await client.transaction("write");
    try {
      assert.equal((await limiterOn(sqliteHost.sqliteStore(tx)).limit("daily", { key: "rolled", count: 4 })).ok, true);
      await tx.execute({ sql: "INSERT INTO posts (author) VALUES (?)", args: ["rolled"] });
      await tx.rollback();
    } finally {
      tx.close();
    }
    assert.equal(await rowOf("daily", "rolled"), null);
    assert.equal(await posts("rolled"), 0);
    assert.equal((await limiterOn(sqliteHost.sqliteStore(client)).getValue("daily", { key: "rolled" })).value, 10);
  });

  test("a failed call in the app's transaction rolls back to its savepoint and leaves the transaction usable", async () => {
    await client.execute({ sql: "INSERT INTO ratebound (name, key, shard, value, ts) VALUES ('daily', 'corrupt', 0, 'oops', ?)", args: [NOW] });
    const tx = await client.transaction("write");
    try {
      await tx.execute({ sql: "INSERT INTO posts (author) VALUES (?)", args: ["corrupt"] });
      const error = await limiterOn(sqliteHost.sqliteStore(tx))
        .limitAll([{ name: "perUser", key: "corrupt" }, { name: "daily", key: "corrupt" }])
        .catch((caught) => caught);
      assert.equal(error.code, "CORRUPT_STATE");
      await tx.execute({ sql: "INSERT INTO posts (author) VALUES (?)", args: ["corrupt"] });
      await tx.commit();
    } finally {
      tx.close();
    }
    assert.equal(await posts("corrupt"), 2);
    assert.equal(await rowOf("perUser", "corrupt"), null);
  });

  test("120 concurrent calls on one key of one client admit exactly the bound of 50, and 40 on other keys meanwhile all pass", async () => {
    const limiter = limiterOn(sqliteHost.sqliteStore(client));
    // Other keys' calls overlap the first key's: each BEGIN IMMEDIATE waits its turn in the process.
    const others = Promise.all(Array.from({ length: 40 }, (_, index) => limiter.limit("burst", { key: `other-${index}` })));
    const outcomes = await Promise.all(Array.from({ length: 120 }, () => limiter.limit("burst", { key: "one-client" })));
    assert.equal(outcomes.filter((outcome) => outcome.ok).length, 50);
    assert.equal((await rowOf("burst", "one-client")).value, 0);
    assert.equal((await others).filter((outcome) => outcome.ok).length, 40);
  });

  test("the same calls through the store's bare read and write, without its transaction, over-admit (so the test above can fail)", async () => {
    const limiter = limiterOn(bareStore(sqliteHost.sqliteStore(client), 1));
    const outcomes = await Promise.all(Array.from({ length: 120 }, () => limiter.limit("burst", { key: "bare" })));
    assert.ok(outcomes.filter((outcome) => outcome.ok).length > 50);
  });

  test("four worker threads with a client each, 30 calls apiece (half in the app's transaction), admit exactly 50", async () => {
    const results = await Promise.all(
      Array.from({ length: 4 }, () => {
        const worker = new Worker(new URL("./libsql-worker.mjs", import.meta.url), { workerData: { url, key: "threads", calls: 30, limits: LIMITS, now: NOW } });
        return new Promise((resolve, reject) => {
          worker.once("message", resolve);
          worker.once("error", reject);
        }).finally(() => worker.terminate());
      }),
    );
    assert.deepEqual(results.flatMap((result) => result.errors), []);
    assert.equal(results.reduce((sum, result) => sum + result.admitted, 0), 50);
    assert.equal(await posts("threads"), results.reduce((sum, result) => sum + result.posted, 0));
    assert.equal((await rowOf("burst", "threads")).value, 0);
  });

  test("getValue and reset, and pruneStates deletes only states that are full", async () => {
    const limiter = limiterOn(sqliteHost.sqliteStore(client));
    await limiter.limit("daily", { key: "reset-me", count: 3 });
    assert.equal((await limiter.getValue("daily", { key: "reset-me" })).value, 7);
    await limiter.reset("daily", { key: "reset-me" });
    assert.equal(await rowOf("daily", "reset-me"), null);
    await client.execute("INSERT INTO ratebound (name, key, shard, value, ts, full_at) VALUES ('prune', 'full', 0, 1, 0, 10), ('prune', 'later', 0, 1, 0, 1e15)");
    assert.equal(await sqliteHost.pruneStates(client, { now: 100 }), 1);
    assert.deepEqual((await rows("SELECT key FROM ratebound WHERE name = 'prune'")).map((row) => row.key), ["later"]);
  });

  test("a table that was never created fails the call with SQLite's code and names createTable", async () => {
    const error = await limiterOn(sqliteHost.sqliteStore(client, { table: "missing" })).limit("daily", { key: "k" }).catch((caught) => caught);
    assert.ok(error instanceof Error);
    assert.equal(typeof error.code, "string");
    assert.match(error.message, /createTable/);
  });
});
