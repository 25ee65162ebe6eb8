// One worker thread of the better-sqlite3 lease race (not a test file itself): its own connection
// to the shared database file; when told "go" (after every thread said it is ready) it takes a
// lease through the store's transaction (BEGIN IMMEDIATE) or, with `guarded: false`, through its
// bare read and write with reads that wait, and posts whether it got one. With `app: true` the
// take is part of an app transaction (BEGIN IMMEDIATE, the lease, the app's row, COMMIT when
// granted, else ROLLBACK): guarded, the lease is taken inside it (the store's savepoint); not
// guarded, before it, through the bare store.
import { parentPort, workerData } from "node:worker_threads";
import Database from "better-sqlite3";
import { bareStore } from "../settle/scenarios.mjs";

const { RateLimiter } = await import("../../pkg/dist/node.js");
const { sqliteStore } = await import("../../pkg/dist/sqlite.js");
const { path, limits, key, now, guarded, app } = workerData;
const db = new Database(path, { timeout: 20_000 });
const store = sqliteStore(db);
const limiter = new RateLimiter(guarded ? store : bareStore(store), limits, { now: () => now });
const go = new Promise((resolve) => parentPort.once("message", resolve));
parentPort.postMessage({ ready: true });
await go;

/** The app's transaction around (guarded) or after (not) the take; its row holds the lease's data. */
async function inAppTransaction() {
  const before = guarded ? undefined : await limiter.limit("jobs", { key });
  db.exec("BEGIN IMMEDIATE");
  try {
    const answer = before ?? (await limiter.limit("jobs", { key }));
    db.prepare("INSERT INTO jobs (key, lease) VALUES (?, ?)").run(key, JSON.stringify(answer.ok ? answer.lease : null));
    db.exec(answer.ok ? "COMMIT" : "ROLLBACK");
    return answer;
  } catch (error) {
    if (db.inTransaction) db.exec("ROLLBACK");
    throw error;
  }
}

const outcome = await (app ? inAppTransaction() : limiter.limit("jobs", { key })).then(
  (answer) => ({ ok: answer.ok }),
  (error) => ({ code: error.code ?? String(error) }),
);
db.close();
parentPort.postMessage(outcome);
