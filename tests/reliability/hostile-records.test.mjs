// The library's own records out of every caller's reach, on every host that cannot decide next to
// its data (issue 24 items 1 and 2): the scenarios of tests/settle/scenarios.mjs (RECORD_SCENARIOS)
// on Deno KV (the real engine through @deno/kv, kvStore and kvTransaction), on D1 and on Durable
// Objects (both backends) in real workerd through Miniflare, and in real Convex functions
// (convex-test). A caller whose key is where the refund ledger or a grant's settled mark once lived
// (`ratebound:refunded:KEY`, `ratebound:settled:ID:KEY`) changes no answer of KEY's; grants with no
// key and with the key "" never share refunds; a grant whose charge rolled back (the app's
// transaction threw, or its commit failed) refunds nothing on cancel. First, on MemoryStore, the
// same scenarios fail on a store that keeps records at the old keys: they can see the defect.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { openKv } from "@deno/kv";
import * as ratebound from "../../pkg/dist/node.js";
import * as kvLib from "../../pkg/dist/deno-kv.js";
import { RECORD_SCENARIOS, callersNeverReachTheLedger, keylessAndEmptyKeyApart } from "../settle/scenarios.mjs";
import { DURABLE_OBJECTS } from "../settle/workerd-suite.mjs";
import { kvHarnesses } from "../hosts/settle-deno-kv-harness.mjs";
import { bundleWorker, post, scratch, startMiniflare, workerOptions } from "../hosts/workerd.mjs";
import { Tally } from "./helpers.mjs";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const KINDS = ["token bucket", "fixed window"];
const tally = new Tally("hostile records (Deno KV, D1, Durable Objects, Convex)");
after(() => tally.flush());

/** The report's class of each scenario. */
const CLASS = {
  callersNeverReachTheLedger: "callers' keys at the old record keys",
  keylessAndEmptyKeyApart: 'keyless grants beside "" grants',
  rolledBackGrantRefundsNothing: "cancels of rolled-back grants",
};
const classOf = (sentence) => CLASS[RECORD_SCENARIOS[sentence].name];
/** Counts a scenario that passed on a host: its class, and one input of the suite. */
const passed = (sentence) => {
  tally.add(classOf(sentence));
  tally.add("inputs tried");
};

/** A harness over one MemoryStore (every limiter on the same data), with a hand-moved clock. */
function memoryHarness(kind, wrap = (store) => store) {
  const store = wrap(new ratebound.MemoryStore());
  const clock = { now: 1_700_000_000_000 };
  return { kind, clock, connect: (limits) => new ratebound.RateLimiter(store, limits, { now: () => clock.now }) };
}

/**
 * A store that keeps the library's records where they lived before issue 24: a shard's refund
 * ledger at the key `ratebound:refunded:KEY` (no key and "" alike), a grant's record at
 * `ratebound:settled:SLOT:KEY`, both among the callers' states.
 */
function oldLayout(store) {
  const moved = (ref) => {
    if (ref.shard < 1024) return ref;
    const key = ref.key ?? "";
    return ref.shard < 2048 ? { name: ref.name, key: `ratebound:refunded:${key}`, shard: ref.shard - 1024 } : { name: ref.name, key: `ratebound:settled:${ref.shard}:${key}`, shard: 0 };
  };
  return { read: (ref, info) => store.read(moved(ref), info), write: (ref, state, info) => store.write(moved(ref), state, info) };
}

describe("on MemoryStore: the scenarios pass, and fail on a store that keeps records where callers reach them", () => {
  for (const kind of KINDS) {
    test(`${kind}: an intruder at the old ledger key, and keyless beside "" grants, change no answer`, async () => {
      await callersNeverReachTheLedger(memoryHarness(kind));
      await keylessAndEmptyKeyApart(memoryHarness(kind));
    });

    test(`${kind}: with the records at the old keys, both scenarios see the defect`, async () => {
      // The intruder's own state is the victim's ledger there: its 700 is refused, or the victim's answers change.
      await assert.rejects(callersNeverReachTheLedger(memoryHarness(kind, oldLayout)), /: got .*, expected /);
      await assert.rejects(keylessAndEmptyKeyApart(memoryHarness(kind, oldLayout)), /grants with no key beside grants with the key "": answer \d+/);
    });
  }
});

describe("on Deno KV, the real engine through @deno/kv", () => {
  for (const kind of KINDS) {
    for (const flavour of ["kvStore", "kvTransaction"]) {
      for (const [sentence, scenario] of Object.entries(RECORD_SCENARIOS)) {
        const ways = scenario.name === "rolledBackGrantRefundsNothing" ? ["body throws", "commit fails"] : [undefined];
        for (const way of ways) {
          test(`${flavour}, ${kind}: ${sentence}${way ? ` (the transaction's ${way === "body throws" ? "body throws after the grant" : "commit fails"})` : ""}`, async () => {
            const work = scratch("records-kv");
            const harnesses = kvHarnesses({ ratebound, kvLib, kind, open: () => openKv(join(work.dir, "kv.sqlite")) });
            const h = harnesses[flavour];
            if (way !== undefined) h.rollBack = h.rollBackBy(way);
            try {
              assert.notEqual(await scenario(h), undefined);
              passed(sentence);
            } finally {
              h.close();
              work.remove();
            }
          });
        }
      }
    }
  }
});

describe("on D1 and on Durable Objects (SQLite- and key-value-backed), in workerd (Miniflare)", () => {
  let work;
  let miniflare;
  before(async () => {
    work = scratch("records-workerd");
    const outdir = join(work.dir, "bundle");
    await bundleWorker(join(repo, "tests", "settle", "worker.mjs"), outdir);
    miniflare = await startMiniflare(workerOptions(outdir, { d1Databases: { DB: "ratebound-records" }, durableObjects: DURABLE_OBJECTS }));
    assert.deepEqual((await post(miniflare, "/", { setup: true })).body, { result: null });
  });
  after(async () => {
    await miniflare?.dispose();
    work?.remove();
  });
  const runs = KINDS.flatMap((kind) => [
    { title: `D1, ${kind}`, host: "d1", kind },
    { title: `Durable Object (SQLite), ${kind}`, host: "do", kind, backend: "sqlite" },
    { title: `Durable Object (key-value), ${kind}`, host: "do", kind, backend: "kv" },
  ]);
  for (const run of runs) {
    for (const [sentence, scenario] of Object.entries(RECORD_SCENARIOS)) {
      // A Durable Object decides each request alone and has no transaction of the app's to roll back.
      if (run.host === "do" && scenario.name === "rolledBackGrantRefundsNothing") continue;
      test(`${run.title}: ${sentence}`, async () => {
        const { status, body } = await post(miniflare, "/", { ...run, scenario: scenario.name });
        assert.equal(status, 200);
        assert.equal(body.error, undefined, body.error && `${body.error.message}\n${body.error.stack}`);
        assert.notEqual(body.result, null);
        passed(sentence);
      });
    }
  }
});

test("in Convex mutations (convex-test): every records scenario, both algorithms", { timeout: 180_000 }, async () => {
  const work = scratch("records-convex");
  try {
    const report = join(work.dir, "vitest.json");
    const { code, output } = await new Promise((resolve, reject) => {
      const child = spawn(join(repo, "node_modules", ".bin", "vitest"), ["run", "--config", "tests/reliability/convex/vitest.config.mjs", "--reporter=json", `--outputFile=${report}`], {
        cwd: repo,
        env: { ...process.env, NO_COLOR: "1" },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let output = "";
      child.stdout.on("data", (chunk) => (output += chunk));
      child.stderr.on("data", (chunk) => (output += chunk));
      child.once("error", reject);
      child.once("close", (code) => resolve({ code, output }));
    });
    assert.equal(code, 0, output);
    const results = JSON.parse(readFileSync(report, "utf8")).testResults.flatMap((file) => file.assertionResults);
    assert.equal(results.length, KINDS.length * Object.keys(RECORD_SCENARIOS).length);
    for (const result of results) {
      assert.equal(result.status, "passed", result.fullName);
      passed(result.title);
    }
  } finally {
    work.remove();
  }
});
