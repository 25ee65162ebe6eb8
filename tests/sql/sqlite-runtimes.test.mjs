// ratebound/sqlite on the SQLite drivers built into Deno and Bun (node:sqlite's DatabaseSync,
// bun:sqlite): tests/sql/sqlite-runtime.mjs runs in each, against the package in pkg/.
// Node 20 has no node:sqlite; Deno and Bun, which the project installs, both do.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { cpSync, copyFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { scratch } from "../hosts/workerd.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, "..", "..");
const CHILD_TIMEOUT_MS = 120_000;

function run(command, args, options) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** The last line of a child's output, as JSON. */
const answer = (stdout) => JSON.parse(stdout.trim().split("\n").at(-1));

test("node:sqlite in Deno: exact alone, commits and rolls back with the app, names createTable, and the bare control over-admits", { timeout: CHILD_TIMEOUT_MS }, async () => {
  const deno = join(repo, "tools", "deno", "node_modules", ".bin", "deno");
  const args = ["run", "--no-check", "--no-prompt", "--allow-read", "--config", join(here, "deno.json"), join(here, "sqlite-runtime.mjs")];
  const { code, stdout, stderr } = await run(deno, args, { env: { ...process.env, DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" } });
  assert.equal(code, 0, stderr);
  const { runtime, drivers } = answer(stdout);
  assert.equal(runtime, "deno");
  assert.deepEqual(Object.keys(drivers), ["node:sqlite"]);
  assert.ok(drivers["node:sqlite"].controlAdmitted > 3);
});

test("node:sqlite and bun:sqlite in Bun: the same scenario", { timeout: CHILD_TIMEOUT_MS }, async () => {
  const work = scratch("sqlite-bun");
  try {
    mkdirSync(join(work.dir, "node_modules"));
    // A copy, not a link: under the repository Bun would apply tsconfig.json's paths to pkg/'s own imports.
    cpSync(join(repo, "pkg"), join(work.dir, "node_modules", "ratebound"), { recursive: true });
    copyFileSync(join(here, "sqlite-runtime.mjs"), join(work.dir, "sqlite-runtime.mjs"));
    const { code, stdout, stderr } = await run(join(repo, "node_modules", ".bin", "bun"), ["sqlite-runtime.mjs"], { cwd: work.dir, env: { ...process.env, DO_NOT_TRACK: "1" } });
    assert.equal(code, 0, stderr);
    const { runtime, drivers } = answer(stdout);
    assert.equal(runtime, "bun");
    assert.deepEqual(Object.keys(drivers), ["node:sqlite", "bun:sqlite"]);
    for (const driver of Object.values(drivers)) assert.ok(driver.controlAdmitted > 3);
  } finally {
    work.remove();
  }
});
