// Limits stored in the host on better-sqlite3 (tests/hosts/stored-limits-scenarios.mjs): two
// connections to one database file, one limiter each; the records are rows of the limiter's
// table, read in the call's transaction with its states.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { KEY_LIMIT_SHARD, pair, storedLimitScenarios } from "../hosts/stored-limits-scenarios.mjs";

const { sqliteStore, createTable } = await import("../../pkg/dist/sqlite.js");

describe("stored limits on better-sqlite3", () => {
  let dir;
  let file = 0;
  const connections = [];
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "ratebound-stored-limits-"));
  });
  after(() => {
    for (const db of connections) if (db.open) db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const open = async () => {
    const path = join(dir, `app-${file++}.db`);
    const first = new Database(path, { timeout: 5_000 });
    const second = new Database(path, { timeout: 5_000 });
    connections.push(first, second);
    first.pragma("journal_mode = WAL");
    await createTable(first);
    return { store: sqliteStore(first), other: sqliteStore(second), db: first };
  };

  storedLimitScenarios(test, open);

  test("the records are two rows of the table, at shards no state has, and deleteLimit removes them", async () => {
    const { store, other, db } = await open();
    const { a, b } = pair(store, other);
    await a.setLimit("api", { kind: "token bucket", rate: 3, period: 60_000, maxReserved: 2 }, { key: "acme" });
    const all = db.prepare("SELECT key, shard, value, ts FROM ratebound ORDER BY shard").all();
    assert.deepEqual(all.map((row) => [row.shard, row.value, row.ts]), [[KEY_LIMIT_SHARD, 3, 60_000], [KEY_LIMIT_SHARD + 1, 3, 2]]);
    assert.equal((await b.limit("api", { key: "acme" })).ok, true);
    await b.deleteLimit("api", { key: "acme" });
    assert.deepEqual(db.prepare("SELECT shard FROM ratebound WHERE shard >= ?").all(KEY_LIMIT_SHARD), []);
  });
});
