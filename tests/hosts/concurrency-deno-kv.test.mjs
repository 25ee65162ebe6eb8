// Concurrency limits with leases on the real Deno KV engine: the scenarios of
// tests/concurrency/scenarios.mjs through kvStore (each take, release and extend one checked atomic
// commit) and kvTransaction (the take in the app's transaction, released later through
// limiter.lease(data)), every limiter on a handle of its own on one database file, in Node through
// @deno/kv, then in real Deno (tests/hosts/deno/concurrency_spec.mjs). Concurrent takes on separate
// handles grant exactly max; through kvStore's bare read and write, more.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { openKv } from "@deno/kv";
import * as ratebound from "../../pkg/dist/node.js";
import * as kvLib from "../../pkg/dist/deno-kv.js";
import { SCENARIOS, checkAndReset, exactOnSixtyFourSlots, overAdmitsWithoutTransaction } from "../concurrency/scenarios.mjs";
import { kvHarnesses, leaseInTheAppsTransaction, scenariosOf } from "./concurrency-deno-kv-harness.mjs";
import { scratch } from "./workerd.mjs";

const here = fileURLToPath(new URL("./", import.meta.url));
const repo = fileURLToPath(new URL("../../", import.meta.url));
const DENO = join(repo, "tools", "deno", "node_modules", ".bin", "deno");

describe("concurrency limits on Deno KV in Node, through @deno/kv", () => {
  for (const flavour of ["kvStore", "kvTransaction"]) {
    describe(flavour, () => {
      // The atomic commit of @deno/kv takes at most 10 checks: a take checks the slots it writes, or the guard (ts/stores/deno-kv-slots.ts).
      const scenarios = {
        ...scenariosOf(SCENARIOS, overAdmitsWithoutTransaction, flavour, { manyChecks: true }),
        // check, reset and the 64-slot race once, through kvStore (the app's transaction takes the same road).
        ...(flavour === "kvStore"
          ? {
              checkAndReset,
              "on 64 slots, 70 takes of one slot and two of 12 at once hold exactly 64, each slot once": (h) => exactOnSixtyFourSlots(h, 70, [12, 12]),
              "on 64 slots, the same takes through kvStore's bare read and write over-admit": (h) => overAdmitsWithoutTransaction(h, 70, 64),
            }
          : {}),
      };
      for (const [name, scenario] of Object.entries(scenarios)) {
        test(name, async () => {
          const work = scratch("concurrency-kv");
          const harnesses = kvHarnesses({ ratebound, kvLib, open: () => openKv(join(work.dir, "kv.sqlite")) });
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
  test("kvTransaction: a lease beside the app's writes commits or rolls back with them, and is released later through limiter.lease(data)", async () => {
    const work = scratch("concurrency-kv");
    try {
      await leaseInTheAppsTransaction({ ratebound, kvLib, open: () => openKv(join(work.dir, "kv.sqlite")) });
    } finally {
      work.remove();
    }
  });
});

test("concurrency limits on Deno KV in real Deno: the same scenarios pass (Deno.openKv --unstable-kv)", { timeout: 120_000 }, async () => {
  const args = ["test", "--unstable-kv", "--no-check", "--no-prompt", "--allow-read", "--allow-write", "--config", join(here, "deno", "deno.json"), join(here, "deno", "concurrency_spec.mjs")];
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
  assert.match(output, /ok \| 20 passed \| 0 failed/, output);
});
