// Settle on better-sqlite3 (tests/settle/scenarios.mjs), on a database file: each settle is one
// transaction (BEGIN IMMEDIATE), and inside the app's transaction a savepoint that rolls back with
// it. The concurrent settles run in worker threads, a connection each: exactly one refunds, the
// rest are GRANT_SETTLED; the same threads through the store's bare read and write refund more
// than once. (One thread's connections never interleave: better-sqlite3 is synchronous.) A grant
// whose charge rolled back with the app's transaction refunds nothing (issue 24 item 1).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import Database from "better-sqlite3";
import { badActualWritesNothing, calendarQuota, llmFlow, serialisedSettle, settleLimits } from "../settle/scenarios.mjs";

const { RateLimiter } = await import("../../pkg/dist/node.js");
const { sqliteStore, createTable } = await import("../../pkg/dist/sqlite.js");
const NOW = 1_700_000_000_000;
const DAY = 86_400_000;

describe("settle on better-sqlite3", () => {
  let dir;
  let path;
  const connections = [];
  const connection = () => {
    const db = new Database(path, { timeout: 5_000 });
    connections.push(db);
    return db;
  };
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "ratebound-settle-sqlite-"));
    path = join(dir, "app.db");
    const db = connection();
    db.pragma("journal_mode = WAL");
    await createTable(db);
  });
  after(() => {
    for (const db of connections) if (db.open) db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** `n` threads settle `data` at once; what each got. */
  async function threads(data, limits, guarded, n = 4) {
    const workers = Array.from({ length: n }, () => new Worker(new URL("./settle-sqlite-worker.mjs", import.meta.url), { workerData: { path, data, limits, now: NOW, guarded } }));
    const message = (worker) =>
      new Promise((resolve, reject) => {
        worker.once("message", resolve);
        worker.once("error", reject);
      });
    let outcomes;
    try {
      // Every thread has loaded ratebound and opened its connection before any settles.
      await Promise.all(workers.map(message));
      const answers = workers.map(message);
      for (const worker of workers) worker.postMessage("go");
      outcomes = await Promise.all(answers);
    } finally {
      await Promise.all(workers.map((worker) => worker.terminate()));
    }
    const won = outcomes.filter((outcome) => outcome.settled);
    return { won, codes: outcomes.filter((outcome) => outcome.code).map((outcome) => outcome.code), refunded: won.reduce((sum, { settled }) => sum + settled.refunded, 0) };
  }

  for (const kind of ["token bucket", "fixed window"]) {
    describe(kind, () => {
      const clock = { now: NOW };
      const harness = { kind, clock, connect: (limits) => new RateLimiter(sqliteStore(connection()), limits, { now: () => clock.now }) };
      const limits = settleLimits(kind, DAY);
      /** A grant of 300 with 500 taken after it: its data, and a limiter to look with. */
      async function grantToRace(key) {
        const limiter = new RateLimiter(sqliteStore(connection()), limits, { now: () => NOW });
        const granted = await limiter.limit("llm", { key, count: 300, grant: true });
        await limiter.limit("llm", { key, count: 500 });
        return { limiter, data: JSON.parse(JSON.stringify(granted.grant.data)) };
      }

      test("an LLM flow: estimates settled below and above (debt bounded by maxReserved), a cancel, and a second settle refused", () => llmFlow(harness));
      test("a grant's data through JSON settles on another connection, a sharded one on its own shards", () => serialisedSettle(harness));
      test("a negative, NaN or infinite actual is INVALID_REQUEST and writes nothing", () => badActualWritesNothing(harness));
      test("a calendar quota (a year from an anchor): the quota, a wait to the anniversary, a settle's refund, getValue", () => calendarQuota(harness));

      test("four threads settle one grant at once, a connection each: exactly one refunds 300, the rest are GRANT_SETTLED", async () => {
        const { limiter, data } = await grantToRace(`threads-${kind}`);
        const seen = await threads(data, limits, true);
        assert.deepEqual([seen.won.length, seen.codes, seen.refunded], [1, ["GRANT_SETTLED", "GRANT_SETTLED", "GRANT_SETTLED"], 300]);
        assert.equal((await limiter.getValue("llm", { key: `threads-${kind}` })).value, 500);
      });

      test("the same threads through the store's bare read and write, without its transaction, refund more than once", async () => {
        const { data } = await grantToRace(`bare-${kind}`);
        const seen = await threads(data, limits, false);
        assert.ok(seen.won.length > 1 && seen.refunded > 300, `won ${seen.won.length}, refunded ${seen.refunded}`);
      });

      test("a grant whose charge rolled back with the app's transaction refunds nothing, by cancel() or settle(data, 0) (issue 24 item 1)", async () => {
        const key = `rolled-back-grant-${kind}`;
        const limiter = new RateLimiter(sqliteStore(connection()), limits, { now: () => NOW });
        // An earlier committed grant on the key, inside its refund window: what the old ledger let a rolled-back grant spend.
        const earlier = await limiter.limit("llm", { key, count: 300, grant: true });
        const db = connection();
        db.exec("BEGIN IMMEDIATE");
        const inside = new RateLimiter(sqliteStore(db), limits, { now: () => NOW });
        const rolledBack = [await inside.limit("llm", { key, count: 200, grant: true }), await inside.limit("llm", { key, count: 200, grant: true })];
        assert.deepEqual(rolledBack.map((granted) => granted.ok), [true, true]);
        db.exec("ROLLBACK");
        assert.equal((await limiter.getValue("llm", { key })).value, 700, "the rolled-back charges consumed nothing");
        assert.equal((await rolledBack[0].grant.cancel()).refunded, 0, "cancel() (through the app's connection, as README's catch block) refunds nothing");
        assert.equal((await limiter.settle(JSON.parse(JSON.stringify(rolledBack[1].grant.data)), 0)).refunded, 0, "settle(data, 0) refunds nothing");
        assert.equal((await limiter.getValue("llm", { key })).value, 700, "the state gained nothing");
        assert.equal((await earlier.grant.cancel()).refunded, 300, "the committed grant still refunds its own charge");
      });

      test("a settle inside the app's transaction rolls back with it, and the grant settles again after", async () => {
        const { limiter, data } = await grantToRace(`rollback-${kind}`);
        const db = connection();
        db.exec("BEGIN IMMEDIATE");
        assert.equal((await new RateLimiter(sqliteStore(db), limits, { now: () => NOW }).settle(data, 0)).refunded, 300);
        db.exec("ROLLBACK");
        assert.equal((await limiter.getValue("llm", { key: `rollback-${kind}` })).value, 200);
        assert.equal((await limiter.settle(data, 0)).refunded, 300);
      });
    });
  }
});
