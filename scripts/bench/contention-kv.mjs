// Contention on Deno KV: one global limit through ratebound/deno-kv on the Deno KV engine itself
// (denokv's SQLite backend, through @deno/kv in Node) on a scratch file, for each shard count.
// Each request is one `kvTransaction` around `limit("global")`; the package retries a lost commit
// with jittered backoff, then fails closed ("gave up"). The requests share `clients` database
// connections (default 1: one process serving many concurrent requests, as a Deno server does).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openKv } from "@deno/kv";
import { interleaved, offerLoad } from "./contention-load.mjs";

/** One run: `shards` shards, the fixed offered load, a fresh database. */
async function measure({ RateLimiter, kvTransaction }, { offeredPerSecond, durationMs, limitPerSecond, clientCount, shards }) {
  const dir = mkdtempSync(join(tmpdir(), "ratebound-bench-"));
  const clients = await Promise.all(Array.from({ length: clientCount }, () => openKv(join(dir, "kv.sqlite"))));
  const limits = { global: { kind: "token bucket", rate: limitPerSecond, period: 1000, shards } };
  const counts = { conflicts: 0, locked: 0 };
  const onConflict = (_attempt, reason) => (reason === "locked" ? counts.locked++ : counts.conflicts++);
  try {
    // A newer package may not take onConflict: then the run counts no conflicts.
    let options = { onConflict };
    const decide = (tx) => new RateLimiter(tx, limits).limit("global");
    try {
      await kvTransaction(clients[0], (tx) => new RateLimiter(tx, { probe: { kind: "token bucket", rate: 1, period: 1000 } }).check("probe"), options);
    } catch (error) {
      if (!/onConflict/.test(String(error?.message))) throw error;
      options = undefined;
    }
    const run = await offerLoad({
      offeredPerSecond,
      durationMs,
      limitPerSecond,
      counts,
      launch: (index) => kvTransaction(clients[index % clientCount], decide, options),
    });
    return {
      shards,
      ...run,
      counted: options !== undefined,
      conflictsPerAdmitted: run.conflicts / Math.max(1, run.admitted),
      lockedPerAdmitted: run.locked / Math.max(1, run.admitted),
    };
  } finally {
    for (const kv of clients) kv.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Every shard count at every offered load, `repeat` times interleaved.
 * @param {(specifier: string) => Promise<any>} load Imports from the project the package is installed in.
 * @returns The host's tables and how to print them.
 */
export async function kvContention(load, { offeredRates, durationMs, clientCount, shardCounts, limitPerSecond, repeat }) {
  const { RateLimiter } = await load("ratebound");
  const { kvTransaction } = await load("ratebound/deno-kv");
  const tables = await interleaved({
    offeredRates,
    shardCounts,
    repeat,
    fields: ["offered", "admitted", "bound", "refused", "failed", "conflictsPerAdmitted", "lockedPerAdmitted", "p50", "p99"],
    measure: (offeredPerSecond, shards) => measure({ RateLimiter, kvTransaction }, { offeredPerSecond, durationMs, limitPerSecond, clientCount, shards }),
  });
  return {
    host: "Deno KV",
    description: `ratebound/deno-kv on the Deno KV engine (@deno/kv in Node ${process.version}, a local SQLite file, ${clientCount} connection(s)); each request one \`kvTransaction\``,
    counters: [
      { label: "commit conflicts per admitted", field: "conflictsPerAdmitted" },
      { label: "file locked per admitted", field: "lockedPerAdmitted" },
    ],
    tables,
  };
}
