// One worker thread of the better-sqlite3 suite (not a test file itself): its own connection to
// the shared database file, `calls` limits in a row on one key, each a transaction of its own
// (BEGIN IMMEDIATE … COMMIT): every other call in the app's transaction with a post inserted
// when admitted, the rest alone (the store opens the transaction itself). With `guarded: false`
// the same calls go through the store's bare read and write, without any transaction, each read
// answering a millisecond late.
import { parentPort, workerData } from "node:worker_threads";
import Database from "better-sqlite3";
import { bareStore } from "../settle/scenarios.mjs";

const { RateLimiter } = await import("../../pkg/dist/node.js");
const { sqliteStore } = await import("../../pkg/dist/sqlite.js");
const { path, key, calls, limits, now, guarded } = workerData;
const db = new Database(path, { timeout: 20_000 });
const store = sqliteStore(db);
// Bare, a read answers a millisecond late (a slow disk, a busy thread): a synchronous read and
// write finish in microseconds, so without the wait another thread rarely lands between them, and
// the control could pass by luck.
const limiter = new RateLimiter(guarded ? store : bareStore(store, 1), limits, { now: () => now });
const insert = db.prepare("INSERT INTO posts (author) VALUES (?)");
let admitted = 0;
let posted = 0;
const errors = [];
for (let call = 0; call < calls; call++) {
  if (!guarded || call % 2 === 1) {
    const outcome = await limiter.limit("burst", { key }).catch((error) => error);
    if (outcome instanceof Error) errors.push(`${outcome.code}: ${outcome.message}`);
    else if (outcome.ok) admitted++;
    continue;
  }
  try {
    db.exec("BEGIN IMMEDIATE");
    const { ok } = await limiter.limit("burst", { key });
    if (ok) insert.run(key);
    db.exec("COMMIT");
    if (ok) admitted++;
    if (ok) posted++;
  } catch (error) {
    if (db.inTransaction) db.exec("ROLLBACK");
    errors.push(`${error.code}: ${error.message}`);
  }
}
db.close();
parentPort.postMessage({ admitted, posted, errors });
