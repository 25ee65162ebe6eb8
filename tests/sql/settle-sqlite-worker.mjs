// One worker thread of the better-sqlite3 settle race (not a test file itself): its own
// connection to the shared database file; when told "go" (after every thread said it is ready) it settles the grant's data at 0, through
// the store's transaction (BEGIN IMMEDIATE) or, with `guarded: false`, through its bare read and
// write with reads that wait, and posts what it got.
import { parentPort, workerData } from "node:worker_threads";
import Database from "better-sqlite3";
import { bareStore } from "../settle/scenarios.mjs";

const { RateLimiter } = await import("../../pkg/dist/node.js");
const { sqliteStore } = await import("../../pkg/dist/sqlite.js");
const { path, data, limits, now, guarded } = workerData;
const db = new Database(path, { timeout: 20_000 });
const store = sqliteStore(db);
const limiter = new RateLimiter(guarded ? store : bareStore(store), limits, { now: () => now });
const go = new Promise((resolve) => parentPort.once("message", resolve));
parentPort.postMessage({ ready: true });
await go;
const outcome = await limiter.settle(data, 0).then(
  (settled) => ({ settled }),
  (error) => ({ code: error.code ?? String(error) }),
);
db.close();
parentPort.postMessage(outcome);
