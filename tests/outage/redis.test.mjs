// onStoreError and timeout on a real redis-server (Debian's, on a free loopback port in a
// temporary directory, killed after), through node-redis: the server is killed mid-run and
// restarted on the same port (closed rejects, open admits degraded, the memory fallback admits at
// most the limit's bound, and after the restart decisions are Redis's again), and CLIENT PAUSE
// holds a call past the limiter's timeout (a decision's one EVALSHA may still run when the pause
// ends, spending at most what the refused call asked; a transaction's late commit never lands;
// without the timeout the same call does commit).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createClient } from "redis";
import { RateLimiter } from "../../pkg/dist/node.js";
import { redisStore } from "../../pkg/dist/redis.js";
import { startRedis } from "../redis/servers.mjs";
import { eventually } from "./stores.mjs";

const NOW = 1_700_000_000_000;
const BUCKET = { kind: "token bucket", rate: 5, period: 60_000 };
const LIMITS = {
  login: BUCKET, // closed: the default
  search: { ...BUCKET, onStoreError: "open" },
  feed: { ...BUCKET, onStoreError: { fallback: "memory", maxKeys: 1_000 } },
};
const OUTAGE_CALLS = 30;

/** A node-redis client that fails a command at once while disconnected and reconnects every 50 ms. */
async function connect(url) {
  const client = createClient({ url, disableOfflineQueue: true, socket: { reconnectStrategy: () => 50, connectTimeout: 1_000 } });
  client.on("error", () => {});
  await client.connect();
  return client;
}

describe("a redis-server that goes away and comes back", () => {
  let server;
  let again;
  let client;
  before(async () => {
    server = await startRedis();
    client = await connect(server.url);
  });
  after(async () => {
    if (client?.isOpen) client.destroy();
    server?.stop();
    again?.stop();
  });

  test(`killed mid-run: closed rejects, open admits degraded, the fallback admits at most the bound over ${OUTAGE_CALLS} calls; restarted, decisions are Redis's again`, { timeout: 30_000 }, async () => {
    const limiter = new RateLimiter(redisStore(client), LIMITS, { now: () => NOW });
    for (const name of Object.keys(LIMITS)) assert.deepEqual(await limiter.limit(name, { key: "u1", count: 2 }), { ok: true });
    assert.equal(await client.get("ratebound:{feed:u1}:0"), `3,${NOW}`, "before the outage, Redis decides");

    server.stop(); // SIGKILL: the connection drops
    await eventually(() => !client.isReady);
    const closed = await limiter.limit("login", { key: "u1" }).catch((error) => error);
    assert.equal(closed.code, "REDIS_ERROR", String(closed));
    const admitted = { search: 0, feed: 0 };
    for (let i = 0; i < OUTAGE_CALLS; i++) {
      for (const name of ["search", "feed"]) {
        const result = await limiter.limit(name, { key: "u1" });
        assert.equal(result.degraded, "store-error");
        assert.equal(result.cause.code, "REDIS_ERROR");
        if (result.ok) admitted[name]++;
      }
    }
    assert.deepEqual(admitted, { search: OUTAGE_CALLS, feed: 5 }, "the fallback admits the limit's bound; open admits everything");
    assert.equal((await limiter.limitAll([{ name: "search", key: "u1" }, { name: "feed", key: "u1" }])).ok, false, "a batch takes the fallback, the stricter");
    const getValue = await limiter.getValue("feed", { key: "u1" }).catch((error) => error);
    assert.equal(getValue.code, "REDIS_ERROR", "getValue fails closed");

    again = await startRedis({ port: server.port });
    await eventually(() => client.isReady, 10_000);
    for (const name of Object.keys(LIMITS)) assert.deepEqual(await limiter.limit(name, { key: "u1" }), { ok: true }, name);
    assert.equal(await client.get("ratebound:{feed:u1}:0"), `4,${NOW}`, "the restarted (empty) Redis holds the state again");
    assert.deepEqual(await limiter.limit("feed", { key: "u1", count: 4 }), { ok: true });
    assert.deepEqual(await limiter.check("feed", { key: "u1" }), { ok: false, retryAfter: 12_000 }, "Redis's state decides, not the fallback's");
  });
});

describe("a redis-server paused past the limiter's timeout (CLIENT PAUSE)", () => {
  let server;
  let client;
  let admin;
  before(async () => {
    server = await startRedis();
    client = await connect(server.url);
    admin = await connect(server.url);
  });
  after(async () => {
    for (const each of [client, admin]) if (each?.isOpen) each.destroy();
    server?.stop();
  });

  const pause = (ms) => admin.sendCommand(["CLIENT", "PAUSE", String(ms), "ALL"]);
  const stateOf = (name, key) => client.get(`ratebound:{${name}:${key}}:0`);

  test("closed rejects STORE_TIMEOUT, open and fallback answer degraded store-timeout, and a late decision spends at most the one token each call asked", { timeout: 20_000 }, async () => {
    const limiter = new RateLimiter(redisStore(client), LIMITS, { now: () => NOW, timeout: 150 });
    for (const name of Object.keys(LIMITS)) await limiter.limit(name, { key: "p", count: 2 });
    await pause(700);
    const started = Date.now();
    const [login, search, feed] = await Promise.all(
      ["login", "search", "feed"].map((name) => limiter.limit(name, { key: "p" }).catch((error) => error)),
    );
    assert.ok(Date.now() - started < 600, "answered within the timeout, not after the pause");
    assert.equal(login.code, "STORE_TIMEOUT");
    assert.deepEqual([search.ok, search.degraded], [true, "store-timeout"]);
    assert.deepEqual([feed.ok, feed.degraded], [true, "store-timeout"]);
    await eventually(async () => (await client.ping()) === "PONG");
    await new Promise((resolve) => setTimeout(resolve, 200)); // the held scripts run
    // Each call was one EVALSHA, sent before the pause: Redis runs it when the pause ends. The
    // refused call spends its token all the same (fail closed); nothing is ever admitted past the bound.
    for (const name of Object.keys(LIMITS)) assert.ok([`3,${NOW}`, `2,${NOW}`].includes(await stateOf(name, "p")), `${name}: at most the one token asked`);
  });

  test("a grant held past the timeout rejects STORE_TIMEOUT and its transaction's late commit never lands", { timeout: 20_000 }, async () => {
    const limiter = new RateLimiter(redisStore(client), LIMITS, { now: () => NOW, timeout: 150 });
    await limiter.limit("login", { key: "g", count: 2 });
    await pause(700);
    const error = await limiter.limit("login", { key: "g", grant: true }).catch((caught) => caught);
    assert.equal(error.code, "STORE_TIMEOUT");
    await eventually(async () => (await client.ping()) === "PONG");
    await new Promise((resolve) => setTimeout(resolve, 200)); // the held reads answer and the body ends
    assert.equal(await stateOf("login", "g"), `3,${NOW}`, "nothing committed late");
  });

  test("without the timeout the same paused call waits for Redis and commits (so the test above can fail)", { timeout: 20_000 }, async () => {
    const limiter = new RateLimiter(redisStore(client), LIMITS, { now: () => NOW, onStoreError: "open" });
    await limiter.limit("login", { key: "q", count: 2 });
    await pause(400);
    const started = Date.now();
    assert.deepEqual(await limiter.limit("login", { key: "q" }), { ok: true });
    assert.ok(Date.now() - started >= 300, "it waited out the pause");
    assert.equal(await stateOf("login", "q"), `2,${NOW}`);
  });
});
