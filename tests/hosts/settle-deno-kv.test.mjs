// Settle on the real Deno KV engine: the scenarios of tests/settle/scenarios.mjs through kvStore
// (each settle one checked atomic commit) and kvTransaction (in the app's transaction), in Node
// through @deno/kv, then in real Deno (tests/hosts/deno/settle_spec.mjs). Concurrent settles of one
// grant on separate handles refund once; through kvStore's bare read and write, more than once.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { openKv } from "@deno/kv";
import * as ratebound from "../../pkg/dist/node.js";
import * as kvLib from "../../pkg/dist/deno-kv.js";
import { SCENARIOS, concurrentSettlesWithoutTransaction } from "../settle/scenarios.mjs";
import { kvHarnesses } from "./settle-deno-kv-harness.mjs";
import { scratch } from "./workerd.mjs";

const here = fileURLToPath(new URL("./", import.meta.url));
const repo = fileURLToPath(new URL("../../", import.meta.url));
const DENO = join(repo, "tools", "deno", "node_modules", ".bin", "deno");

describe("settle on Deno KV in Node, through @deno/kv", () => {
  for (const kind of ["token bucket", "fixed window"]) {
    for (const flavour of ["kvStore", "kvTransaction"]) {
      describe(`${flavour}, ${kind}`, () => {
        const scenarios = { ...SCENARIOS, "the same concurrent settles through kvStore's bare read and write refund more than once": concurrentSettlesWithoutTransaction };
        for (const [name, scenario] of Object.entries(scenarios)) {
          test(name, async () => {
            const work = scratch("settle-kv");
            const harnesses = kvHarnesses({ ratebound, kvLib, kind, open: () => openKv(join(work.dir, "kv.sqlite")) });
            try {
              await scenario(harnesses[flavour]);
            } finally {
              harnesses[flavour].close();
              work.remove();
            }
          });
        }
      });
    }
  }
});

test("settle on Deno KV in real Deno: the same scenarios pass (Deno.openKv --unstable-kv)", { timeout: 120_000 }, async () => {
  const args = ["test", "--unstable-kv", "--no-check", "--no-prompt", "--allow-read", "--allow-write", "--config", join(here, "deno", "deno.json"), join(here, "deno", "settle_spec.mjs")];
  const { code, output } = await new Promise((resolve, reject) => {
    const child = spawn(DENO, args, { cwd: repo, env: { ...process.env, DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" }, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    const timer = setTimeout(() => child.kill("SIGKILL"), 110_000);
    child.once("error", reject);
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
  assert.equal(code, 0, output);
  assert.match(output, /ok \| 24 passed \| 0 failed/, output);
});
