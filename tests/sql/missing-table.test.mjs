// Forgetting createTable: every call that touches the table — limit, a grant, getValue, reset —
// rejects with the driver's own code and a message that says to run createTable(db), on
// better-sqlite3 and on PostgreSQL (PGlite: real PostgreSQL in-process). Before, only limit() on
// PostgreSQL said so; grants and getValue failed with a raw "relation … does not exist", and
// SQLite with a raw "no such table".
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import Database from "better-sqlite3";
import { PGlite } from "@electric-sql/pglite";

const { RateLimiter } = await import("../../pkg/dist/node.js");
const sqliteHost = await import("../../pkg/dist/sqlite.js");
const postgresHost = await import("../../pkg/dist/postgres.js");

const LIMITS = { tokens: { kind: "token bucket", rate: 100, period: 60_000, maxReserved: 100 } };
const CALLS = {
  limit: (limiter) => limiter.limit("tokens", { key: "ada" }),
  grant: (limiter) => limiter.limit("tokens", { key: "ada", count: 10, reserve: true, grant: true }),
  getValue: (limiter) => limiter.getValue("tokens", { key: "ada" }),
  reset: (limiter) => limiter.reset("tokens", { key: "ada" }),
};

/** Every call on `limiter` rejects with `code` and a message naming createTable. */
async function namesCreateTable(limiter, code) {
  for (const [call, make] of Object.entries(CALLS)) {
    await assert.rejects(make(limiter), (error) => {
      assert.equal(error.code, code, `${call}: the driver's code`);
      assert.match(error.message, /createTable\(db\)/, `${call}: ${error.message}`);
      return true;
    });
  }
}

describe("a table nobody created", () => {
  test("better-sqlite3: SQLITE_ERROR naming createTable, for every call", async () => {
    const db = new Database(":memory:");
    try {
      await namesCreateTable(new RateLimiter(sqliteHost.sqliteStore(db), LIMITS), "SQLITE_ERROR");
    } finally {
      db.close();
    }
  });

  test("PostgreSQL (PGlite): the driver's code naming createTable, for every call", async () => {
    const db = new PGlite();
    try {
      const limiter = new RateLimiter(postgresHost.postgresStore(db), LIMITS);
      for (const [call, make] of Object.entries(CALLS)) {
        await assert.rejects(make(limiter), (error) => {
          assert.match(error.code, /^42(883|P01)$/, `${call}: the driver's code (${error.code})`);
          assert.match(error.message, /createTable\(db\)/, `${call}: ${error.message}`);
          return true;
        });
      }
    } finally {
      await db.close();
    }
  });
});
