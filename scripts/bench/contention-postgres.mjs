// Contention on a real PostgreSQL server: one global limit through ratebound/postgres on a pool,
// for each shard count. Each request is one call of its own on `postgresStore(pool)`. A store that
// retries when it finds a shard locked counts the retries through `onRetry` when the package takes
// that option; a call it gives up on is a failed request ("gave up"). The server is Debian's
// PostgreSQL, started by tests/sql/postgres-server.mjs in a temporary directory on a loopback port
// (fsync off: this measures locking, not the disk), and stopped after.
import pg from "pg";
import { startPostgres } from "../../tests/sql/postgres-server.mjs";
import { interleaved, offerLoad, withCounter } from "./contention-load.mjs";

/** Empties every table in the public schema: whatever `createTable` made. */
async function emptyTables(pool) {
  const { rows } = await pool.query("SELECT quote_ident(tablename) AS name FROM pg_tables WHERE schemaname = 'public'");
  if (rows.length) await pool.query(`TRUNCATE ${rows.map((row) => row.name).join(", ")}`);
}

/** One run: `shards` shards, the fixed offered load, emptied tables. */
async function measure({ RateLimiter, postgresStore }, pool, { offeredPerSecond, durationMs, limitPerSecond, shards }) {
  await emptyTables(pool);
  const counts = { retries: 0 };
  const { value: store, counted } = withCounter((count) => postgresStore(pool, count ? { onRetry: () => counts.retries++ } : {}));
  const limiter = new RateLimiter(store, { global: { kind: "token bucket", rate: limitPerSecond, period: 1000, shards } });
  const run = await offerLoad({ offeredPerSecond, durationMs, limitPerSecond, counts, launch: () => limiter.limit("global") });
  return { shards, ...run, counted, retriesPerAdmitted: run.retries / Math.max(1, run.admitted) };
}

/**
 * Every shard count at every offered load on one PostgreSQL server, `repeat` times interleaved.
 * @param {(specifier: string) => Promise<any>} load Imports from the project the package is installed in.
 * @returns The host's tables and how to print them.
 */
export async function postgresContention(load, { offeredRates, durationMs, connections, shardCounts, limitPerSecond, repeat }) {
  const { RateLimiter } = await load("ratebound");
  const { createTable, postgresStore } = await load("ratebound/postgres");
  const server = await startPostgres();
  const pool = new pg.Pool({ connectionString: server.connectionString, max: connections });
  pool.on("error", () => {});
  try {
    await createTable(pool);
    const tables = await interleaved({
      offeredRates,
      shardCounts,
      repeat,
      fields: ["offered", "admitted", "bound", "refused", "failed", "retriesPerAdmitted", "p50", "p99"],
      measure: (offeredPerSecond, shards) => measure({ RateLimiter, postgresStore }, pool, { offeredPerSecond, durationMs, limitPerSecond, shards }),
    });
    return {
      host: "PostgreSQL",
      description: `ratebound/postgres on a \`pg.Pool\` of ${connections} connections, PostgreSQL on loopback; each request one \`limit()\``,
      counters: [{ label: "lock retries per admitted", field: "retriesPerAdmitted" }],
      tables,
    };
  } finally {
    await pool.end();
    server.stop();
  }
}
