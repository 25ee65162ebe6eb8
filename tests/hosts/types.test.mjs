// The examples type-check against the package's published .d.ts files (pkg/dist), with each
// host's real types: Convex's from the `convex` package, Deno's from `deno types`. And Deno's own
// Deno.Kv, like @deno/kv's Kv, satisfies ratebound/deno-kv's structural KvLike.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { scratch } from "./workerd.mjs";

const run = promisify(execFile);
const repo = fileURLToPath(new URL("../../", import.meta.url));
const tsc = join(repo, "node_modules", ".bin", "tsc");
const DENO = join(repo, "tools", "deno", "node_modules", ".bin", "deno");
const TIMEOUT_MS = 120_000;

/** Runs tsc on a project; fails the test with tsc's output when it reports anything. */
async function typeCheck(project) {
  try {
    await run(tsc, ["-p", project], { cwd: repo, timeout: TIMEOUT_MS });
  } catch (error) {
    assert.fail(`tsc -p ${project}:\n${error.stdout}${error.stderr}`);
  }
}

test("examples/convex type-checks: names of limits, ctx.db of queries and mutations", { timeout: TIMEOUT_MS }, () =>
  typeCheck(join(repo, "examples", "convex", "convex")));

test("examples/cloudflare type-checks", { timeout: TIMEOUT_MS }, () => typeCheck(join(repo, "examples", "cloudflare")));

test("examples/deno-kv type-checks with Deno's types, and Deno.Kv and @deno/kv's Kv satisfy KvLike", { timeout: TIMEOUT_MS }, async () => {
  const work = scratch("types-deno");
  try {
    // Deno's declarations, minus the triple-slash references to its own libs (tsc does not have them).
    const { stdout } = await run(DENO, ["types"], { env: { ...process.env, DENO_NO_UPDATE_CHECK: "1" }, maxBuffer: 64 << 20, timeout: TIMEOUT_MS });
    writeFileSync(join(work.dir, "deno.d.ts"), stdout.replace(/^\/\/\/ <reference .*$/gm, ""));
    writeFileSync(
      join(work.dir, "compat.ts"),
      readFileSync(join(repo, "tests", "hosts", "deno", "kv-compat.ts"), "utf8"),
    );
    const dist = join(repo, "pkg", "dist");
    writeFileSync(
      join(work.dir, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "ES2022",
          module: "ESNext",
          moduleResolution: "Bundler",
          lib: ["ESNext", "DOM", "DOM.Iterable"],
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: [],
          paths: {
            ratebound: [join(dist, "index.d.ts")],
            "ratebound/deno-kv": [join(dist, "deno-kv.d.ts")],
            "@deno/kv": [join(repo, "node_modules", "@deno", "kv", "esm", "npm.d.ts")],
          },
        },
        files: [join(work.dir, "deno.d.ts"), join(repo, "examples", "deno-kv", "main.ts"), join(work.dir, "compat.ts")],
      }),
    );
    await typeCheck(work.dir);
  } finally {
    work.remove();
  }
});
