// The real drivers' types (pg, PGlite, better-sqlite3) satisfy ratebound/postgres's and
// ratebound/sqlite's structural types: tsc on tests/sql/types against the built declarations.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { prismaClient } from "./prisma-client.mjs";

const repo = fileURLToPath(new URL("../../", import.meta.url));

test("pg's Client, PoolClient and Pool, PGlite and its transactions, better-sqlite3's Database, and Drizzle's, Kysely's and Prisma's databases and transactions type-check as stores", { timeout: 240_000 }, async () => {
  await prismaClient(); // orms.ts imports the generated Prisma client
  try {
    await promisify(execFile)(join(repo, "node_modules", ".bin", "tsc"), ["-p", join(repo, "tests", "sql", "types")], { cwd: repo, timeout: 120_000 });
  } catch (error) {
    assert.fail(`tsc -p tests/sql/types:\n${error.stdout}${error.stderr}`);
  }
});
