// Runs the Convex outage suite (tests/outage/convex/outage.spec.mjs: convex-test needs vitest) as
// part of `node --test tests/outage/`, and fails when any of its tests does.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("../../", import.meta.url));

test("Convex host outages in convex-test (vitest, tests/outage/convex/)", { timeout: 180_000 }, async () => {
  const { code, output } = await new Promise((resolve, reject) => {
    const child = spawn(`${repo}node_modules/.bin/vitest`, ["run", "--config", "tests/outage/convex/vitest.config.mjs"], {
      cwd: repo,
      env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, output }));
  });
  assert.equal(code, 0, output);
  assert.match(output, /Tests\s+9 passed \(9\)/, output);
});
