// How often one `limit()` on Redis and on PostgreSQL crosses the WebAssembly boundary, and how
// many round trips it makes to the server. Run by ./crossings.mjs in a fresh process with
// ./wasm-probe.mjs preloaded in counting mode:
//
//   RATEBOUND_WASM_PROBE=count node --import ./wasm-probe.mjs crossings-child.mjs <project>
//
// <project> has the package installed (./package.mjs). The child starts redis-server and
// PostgreSQL on loopback (the test suites' helpers), puts a counting TCP relay in front of each
// (every chunk the client sends is one send; calls run one at a time, so each send waits for
// its answer: sends per call are round trips per call), and runs, per host and limit, WARM calls
// and then CALLS counted calls on one key, every one granted. Prints one JSON line.
import { createServer, connect } from "node:net";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import pg from "pg";
import { createClient } from "redis";
import { startRedis } from "../../tests/redis/servers.mjs";
import { startPostgres } from "../../tests/sql/postgres-server.mjs";

const WARM = 20;
const CALLS = 100;
const probe = globalThis.__rateboundWasmProbe;
if (!probe?.counting) throw new Error("run with RATEBOUND_WASM_PROBE=count and --import ./wasm-probe.mjs");
const { load } = await import(pathToFileURL(join(process.argv[2], "load.mjs")).href);
const { RateLimiter } = await load("ratebound");

/** The limits counted: a token bucket that never runs out, unsharded and over 10 shards. */
const LIMITS = {
  unsharded: { kind: "token bucket", rate: 1e12, period: 1_000 },
  "10 shards": { kind: "token bucket", rate: 1e12, period: 1_000, shards: 10 },
};

/** A TCP relay to 127.0.0.1:`port` that counts what clients send. */
async function countingRelay(port) {
  let sends = 0;
  const sockets = new Set();
  const server = createServer((socket) => {
    const upstream = connect(port, "127.0.0.1");
    for (const end of [socket, upstream]) {
      sockets.add(end);
      end.setNoDelay(true);
      end.on("error", () => {});
    }
    socket.on("data", (chunk) => {
      sends++;
      upstream.write(chunk);
    });
    upstream.pipe(socket);
    socket.on("close", () => upstream.destroy());
    upstream.on("close", () => socket.destroy());
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: server.address().port,
    sends: () => sends,
    close: () => {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

const perCall = (map) => Object.fromEntries([...map].sort((a, b) => b[1] - a[1]).map(([name, calls]) => [name, calls / CALLS]));
const total = (map) => [...map.values()].reduce((sum, calls) => sum + calls, 0) / CALLS;

/** Counts CALLS granted `limit()` calls on one key, after WARM uncounted ones. */
async function count(store, relay, config) {
  const limiter = new RateLimiter(store, { bench: config });
  for (let i = 0; i < WARM; i++) await limiter.limit("bench", { key: "hot" });
  probe.reset();
  const sendsBefore = relay.sends();
  for (let i = 0; i < CALLS; i++) {
    const { ok } = await limiter.limit("bench", { key: "hot" });
    if (!ok) throw new Error("a counted call was refused");
  }
  return {
    into: total(probe.into),
    out: total(probe.out),
    intoByName: perCall(probe.into),
    outByName: perCall(probe.out),
    roundTrips: (relay.sends() - sendsBefore) / CALLS,
  };
}

async function onRedis() {
  const { redisStore } = await load("ratebound/redis");
  const server = await startRedis();
  const relay = await countingRelay(server.port);
  const client = await createClient({ url: `redis://127.0.0.1:${relay.port}` }).connect();
  try {
    const rows = {};
    for (const [label, config] of Object.entries(LIMITS)) rows[label] = await count(redisStore(client), relay, config);
    return { client: "node-redis", rows };
  } finally {
    await client.quit().catch(() => {});
    relay.close();
    server.stop();
  }
}

async function onPostgres() {
  const { createTable, postgresStore } = await load("ratebound/postgres");
  const server = await startPostgres();
  const relay = await countingRelay(server.port);
  const pool = new pg.Pool({ connectionString: `postgresql://postgres@127.0.0.1:${relay.port}/postgres`, max: 10 });
  try {
    await createTable(pool);
    const rows = {};
    for (const [label, config] of Object.entries(LIMITS)) rows[label] = await count(postgresStore(pool), relay, config);
    return { client: "pg.Pool (10)", rows };
  } finally {
    await pool.end().catch(() => {});
    relay.close();
    server.stop();
  }
}

const attempt = async (host) => {
  try {
    return await host();
  } catch (error) {
    return { error: error.message.split("\n")[0] };
  }
};
console.log(JSON.stringify({ calls: CALLS, warm: WARM, redis: await attempt(onRedis), postgres: await attempt(onPostgres) }));
process.exit(0);
