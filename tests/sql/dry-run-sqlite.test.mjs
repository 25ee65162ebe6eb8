// Dry runs on better-sqlite3 (the scenarios of tests/js/dry-run-scenarios.mjs): each store on a
// table of its own in one database file, decided in the store's transaction.
import { after, before, describe } from "node:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { dryRunScenarios, STORE_TAGS } from "../js/dry-run-scenarios.mjs";

const { sqliteStore, createTable } = await import("../../pkg/dist/sqlite.js");
const tableOf = (tag) => `dry_${tag.replace(/[^a-z]/g, "_")}`;

describe("dry runs on better-sqlite3", () => {
  const dir = mkdtempSync(join(tmpdir(), "ratebound-dry-run-"));
  const db = new Database(join(dir, "app.db"), { timeout: 5_000 });
  before(async () => {
    for (const tag of STORE_TAGS) await createTable(db, { table: tableOf(tag) });
  });
  after(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  dryRunScenarios((tag) => sqliteStore(db, { table: tableOf(tag) }));
});
