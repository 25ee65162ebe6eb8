// ratebound/deno-kv on the real Deno KV engine: the scenarios in Node through @deno/kv, then in
// real Deno (`deno test --unstable-kv`, with examples/deno-kv), then Node and Deno processes
// racing on one database file.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { openKv } from "@deno/kv";
import * as ratebound from "../../pkg/dist/node.js";
import * as kvLib from "../../pkg/dist/deno-kv.js";
import { COLLIDING_REFS, stateFor } from "./collisions.mjs";
import * as scenarios from "./deno-kv-scenarios.mjs";
import * as traffic from "./coalesce-traffic.mjs";
import { scratch } from "./workerd.mjs";

const here = fileURLToPath(new URL("./", import.meta.url));
const repo = fileURLToPath(new URL("../../", import.meta.url));
const DENO = join(repo, "tools", "deno", "node_modules", ".bin", "deno");
const DENO_ENV = { ...process.env, DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" };
const CHILD_TIMEOUT_MS = 120_000;

/** A fresh database file for one test, removed afterwards. */
async function withDatabase(run) {
  const work = scratch("deno-kv-node");
  const path = join(work.dir, "kv.sqlite");
  const open = () => openKv(path);
  const kv = await open();
  try {
    return await run({ open, kv, path });
  } finally {
    kv.close();
    work.remove();
  }
}

/**
 * Runs a command to completion within the timeout, in its own process group (killed whole on a
 * timeout); resolves with its exit code and output.
 */
function run(command, args, { cwd = repo, env = DENO_ENV } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.setEncoding("utf8").on("data", (chunk) => (output += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk) => (output += chunk));
    const timer = setTimeout(() => killGroup(child), CHILD_TIMEOUT_MS);
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? signal, output });
    });
  });
}

function killGroup(child) {
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    // already gone
  }
}

describe("in Node, through @deno/kv", () => {
  test("8 concurrent clients, 60 requests, one key: exactly the bound of 10 admitted, every commit checked", () =>
    withDatabase(async ({ open }) => {
      const seen = await scenarios.concurrentClients({ ratebound, kvLib, open, clients: 8, requests: 60, limit: "daily" });
      assert.deepEqual(seen.failed, []);
      assert.equal(seen.admitted, 10);
      assert.equal(seen.refused, 50);
      assert.deepEqual(seen.stored, { value: 0, ts: scenarios.NOW });
      assert.ok(seen.conflicts > 0, "the clients did race (commits lost and were retried)");
    }));

  test("8 concurrent clients, 25 requests under a bound of 40: all admitted and no update lost (15 left)", () =>
    withDatabase(async ({ open }) => {
      const seen = await scenarios.concurrentClients({ ratebound, kvLib, open, clients: 8, requests: 25, limit: "big" });
      assert.deepEqual(seen.failed, []);
      assert.equal(seen.admitted, 25);
      assert.deepEqual(seen.stored, { value: 15, ts: scenarios.NOW });
    }));

  test("the harness sees over-admission: plain get/set without checks admits more than 10", () =>
    withDatabase(async ({ open }) => {
      const seen = await scenarios.withoutTransaction({ ratebound, open, clients: 8, requests: 60, limit: "daily" });
      assert.ok(seen.admitted > 10, `admitted ${seen.admitted}`);
    }));

  test("a transaction whose body throws after the limit granted writes nothing", () =>
    withDatabase(async ({ kv }) => {
      assert.deepEqual(await scenarios.rolledBack({ ratebound, kvLib, kv }), { thrown: "the app failed after the limit granted", state: null, post: null });
    }));

  test("the app's own writes and mutations commit with the limit's, and a refusal commits none", () =>
    withDatabase(async ({ kv }) => {
      assert.deepEqual(await scenarios.withAppWrites({ ratebound, kvLib, kv }), {
        sent: [true, true, true, false],
        posts: ["post 1", "post 2", "post 3", null],
        count: 3,
      });
    }));

  test("calls in one transaction see each other's writes", () =>
    withDatabase(async ({ kv }) => {
      const seen = await scenarios.readYourWrites({ ratebound, kvLib, kv });
      assert.deepEqual(seen.first, { ok: true });
      assert.equal(seen.second.ok, false);
      assert.deepEqual(seen.seen, { value: 4, ts: scenarios.NOW });
      assert.equal(seen.batch.ok, false);
      assert.deepEqual(seen.stored, { value: 4, ts: scenarios.NOW });
      assert.equal(seen.perUser, null, "the refused batch wrote nothing");
      assert.ok(seen.raw instanceof Uint8Array && seen.raw.length === 16, "stored as 16 bytes: value and ts, little-endian float64");
    }));

  test("a transaction that loses every race fails closed after maxAttempts with KvConflictError, writing nothing", () =>
    withDatabase(async ({ kv, open }) => {
      const rival = await open();
      try {
        const seen = await scenarios.losesEveryRace({ ratebound, kvLib, kv, rival });
        assert.equal(seen.isKvConflictError, true);
        assert.equal(seen.code, "KV_CONFLICT");
        assert.match(seen.message, /lost the race to other writers 3 times in a row; nothing was written/);
        assert.deepEqual([seen.attempts, seen.errorAttempts, seen.conflicts], [3, 3, [1, 2, 3]]);
        assert.deepEqual(seen.stored, { value: 10, ts: scenarios.NOW }, "only the rival's write is there");
        assert.equal(seen.post, null);
      } finally {
        rival.close();
      }
    }));

  test("every (name, key, shard) triple is its own key, however its strings look", () =>
    withDatabase(async ({ kv }) => {
      const seen = await scenarios.keysNeverCollide({ ratebound, kvLib, kv, refs: COLLIDING_REFS, stateFor });
      assert.deepEqual(seen.states, COLLIDING_REFS.map((_, index) => stateFor(index)));
      assert.deepEqual(seen.taken, [true, true, false]);
    }));

  test("coalesced: 60 calls at once on one key through one kvStore admit exactly the bound of 10 in 2 commits, none lost, as 60 calls one at a time do", () =>
    withDatabase(async ({ kv }) => {
      const seen = await scenarios.coalescedCalls({ ratebound, kvLib, kv, calls: traffic.plainCalls(60, "ada") });
      assert.equal(traffic.admitted(seen.answers), 10);
      assert.deepEqual(seen.answers, seen.serial);
      assert.deepEqual([seen.commits, seen.lost, seen.conflicts], [2, 0, 0], "the first call's transaction, then one for the 59 that waited");
      assert.deepEqual(seen.stored, seen.serialStored);
      assert.ok(seen.stored.value >= 0 && seen.stored.value < 1, `left ${seen.stored.value} (the clock moved a second a call)`);
    }));

  for (const name of traffic.COALESCE_NAMES) {
    test(`coalesced, ${name}: 40 limits and checks of 1 to 3 tokens, reserving or not, with figures or not, answer exactly as one at a time, with no commit lost`, () =>
      withDatabase(async ({ kv }) => {
        const seen = await scenarios.coalescedCalls({ ratebound, kvLib, kv, calls: traffic.mixedCalls(40, "ada", name) });
        assert.deepEqual(seen.answers, seen.serial);
        const reserves = traffic.COALESCE_LIMITS[name].kind !== "sliding window";
        assert.ok(seen.answers.some((answer) => answer.ok === false), "refusals happened");
        assert.ok(!reserves || seen.answers.some((answer) => answer.retryAfter > 0 && answer.ok), "reservations happened");
        assert.deepEqual([seen.lost, seen.conflicts], [0, 0]);
        assert.ok(seen.commits <= 2, `${seen.commits} commits`);
        assert.deepEqual(seen.stored, seen.serialStored);
      }));
  }

  test("the same 60 calls, each through a kvStore of its own (nothing coalesces them), lose commits and retry (so the test above can fail)", () =>
    withDatabase(async ({ kv }) => {
      const seen = await scenarios.coalescedCalls({ ratebound, kvLib, kv, calls: traffic.plainCalls(60, "ada"), coalesce: false });
      assert.ok(seen.conflicts > 0 && seen.lost > 0, `conflicts ${seen.conflicts}, commits lost ${seen.lost}`);
      assert.ok(seen.commits > 10, `${seen.commits} commits`);
      assert.equal(traffic.admitted(seen.answers), 10, "the host's checks still keep the bound");
    }));

  test("maxAttempts must be a whole number of at least 1", () =>
    withDatabase(async ({ kv }) => {
      await assert.rejects(kvLib.kvTransaction(kv, () => 1, { maxAttempts: 0 }), /maxAttempts must be an integer >= 1 \(got 0\)/);
    }));
});

describe("in real Deno", () => {
  // Type-checking of examples/deno-kv against Deno's own types is in types.test.mjs (here the
  // package's JavaScript is imported by path, so Deno has no .d.ts to check it against).
  const denoTest = (files, permissions) =>
    run(DENO, ["test", "--unstable-kv", "--no-check", "--no-prompt", ...permissions, "--config", join(here, "deno", "deno.json"), ...files]);

  test("the Deno KV scenarios pass in Deno (Deno.openKv --unstable-kv)", { timeout: CHILD_TIMEOUT_MS }, async () => {
    const { code, output } = await denoTest([join(here, "deno", "deno_kv_spec.mjs")], ["--allow-read", "--allow-write"]);
    assert.equal(code, 0, output);
    assert.match(output, /ok \| 13 passed \| 0 failed/, output);
  });

  test("examples/deno-kv serves, limits and stores posts in Deno", { timeout: CHILD_TIMEOUT_MS }, async () => {
    const { code, output } = await denoTest([join(here, "deno", "example_spec.mjs")], ["--allow-read", "--allow-write", "--allow-net=127.0.0.1"]);
    assert.equal(code, 0, output);
    assert.match(output, /ok \| 3 passed \| 0 failed/, output);
  });
});

describe("Node and Deno processes on one database file", () => {
  /** Starts a client process and resolves once it is ready for "go". */
  async function client(command, args) {
    const child = spawn(command, args, { cwd: repo, env: DENO_ENV, detached: true, stdio: ["pipe", "pipe", "pipe"] });
    let errors = "";
    child.stderr.setEncoding("utf8").on("data", (chunk) => (errors += chunk));
    const lines = createInterface({ input: child.stdout });
    const output = [];
    const ready = new Promise((resolve, reject) => {
      lines.on("line", (line) => (line === "ready" ? resolve() : output.push(line)));
      child.on("exit", (code) => reject(new Error(`client exited with ${code} before it was ready: ${errors}`)));
    });
    const done = once(child, "exit").then(([code]) => {
      if (code !== 0) throw new Error(`client exited with ${code}: ${errors}`);
      return JSON.parse(output.at(-1));
    });
    done.catch(() => {});
    return { child, ready, done };
  }

  test("2 Node and 2 Deno processes, 15 requests each at once on one key: exactly the bound of 10 admitted", { timeout: CHILD_TIMEOUT_MS }, async () => {
    const work = scratch("deno-kv-processes");
    const path = join(work.dir, "kv.sqlite");
    const script = join(here, "kv-client.mjs");
    const denoArgs = ["run", "--unstable-kv", "--no-check", "--no-prompt", "--allow-read", "--allow-write", "--config", join(here, "deno", "deno.json"), script, path, "15"];
    const clients = [];
    const timer = setTimeout(() => clients.forEach(({ child }) => killGroup(child)), CHILD_TIMEOUT_MS - 5_000);
    try {
      // Create the database first, so that no client races to create it.
      (await openKv(path)).close();
      clients.push(await client(process.execPath, [script, path, "15"]), await client(process.execPath, [script, path, "15"]));
      clients.push(await client(DENO, denoArgs), await client(DENO, denoArgs));
      await Promise.all(clients.map(({ ready }) => ready));
      for (const { child } of clients) child.stdin.end("go\n");
      const seen = await Promise.all(clients.map(({ done }) => done));
      assert.deepEqual(seen.map(({ runtime }) => runtime), ["node", "node", "deno", "deno"]);
      assert.deepEqual(seen.flatMap(({ failed }) => failed), []);
      assert.equal(seen.reduce((sum, { admitted }) => sum + admitted, 0), 10);
      assert.equal(seen.reduce((sum, { refused }) => sum + refused, 0), 50);
      const kv = await openKv(path);
      try {
        assert.deepEqual(await scenarios.storedState(kvLib, kv, { name: "daily", key: "ada", shard: 0 }), { value: 0, ts: scenarios.NOW });
      } finally {
        kv.close();
      }
    } finally {
      clearTimeout(timer);
      clients.forEach(({ child }) => killGroup(child));
      work.remove();
    }
  });
});
