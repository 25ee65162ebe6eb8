// redisStore's argument errors: every one is a TypeError with code INVALID_ARGUMENT whose message
// says what to pass instead (issue 24, issue 25 item 16). No server is needed: redisStore sends
// nothing until a call.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import pg from "pg";
import { createClient, createCluster } from "redis";
import IORedis, { Cluster } from "ioredis";
import { Redis as UpstashRedis } from "@upstash/redis";
import { MemoryStore } from "../../pkg/dist/node.js";
import { redisStore } from "../../pkg/dist/redis.js";

/** Asserts `make()` throws a coded TypeError whose message matches `message`. */
function rejects(make, message) {
  assert.throws(make, (error) => {
    assert.ok(error instanceof TypeError, `a TypeError, not ${error?.constructor?.name}: ${error}`);
    assert.equal(error.code, "INVALID_ARGUMENT", error.message);
    assert.match(error.message, message);
    return true;
  });
}

describe("redisStore's argument errors are TypeErrors with code INVALID_ARGUMENT that say what to do", () => {
  const nodeRedis = createClient({ url: "redis://127.0.0.1:1" });

  test("a PostgreSQL pool is sent to ratebound/postgres", () => {
    const pool = new pg.Pool({ connectionString: "postgres://127.0.0.1:1/none" });
    rejects(() => redisStore(pool), /PostgreSQL client or pool: use postgresStore\(db\) from ratebound\/postgres/);
    rejects(() => redisStore(new pg.Client()), /use postgresStore/);
  });

  test("a Promise (redisStore(client.connect())) is told to await it", () => {
    const connecting = Promise.resolve(nodeRedis);
    rejects(() => redisStore(connecting), /a Promise \(client\.connect\(\) returns one\): await it/);
  });

  test("a node-redis client never connected: the call fails closed, saying to connect it first", async () => {
    const { RateLimiter } = await import("../../pkg/dist/node.js");
    const unconnected = createClient({ url: "redis://127.0.0.1:1" });
    const limiter = new RateLimiter(redisStore(unconnected), { api: { kind: "token bucket", rate: 10, period: 60_000 } });
    await assert.rejects(limiter.limit("api", { key: "k" }), (error) => {
      assert.equal(error.code, "REDIS_ERROR");
      assert.match(error.message, /The client is closed; connect the client first \(await client\.connect\(\), once, at startup\)/);
      return true;
    });
  });

  test("a rate limit store is passed to the RateLimiter as it is", () => {
    rejects(() => redisStore(new MemoryStore()), /a rate limit store already: pass it to new RateLimiter\(store, limits\)/);
  });

  test("a client without EVALSHA is told why it is needed; nothing, null and numbers name what was passed", () => {
    rejects(() => redisStore({ get: async () => null }), /has no EVALSHA and EVAL \(ratebound decides inside Redis with a Lua script\)/);
    rejects(() => redisStore(null), /node-redis \(createClient, createCluster\), ioredis \(new Redis, new Cluster\) or @upstash\/redis \(Redis\.fromEnv\) client; got null/);
    rejects(() => redisStore(undefined), /got undefined/);
    rejects(() => redisStore(6379), /got number/);
  });

  test("a prefix that is not a string, or whose hash tag is empty, is refused with an example of a good one", () => {
    rejects(() => redisStore(nodeRedis, { prefix: 5 }), /prefix must be a string, such as "ratebound:" or "\{rl\}:" \(got number\)/);
    rejects(() => redisStore(nodeRedis, { prefix: null }), /got null/);
    rejects(() => redisStore(nodeRedis, { prefix: "app{}:" }), /empty hash tag "\{\}".*put a name inside it \("\{rl\}:"\)/);
  });

  test("timeoutMs must be a positive finite number of milliseconds; an unknown option is named", () => {
    for (const timeoutMs of [0, -1, Infinity, NaN, "5000"]) rejects(() => redisStore(nodeRedis, { timeoutMs }), /timeoutMs must be a positive finite number of milliseconds/);
    assert.throws(() => redisStore(nodeRedis, { prefx: "x:" }), (error) => error.code === "INVALID_ARGUMENT" && /prefx/.test(error.message));
  });

  test("every supported client is accepted without a connection: node-redis and ioredis (client and cluster) and @upstash/redis", () => {
    const clients = [
      nodeRedis,
      createCluster({ rootNodes: [{ url: "redis://127.0.0.1:1" }] }),
      new IORedis({ lazyConnect: true }),
      new Cluster([{ host: "127.0.0.1", port: 1 }], { lazyConnect: true }),
      new UpstashRedis({ url: "http://127.0.0.1:1", token: "t", enableTelemetry: false }),
    ];
    for (const client of clients) assert.equal(typeof redisStore(client, { prefix: "{rl}:" }).decide, "function");
  });
});
