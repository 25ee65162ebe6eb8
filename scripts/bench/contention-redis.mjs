// Contention on Redis: one global limit through ratebound/redis on a real redis-server (started
// here on a free loopback port, no persistence, killed after), for each shard count. Every request
// is one `limit("global")` on its own store; requests share `clients` node-redis connections. A
// store that retries lost races (the optimistic path) counts them through `onConflict` when the
// package takes that option; a call it gives up on is a failed request ("gave up").
import { createClient } from "redis";
import { startRedis } from "../../tests/redis/servers.mjs";
import { interleaved, offerLoad, withCounter } from "./contention-load.mjs";

/** One run: a flushed database, `shards` shards, the fixed offered load. */
async function measure({ RateLimiter, redisStore }, clients, { offeredPerSecond, durationMs, limitPerSecond, shards }) {
  await clients[0].flushDb();
  const limits = { global: { kind: "token bucket", rate: limitPerSecond, period: 1000, shards } };
  const counts = { conflicts: 0 };
  const onConflict = () => counts.conflicts++;
  const { counted } = withCounter((count) => redisStore(clients[0], count ? { onConflict } : {}));
  const run = await offerLoad({
    offeredPerSecond,
    durationMs,
    limitPerSecond,
    counts,
    launch: (index) => new RateLimiter(redisStore(clients[index % clients.length], counted ? { onConflict } : {}), limits).limit("global"),
  });
  return { shards, ...run, counted, conflictsPerAdmitted: run.conflicts / Math.max(1, run.admitted) };
}

/**
 * Every shard count at every offered load on one redis-server, `repeat` times interleaved.
 * @param {(specifier: string) => Promise<any>} load Imports from the project the package is installed in.
 * @returns The host's tables and how to print them.
 */
export async function redisContention(load, { offeredRates, durationMs, clientCount, shardCounts, limitPerSecond, repeat }) {
  const { RateLimiter } = await load("ratebound");
  const { redisStore } = await load("ratebound/redis");
  const server = await startRedis();
  const clients = [];
  try {
    for (let index = 0; index < clientCount; index++) clients.push(await createClient({ url: server.url }).connect());
    const tables = await interleaved({
      offeredRates,
      shardCounts,
      repeat,
      fields: ["offered", "admitted", "bound", "refused", "failed", "conflictsPerAdmitted", "p50", "p99"],
      measure: (offeredPerSecond, shards) => measure({ RateLimiter, redisStore }, clients, { offeredPerSecond, durationMs, limitPerSecond, shards }),
    });
    return {
      host: "Redis",
      description: `ratebound/redis through node-redis, ${clientCount} connection(s), redis-server on loopback; each request one \`limit()\` on its own \`redisStore\``,
      counters: [{ label: "commit conflicts per admitted", field: "conflictsPerAdmitted" }],
      tables,
    };
  } finally {
    await Promise.all(clients.map((client) => client.quit().catch(() => {})));
    server.stop();
  }
}
