// ratebound/deno-kv in real Deno: Deno.openKv (--unstable-kv) on a SQLite file, several handles
// (separate connections) as concurrent clients. Run by tests/hosts/deno-kv.test.mjs with
// `deno test --unstable-kv --config tests/hosts/deno/deno.json`.
import assert from "node:assert/strict";
import * as ratebound from "ratebound";
import * as kvLib from "ratebound/deno-kv";
import { COLLIDING_REFS, stateFor } from "../collisions.mjs";
import * as scenarios from "../deno-kv-scenarios.mjs";
import * as traffic from "../coalesce-traffic.mjs";

/** A fresh database file for one test, removed afterwards. */
async function withDatabase(run) {
  const dir = await Deno.makeTempDir({ prefix: "ratebound-deno-kv-" });
  const path = `${dir}/kv.sqlite`;
  const open = () => Deno.openKv(path);
  const kv = await open();
  try {
    return await run({ open, kv, path });
  } finally {
    kv.close();
    await Deno.remove(dir, { recursive: true });
  }
}

const test = (name, run) => Deno.test({ name, sanitizeResources: true, sanitizeOps: true, fn: () => withDatabase(run) });

test("8 concurrent clients, 60 requests, one key: exactly the bound of 10 admitted, every commit checked", async ({ open }) => {
  const seen = await scenarios.concurrentClients({ ratebound, kvLib, open, clients: 8, requests: 60, limit: "daily" });
  assert.deepEqual(seen.failed, []);
  assert.equal(seen.admitted, 10);
  assert.equal(seen.refused, 50);
  assert.deepEqual(seen.stored, { value: 0, ts: scenarios.NOW });
  assert.ok(seen.conflicts > 0, "the clients did race (commits lost and were retried)");
});

test("8 concurrent clients, 25 requests under a bound of 40: all admitted and no update lost (15 left)", async ({ open }) => {
  const seen = await scenarios.concurrentClients({ ratebound, kvLib, open, clients: 8, requests: 25, limit: "big" });
  assert.deepEqual(seen.failed, []);
  assert.equal(seen.admitted, 25);
  assert.deepEqual(seen.stored, { value: 15, ts: scenarios.NOW });
});

test("the harness sees over-admission: plain get/set without checks admits more than 10", async ({ open }) => {
  const seen = await scenarios.withoutTransaction({ ratebound, open, clients: 8, requests: 60, limit: "daily" });
  assert.ok(seen.admitted > 10, `admitted ${seen.admitted}`);
});

test("a transaction whose body throws after the limit granted writes nothing", async ({ kv }) => {
  assert.deepEqual(await scenarios.rolledBack({ ratebound, kvLib, kv }), { thrown: "the app failed after the limit granted", state: null, post: null });
});

test("the app's own writes and mutations commit with the limit's, and a refusal commits none", async ({ kv }) => {
  assert.deepEqual(await scenarios.withAppWrites({ ratebound, kvLib, kv }), {
    sent: [true, true, true, false],
    posts: ["post 1", "post 2", "post 3", null],
    count: 3,
  });
});

test("calls in one transaction see each other's writes", async ({ kv }) => {
  const seen = await scenarios.readYourWrites({ ratebound, kvLib, kv });
  assert.deepEqual(seen.first, { ok: true });
  assert.equal(seen.second.ok, false);
  assert.deepEqual(seen.seen, { value: 4, ts: scenarios.NOW });
  assert.equal(seen.batch.ok, false);
  assert.deepEqual(seen.stored, { value: 4, ts: scenarios.NOW });
  assert.equal(seen.perUser, null, "the refused batch wrote nothing");
      assert.ok(seen.raw instanceof Uint8Array && seen.raw.length === 16, "stored as 16 bytes: value and ts, little-endian float64");
});

test("a transaction that loses every race fails closed after maxAttempts with KvConflictError, writing nothing", async ({ kv, open }) => {
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
});

test("every (name, key, shard) triple is its own key, however its strings look", async ({ kv }) => {
  const seen = await scenarios.keysNeverCollide({ ratebound, kvLib, kv, refs: COLLIDING_REFS, stateFor });
  assert.deepEqual(seen.states, COLLIDING_REFS.map((_, index) => stateFor(index)));
  assert.deepEqual(seen.taken, [true, true, false]);
});

test("coalesced: 60 calls at once on one key through one kvStore admit exactly the bound of 10 in 2 commits, none lost, as 60 calls one at a time do", async ({ kv }) => {
  const seen = await scenarios.coalescedCalls({ ratebound, kvLib, kv, calls: traffic.plainCalls(60, "ada") });
  assert.equal(traffic.admitted(seen.answers), 10);
  assert.deepEqual(seen.answers, seen.serial);
  assert.deepEqual([seen.commits, seen.lost, seen.conflicts], [2, 0, 0], "the first call's transaction, then one for the 59 that waited");
  assert.deepEqual(seen.stored, seen.serialStored);
});

for (const name of traffic.COALESCE_NAMES) {
  test(`coalesced, ${name}: 40 limits and checks of 1 to 3 tokens answer exactly as one at a time, with no commit lost`, async ({ kv }) => {
    const seen = await scenarios.coalescedCalls({ ratebound, kvLib, kv, calls: traffic.mixedCalls(40, "ada", name) });
    assert.deepEqual(seen.answers, seen.serial);
    assert.deepEqual([seen.lost, seen.conflicts], [0, 0]);
    assert.ok(seen.commits <= 2, `${seen.commits} commits`);
    assert.deepEqual(seen.stored, seen.serialStored);
  });
}

test("the same 60 calls, each through a kvStore of its own (nothing coalesces them), lose commits and retry", async ({ kv }) => {
  const seen = await scenarios.coalescedCalls({ ratebound, kvLib, kv, calls: traffic.plainCalls(60, "ada"), coalesce: false });
  assert.ok(seen.conflicts > 0 && seen.lost > 0, `conflicts ${seen.conflicts}, commits lost ${seen.lost}`);
  assert.equal(traffic.admitted(seen.answers), 10);
});
