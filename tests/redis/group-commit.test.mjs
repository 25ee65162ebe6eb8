// Group commit on a real redis-server: calls that arrive through one store while its decision is
// in flight go together in the next EVALSHA, counted by the server itself (`INFO commandstats`);
// a call alone is sent at once; each call keeps its own failure (a corrupt state, a timeout under
// its own policy); through @upstash/redis one HTTP request carries the batch.
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createClient } from "redis";
import { Redis as UpstashRedis } from "@upstash/redis";
import { RateLimiter, isDegraded } from "../../pkg/dist/node.js";
import { redisKey, redisStore } from "../../pkg/dist/redis.js";
import { startRedis, startUpstashBridge } from "./servers.mjs";

const NOW = 1_700_000_000_000;
const LIMITS = { hits: { kind: "token bucket", rate: 1000, period: 86_400_000 } }; // refills slowly: no state expires during a test

/** EVALSHA and EVAL calls the server has run since the last `CONFIG RESETSTAT`. */
async function scriptCalls(admin) {
  const info = await admin.info("commandstats");
  const calls = (name) => Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
  return calls("evalsha") + calls("eval");
}

/** A node-redis client whose EVALSHAs are seen (`onSend` runs as each is handed to the client). */
function watched(client, onSend) {
  return {
    get: (key) => client.get(key),
    // The store's one-time eviction-policy check asks CONFIG GET, not a script: not a decision.
    configGet: (parameter) => client.configGet(parameter),
    evalSha: (sha, options) => {
      onSend(options);
      return client.evalSha(sha, options);
    },
    eval: (script, options) => {
      onSend(options);
      return client.eval(script, options);
    },
  };
}

describe("group commit on a real redis-server", () => {
  let redis;
  let admin;
  let client;
  before(async () => {
    redis = await startRedis();
    admin = createClient({ url: redis.url });
    admin.on("error", () => {});
    await admin.connect();
    client = createClient({ url: redis.url, disableOfflineQueue: true });
    client.on("error", () => {});
    await client.connect();
  });
  after(async () => {
    await client?.quit().catch(() => {});
    await admin?.quit().catch(() => {});
    redis?.stop();
  });
  beforeEach(async () => {
    await admin.flushDb();
    // Warm up: the script is loaded and its SHA-1 known, so every count below is of decisions alone.
    await new RateLimiter(redisStore(client), LIMITS, { now: () => NOW }).limit("hits", { key: "warm-up" });
    await admin.configResetStat();
  });

  test("a call alone is sent at once: its EVALSHA leaves before the event loop turns", async () => {
    const turned = [];
    let loopTurned = false;
    const limiter = new RateLimiter(redisStore(watched(client, () => turned.push(loopTurned))), LIMITS, { now: () => NOW });
    setImmediate(() => (loopTurned = true));
    assert.deepEqual(await limiter.limit("hits", { key: "alone" }), { ok: true });
    assert.deepEqual(turned, [false], "sent before any timer or I/O callback ran");
    assert.equal(await scriptCalls(admin), 1);
  });

  test("64 calls made at once on one key go in one EVALSHA, each decided as if alone and in order", async () => {
    const limiter = new RateLimiter(redisStore(client), LIMITS, { now: () => NOW });
    const results = await Promise.all(Array.from({ length: 64 }, () => limiter.limit("hits", { key: "hot", count: 10 })));
    assert.equal(await scriptCalls(admin), 1);
    // 1000 tokens, 10 each: the first 100 would be granted; here all 64 are, and the state is exact.
    assert.ok(results.every((result) => result.ok === true && result.retryAfter === undefined));
    assert.equal(await admin.get(redisKey({ name: "hits", key: "hot", shard: 0 })), `360,${NOW}`);
    // Past the capacity, the calls after the 36th are refused, in arrival order.
    const more = await Promise.all(Array.from({ length: 40 }, () => limiter.limit("hits", { key: "hot", count: 10 })));
    assert.deepEqual(more.map((result) => result.ok), Array.from({ length: 40 }, (_, index) => index < 36));
    assert.equal(await scriptCalls(admin), 2);
  });

  test("calls that arrive while a decision is in flight go together in the next one", async () => {
    const store = redisStore(
      watched(client, () => {
        sends++;
        // The first call is in flight now: three more arrive.
        if (sends === 1) later.push(...["b", "c", "d"].map((key) => limiter.limit("hits", { key })));
      }),
    );
    let sends = 0;
    const later = [];
    const limiter = new RateLimiter(store, LIMITS, { now: () => NOW });
    assert.deepEqual(await limiter.limit("hits", { key: "a" }), { ok: true });
    assert.deepEqual(await Promise.all(later), [{ ok: true }, { ok: true }, { ok: true }]);
    assert.equal(sends, 2);
    assert.equal(await scriptCalls(admin), 2);
  });

  test("32 calls in flight for 2,000 calls, over 1,000 keys: far fewer EVALSHAs than calls, every call granted and counted", async () => {
    const limiter = new RateLimiter(redisStore(client), LIMITS, { now: () => NOW });
    let next = 0;
    const worker = async () => {
      while (next < 2_000) {
        const index = next++;
        const result = await limiter.limit("hits", { key: `k${index % 1_000}` });
        assert.equal(result.ok, true);
      }
    };
    await Promise.all(Array.from({ length: 32 }, worker));
    const calls = await scriptCalls(admin);
    assert.ok(calls <= 2_000 / 8, `${calls} EVALSHAs for 2,000 calls`);
    assert.equal(await admin.get(redisKey({ name: "hits", key: "k7", shard: 0 })), `998,${NOW}`);
  });

  test("a corrupt state fails its own call alone; the other calls of the same EVALSHA are decided", async () => {
    const corrupt = redisKey({ name: "hits", key: "bad", shard: 0 });
    await admin.set(corrupt, "x");
    const limiter = new RateLimiter(redisStore(client), LIMITS, { now: () => NOW });
    const [first, bad, last] = await Promise.allSettled(["good1", "bad", "good2"].map((key) => limiter.limit("hits", { key })));
    assert.deepEqual(first, { status: "fulfilled", value: { ok: true } });
    assert.equal(bad.status, "rejected");
    assert.equal(bad.reason.code, "CORRUPT_STATE");
    assert.deepEqual(last, { status: "fulfilled", value: { ok: true } });
    assert.equal(await admin.get(corrupt), "x", "left as it was");
    assert.equal(await scriptCalls(admin), 1);
  });

  test("a bad call fails alone, before it joins a round trip", async () => {
    const store = redisStore(client);
    const item = { reads: [0], kind: 0, rate: 1, period: 1000, capacity: 1, maxReserved: null, shards: 1, start: null, count: 1, reserve: false, write: true, now: NOW, fresh: [{ value: 1, ts: NOW }] };
    const good = store.decide({ refs: [{ name: "hits", key: "fine", shard: 0 }], items: [item], all: false });
    const bad = store.decide({ refs: [{ name: "hits", key: "fine", shard: 0 }], items: [{ ...item, reads: [3] }], all: false });
    await assert.rejects(bad, { code: "INVALID_ARGUMENT" });
    assert.deepEqual((await good).wrote, [true]);
    assert.equal(await scriptCalls(admin), 1);
  });

  test("each call keeps its own timeout and policy: while the server stalls, the open call is granted degraded, the closed one fails, and the store goes on after", async () => {
    const store = redisStore(client, { timeoutMs: 150 });
    const limits = { open: { ...LIMITS.hits, onStoreError: "open" }, closed: { ...LIMITS.hits, onStoreError: "closed" } };
    const limiter = new RateLimiter(store, limits, { now: () => NOW });
    await admin.sendCommand(["CLIENT", "PAUSE", "600", "WRITE"]);
    const started = Date.now();
    const open = limiter.limit("open", { key: "stall" });
    await new Promise((resolve) => setTimeout(resolve, 50)); // the first is in flight: the second waits for it
    const closed = limiter.limit("closed", { key: "stall" });
    const opened = await open;
    assert.equal(opened.ok, true);
    assert.ok(isDegraded(opened));
    assert.equal(opened.cause.code, "REDIS_TIMEOUT");
    await assert.rejects(closed, { code: "REDIS_TIMEOUT" });
    assert.ok(Date.now() - started < 500, "each answered at its own deadline, not at the end of the stall");
    await new Promise((resolve) => setTimeout(resolve, 650 - (Date.now() - started)));
    assert.deepEqual(await limiter.limit("closed", { key: "after" }), { ok: true });
  });

  test("a call after an idle spell keeps its own deadline: the lane's timer, kept while idle, is armed again for it", async () => {
    const store = redisStore(client, { timeoutMs: 300 });
    const limiter = new RateLimiter(store, LIMITS, { now: () => NOW });
    assert.deepEqual(await limiter.limit("hits", { key: "idle" }), { ok: true }); // arms the lane's timer for 300 ms from now
    await new Promise((resolve) => setTimeout(resolve, 200));
    await admin.sendCommand(["CLIENT", "PAUSE", "900", "WRITE"]);
    const started = Date.now();
    await assert.rejects(limiter.limit("hits", { key: "idle" }), { code: "REDIS_TIMEOUT" });
    const waited = Date.now() - started;
    assert.ok(waited >= 290 && waited < 800, `timed out after ${waited} ms, not at its own 300 ms deadline`);
    await new Promise((resolve) => setTimeout(resolve, 950 - waited));
    assert.deepEqual(await limiter.limit("hits", { key: "idle-after" }), { ok: true });
  });

  test("an idle store keeps no process alive: a process whose last call was answered exits at once, not at the call's timeout", async () => {
    const program = `
      import { createClient } from "redis";
      import { RateLimiter } from ${JSON.stringify(new URL("../../pkg/dist/node.js", import.meta.url).href)};
      import { redisStore } from ${JSON.stringify(new URL("../../pkg/dist/redis.js", import.meta.url).href)};
      const client = await createClient({ url: ${JSON.stringify(redis.url)} }).connect();
      const limiter = new RateLimiter(redisStore(client, { timeoutMs: 60000 }), { hits: { kind: "token bucket", rate: 10, period: 1000 } });
      const result = await limiter.limit("hits", { key: "exits" });
      await client.quit();
      console.log(JSON.stringify(result));`;
    const started = Date.now();
    const child = spawn(process.execPath, ["--input-type=module", "-e", program], { cwd: new URL(".", import.meta.url), stdio: ["ignore", "pipe", "inherit"] });
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    const code = await new Promise((resolve) => {
      const kill = setTimeout(() => child.kill(), 20_000);
      child.on("exit", (exitCode) => {
        clearTimeout(kill);
        resolve(exitCode);
      });
    });
    assert.equal(code, 0);
    assert.equal(output.trim(), '{"ok":true}');
    assert.ok(Date.now() - started < 15_000, `the process took ${Date.now() - started} ms to exit`);
  });

  test("through @upstash/redis one HTTP request carries the batch: one EVALSHA for 16 calls", async () => {
    const bridge = await startUpstashBridge(redis.url);
    try {
      const upstash = new UpstashRedis({ url: bridge.url, token: "bridge-ignores-it", retry: false, enableTelemetry: false });
      const limiter = new RateLimiter(redisStore(upstash), LIMITS, { now: () => NOW });
      await limiter.limit("hits", { key: "upstash-warm-up" });
      const [requests, evalshas] = [bridge.requests, bridge.forwarded.get("EVALSHA") ?? 0];
      const results = await Promise.all(Array.from({ length: 16 }, (_, index) => limiter.limit("hits", { key: `u${index % 4}` })));
      assert.ok(results.every((result) => result.ok === true));
      assert.equal(bridge.requests - requests, 1);
      assert.equal((bridge.forwarded.get("EVALSHA") ?? 0) - evalshas, 1);
      assert.equal(await admin.get(redisKey({ name: "hits", key: "u1", shard: 0 })), `996,${NOW}`);
    } finally {
      await bridge.stop();
    }
  });
});
