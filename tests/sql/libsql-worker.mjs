// One worker thread of tests/sql/libsql.test.mjs (not a test file itself): its own libSQL client
// on the shared database file, `calls` limits in a row on one key, every other one in the app's
// transaction (client.transaction("write")) with a post inserted when admitted, the rest alone.
import { parentPort, workerData } from "node:worker_threads";
import { createClient } from "@libsql/client";

const { RateLimiter } = await import("../../pkg/dist/node.js");
const { sqliteStore } = await import("../../pkg/dist/sqlite.js");
const { url, key, calls, limits, now } = workerData;
// Another thread's transaction holds the write lock for a moment: wait for it, up to 20 s.
const client = createClient({ url, timeout: 20_000 });
const limiter = new RateLimiter(sqliteStore(client), limits, { now: () => now });
let [admitted, posted] = [0, 0];
const errors = [];
for (let call = 0; call < calls; call++) {
  try {
    if (call % 2 === 1) {
      if ((await limiter.limit("burst", { key })).ok) admitted++;
      continue;
    }
    const tx = await client.transaction("write");
    try {
      const { ok } = await new RateLimiter(sqliteStore(tx), limits, { now: () => now }).limit("burst", { key });
      if (ok) await tx.execute({ sql: "INSERT INTO posts (author) VALUES (?)", args: [key] });
      await tx.commit();
      if (ok) [admitted, posted] = [admitted + 1, posted + 1];
    } finally {
      tx.close();
    }
  } catch (error) {
    errors.push(`${error.code}: ${error.message}`);
  }
}
client.close();
parentPort.postMessage({ admitted, posted, errors });
