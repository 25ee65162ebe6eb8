// One worker thread of the better-sqlite3 lease race (not a test file itself): its own connection
// to the shared database file; when told "go" (after every thread said it is ready) it takes a
// lease through the store's transaction (BEGIN IMMEDIATE) or, with `guarded: false`, through its
// bare read and write with reads that wait, and posts whether it got one.
import { parentPort, workerData } from "node:worker_threads";
import Database from "better-sqlite3";
import { bareStore } from "../settle/scenarios.mjs";

const { RateLimiter } = await import("../../pkg/dist/node.js");
const { sqliteStore } = await import("../../pkg/dist/sqlite.js");
const { path, limits, key, now, guarded } = workerData;
const db = new Database(path, { timeout: 20_000 });
const store = sqliteStore(db);
const limiter = new RateLimiter(guarded ? store : bareStore(store), limits, { now: () => now });
const go = new Promise((resolve) => parentPort.once("message", resolve));
parentPort.postMessage({ ready: true });
await go;
const outcome = await limiter.limit("jobs", { key }).then(
  (answer) => ({ ok: answer.ok }),
  (error) => ({ code: error.code ?? String(error) }),
);
db.close();
parentPort.postMessage(outcome);
