// Concurrency limits with leases on better-sqlite3, on a database file
// (tests/concurrency/scenarios.mjs): each take, release and extend is one transaction (BEGIN
// IMMEDIATE). Takes racing from worker threads, a connection each, grant exactly max; the same
// threads through the store's bare read and write grant more. (One thread's calls never
// interleave: better-sqlite3 is synchronous.) The same inside the app's own transaction (BEGIN
// IMMEDIATE, the take in the store's savepoint, the app's row): exactly max committed, a
// rolled-back take holds no slot, and a committed lease is released later through
// `limiter.lease(data)` on a connection of its own.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import Database from "better-sqlite3";
import { SCENARIOS, freshKey } from "../concurrency/scenarios.mjs";

const { RateLimiter } = await import("../../pkg/dist/node.js");
const { sqliteStore, createTable } = await import("../../pkg/dist/sqlite.js");
const NOW = 1_700_000_000_000;
const LIMITS = { jobs: { kind: "concurrency", max: 3, lease: 60_000 } };

describe("concurrency limits on better-sqlite3", () => {
  let dir;
  let path;
  const connections = [];
  const connection = () => {
    const db = new Database(path, { timeout: 5_000 });
    connections.push(db);
    return db;
  };
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "ratebound-concurrency-sqlite-"));
    path = join(dir, "app.db");
    const db = connection();
    db.pragma("journal_mode = WAL");
    await createTable(db);
    db.exec("CREATE TABLE jobs (id INTEGER PRIMARY KEY, key TEXT NOT NULL, lease TEXT)");
  });
  after(() => {
    for (const db of connections) if (db.open) db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const clock = { now: NOW, read: () => clock.now };
  const harness = { clock, connect: (limits) => new RateLimiter(sqliteStore(connection()), limits, { now: clock.read }) };
  // The race of many connections in one thread is the threads' test below: in one thread, a
  // connection waiting for BEGIN IMMEDIATE blocks the thread, so the holder never commits.
  const { exactUnderConcurrentCalls: _oneThread, ...scenarios } = SCENARIOS;
  for (const [name, scenario] of Object.entries(scenarios)) test(name, () => scenario(harness));

  /** `n` threads take a lease on one key at once: how many got one. */
  async function threads(guarded, { n = 8, app = false, key = freshKey(guarded ? "threads" : "bare-threads") } = {}) {
    const workers = Array.from({ length: n }, () => new Worker(new URL("./concurrency-sqlite-worker.mjs", import.meta.url), { workerData: { path, limits: LIMITS, key, now: NOW, guarded, app } }));
    const message = (worker) =>
      new Promise((resolve, reject) => {
        worker.once("message", resolve);
        worker.once("error", reject);
      });
    try {
      await Promise.all(workers.map(message));
      const answers = workers.map(message);
      for (const worker of workers) worker.postMessage("go");
      const outcomes = await Promise.all(answers);
      assert.deepEqual(outcomes.filter((outcome) => outcome.code), [], "no thread failed");
      return outcomes.filter((outcome) => outcome.ok).length;
    } finally {
      await Promise.all(workers.map((worker) => worker.terminate()));
    }
  }

  test("threads racing on one key, a connection each, get exactly max leases", async () => {
    assert.equal(await threads(true), 3);
  });
  test("the same threads through the store's bare read and write, without its transaction, get more (the control)", async () => {
    const granted = await threads(false);
    assert.ok(granted > 3, `${granted} granted`);
  });

  const rowsOf = (key) => connection().prepare("SELECT lease FROM jobs WHERE key = ?").all(key).map((row) => JSON.parse(row.lease));

  test("threads racing on one key inside app transactions (the take in the app's BEGIN IMMEDIATE) commit exactly max leases with the app's rows", async () => {
    const key = freshKey("app-threads");
    assert.equal(await threads(true, { app: true, key }), 3);
    const rows = rowsOf(key);
    assert.equal(rows.length, 3, "the refused transactions rolled their rows back");
    assert.deepEqual(rows.map((data) => data.slots[0]).sort(), [0, 1, 2]);
  });
  test("the same app transactions with the take before them, through the bare read and write, get more (the control)", async () => {
    const granted = await threads(false, { app: true, key: freshKey("app-bare-threads") });
    assert.ok(granted > 3, `${granted} granted`);
  });

  test("a take rolled back with the app's transaction holds no slot; a committed one is released later through limiter.lease(data) on another connection", async () => {
    const key = freshKey("app-later");
    const db = connection();
    const inApp = new RateLimiter(sqliteStore(db), LIMITS, { now: clock.read });
    db.exec("BEGIN IMMEDIATE");
    const rolledBack = await inApp.limit("jobs", { key, count: 3 });
    assert.equal(rolledBack.ok, true);
    db.exec("ROLLBACK");
    db.exec("BEGIN IMMEDIATE");
    const committed = await inApp.limit("jobs", { key, count: 2 });
    assert.deepEqual(committed.ok && committed.lease.slots, [0, 1], "the rolled-back lease held nothing");
    db.prepare("INSERT INTO jobs (key, lease) VALUES (?, ?)").run(key, JSON.stringify(committed.lease));
    db.exec("COMMIT");
    const later = new RateLimiter(sqliteStore(connection()), LIMITS, { now: clock.read });
    assert.deepEqual(await later.lease(rolledBack.lease.toJSON()).release(), { released: 0 }, "a rolled-back lease gives back nothing");
    assert.equal((await later.limit("jobs", { key, count: 2 })).ok, false, "the committed lease holds two of three");
    const [data] = rowsOf(key);
    assert.deepEqual(await later.lease(data).extend(120_000), { expiresAt: clock.now + 120_000 });
    assert.deepEqual(await later.lease(data).release(), { released: 2 });
    assert.equal((await later.limit("jobs", { key, count: 3 })).ok, true);
  });
});
