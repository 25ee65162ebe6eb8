// ratebound/redis on a real redis-server (Debian's, started here on a free loopback port and
// killed after): the same suite through node-redis and ioredis, and through @upstash/redis over
// a REST bridge that forwards every command unchanged to that server; node-redis and ioredis in
// their current major (6) and the previous one (5).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createClient } from "redis";
import { MemoryStore, RateLimiter } from "../../pkg/dist/node.js";
import { COMMIT_SCRIPT, DECIDE_SCRIPT, READ_SCRIPT, redisKey, redisStore } from "../../pkg/dist/redis.js";
import { Redis as UpstashRedis } from "@upstash/redis";
import { CLIENTS, startRedis, startUpstashBridge } from "./servers.mjs";
import { redisSuite } from "./suite.mjs";

describe("ratebound/redis on a real redis-server", () => {
  let redis;
  let bridge;
  let admin;
  before(async () => {
    redis = await startRedis();
    bridge = await startUpstashBridge(redis.url);
    admin = createClient({ url: redis.url });
    admin.on("error", () => {});
    await admin.connect();
  });
  after(async () => {
    await admin?.quit().catch(() => {});
    await bridge?.stop();
    redis?.stop();
  });
  const env = () => ({ redisUrl: redis.url, bridgeUrl: bridge.url, admin });
  test("the REST bridge answers @upstash/redis as Upstash does: single commands, automatic pipelines, MULTI/EXEC, errors, and forwards each command to redis-server", async () => {
    await admin.flushDb();
    const upstash = new UpstashRedis({ url: bridge.url, token: "bridge-ignores-it", retry: false, enableTelemetry: false });
    const before = bridge.forwarded.get("SET") ?? 0;
    assert.equal(await upstash.set("bridge:a", "x,1"), "OK");
    assert.deepEqual(await Promise.all([upstash.get("bridge:a"), upstash.get("bridge:none"), upstash.incr("bridge:n")]), ["x,1", null, 1]);
    assert.deepEqual(await upstash.multi().set("bridge:b", "caf\u00e9").get("bridge:b").exec(), ["OK", "caf\u00e9"]);
    await assert.rejects(upstash.evalsha("0".repeat(40), [], []), /NOSCRIPT/);
    assert.equal(await admin.get("bridge:b"), "caf\u00e9", "redis-server holds what the client wrote");
    assert.equal((bridge.forwarded.get("SET") ?? 0) - before, 1, "the MULTI's SET went through MULTI/EXEC, not the counter");
  });

  test("redisKey percent-escapes %, :, { and } in names and keys, so that no two names and keys share a Redis key", () => {
    assert.equal(redisKey({ name: "a:b", shard: 2 }, "app:"), "app:{a%3Ab}:2");
    assert.equal(redisKey({ name: "n%{x}", key: "user:1", shard: 0 }), "ratebound:{n%25%7Bx%7D:user%3A1}:0");
    assert.equal(redisKey({ name: "plain", key: "caf\u00e9", shard: 0 }), "ratebound:{plain:caf\u00e9}:0");
    const pairs = [["a:b", "c"], ["a", "b:c"], ["a%3Ab", "c"], ["a", "b%3Ac"], ["{a", "b}"], ["%", ":"], [":", "%"]];
    const keys = pairs.map(([name, key]) => redisKey({ name, key, shard: 0 }));
    assert.equal(new Set(keys).size, pairs.length, keys.join(" "));
  });

  test("every string the decision and read scripts answer is a JSON string literal of an =-marked text, a hostile stored value too (so @upstash/redis decodes each without an exception)", async () => {
    await admin.flushDb();
    const now = 1_700_000_000_000;
    // The compact layout: kind, rate, period, capacity, maxReserved, shards, start, count, reserve, write, now, fresh value and ts.
    const compact = (count) => ["0", "10", "60000", "10", "", "1", "", String(count), "0", "1", String(now), "10", String(now)];
    const hostile = '"\u0001/\\caf\u00e9,1';
    await admin.set("json:hostile", hostile);
    await admin.set("json:state", `4,${now}`);
    const replies = [
      await admin.eval(DECIDE_SCRIPT, { keys: ["json:absent"], arguments: compact(1) }), // the fast path, nothing stored
      await admin.eval(DECIDE_SCRIPT, { keys: ["json:state"], arguments: compact(1) }), // the fast path over a state
      await admin.eval(DECIDE_SCRIPT, { keys: ["json:state"], arguments: compact(9) }), // refused with a wait: the general path
      await admin.eval(DECIDE_SCRIPT, { keys: ["json:hostile"], arguments: compact(1) }), // not a state: nothing decided
      await admin.eval(DECIDE_SCRIPT, { keys: ["json:absent", "json:hostile"], arguments: ["m", "2", "c", "1", ...compact(1), "c", "2", ...compact(1)] }),
      await admin.eval(READ_SCRIPT, { keys: ["json:hostile", "json:state", "json:none"], arguments: [] }),
    ];
    const decoded = replies.map((reply) => reply.map((entry) => (entry === null ? null : JSON.parse(entry))));
    for (const entries of decoded) for (const entry of entries) assert.ok(entry === null || entry.startsWith("="), JSON.stringify(entries));
    assert.deepEqual(decoded[0], [null, "=1", "=1,"]);
    assert.deepEqual(decoded[1], [`=4,${now}`, "=1", "=1,"]);
    assert.equal(decoded[2][2].slice(0, 3), "=0,");
    assert.deepEqual(decoded[3], [`=${hostile}`, "=0", "=-,"]);
    // The many-calls layout: the first key holds what the first call wrote.
    assert.deepEqual(decoded[4], [`=9,${now}`, "=1", "=1,", `=${hostile}`, "=0", "=-,"]);
    assert.deepEqual(decoded[5], [`=${hostile}`, `=3,${now}`, null]);
    assert.equal(await admin.get("json:hostile"), hostile, "left as it was");
  });

  for (const kind of Object.keys(CLIENTS)) redisSuite(kind, env);

  /** How many times the server ran each command since the last reset. */
  const commandCounts = async () =>
    Object.fromEntries([...(await admin.info("commandstats")).matchAll(/cmdstat_(\w+):calls=(\d+)/g)].map(([, name, calls]) => [name, Number(calls)]));

  for (const kind of Object.keys(CLIENTS)) {
    test(`through ${kind}: a transaction's batched reads are one round trip (the read script), see its own writes, and are checked at commit`, async () => {
      await admin.flushDb();
      const { client, close } = await CLIENTS[kind].open({ redisUrl: redis.url, bridgeUrl: bridge.url });
      try {
        const store = redisStore(client);
        const refs = [0, 1, 2, 1024, 2050].map((shard) => ({ name: "grant", key: "ada", shard }));
        await admin.set(redisKey(refs[1]), "3,1700000000000");
        await admin.set(redisKey(refs[2]), "null");
        for (const script of [READ_SCRIPT, COMMIT_SCRIPT]) await admin.scriptLoad(script);
        // The store asks maxmemory-policy once, beside its first command (CONFIG GET; INFO in a script
        // through @upstash/redis): let that pass before counting.
        await store.transaction(async (tx) => tx.readMany([refs[4]]));
        for (let waited = 0; !/cmdstat_(config\|get|eval):/.test(await admin.info("commandstats")); waited += 10) {
          assert.ok(waited < 5_000, "the store's one maxmemory-policy probe reached the server");
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        await admin.configResetStat();
        const seen = await store.transaction(async (tx) => {
          tx.write(refs[0], { value: -0, ts: 5 });
          const states = await tx.readMany(refs);
          tx.write(refs[3], { value: 1, ts: 2 });
          return states;
        });
        assert.deepEqual(seen, [{ value: -0, ts: 5 }, { value: 3, ts: 1_700_000_000_000 }, "null", null, null]);
        assert.ok(Object.is(seen[0].value, -0));
        // Commands run inside scripts count too: 4 GETs in the read script, 4 in the commit's checks.
        const counts = await commandCounts();
        assert.deepEqual(counts, { evalsha: 2, get: 8, set: 2 }, "one read script for the four states not written yet, one commit");
        assert.equal(await admin.get(redisKey(refs[0])), "-0,5");
        // A rival's write between the batched read and the commit makes the commit lose.
        let attempts = 0;
        await store.transaction(async (tx) => {
          attempts++;
          await tx.readMany(refs.slice(1, 3));
          if (attempts === 1) await admin.set(redisKey(refs[1]), "2,1700000000000");
          tx.write(refs[4], { value: attempts, ts: 0 });
        });
        assert.equal(attempts, 2);
        assert.equal(await admin.get(redisKey(refs[4])), "2,0");
      } finally {
        await close();
      }
    });
  }

  test("expiry changes no decision: once Redis has dropped an expired state, every limit decides as a store that kept it", { timeout: 15_000 }, async () => {
    const limits = {
      bucket: { kind: "token bucket", rate: 10, period: 400 },
      debt: { kind: "token bucket", rate: 10, period: 400, maxReserved: 10 },
      window: { kind: "fixed window", rate: 5, period: 300, start: 0 },
    };
    const requests = { bucket: { count: 6 }, debt: { count: 14, reserve: true }, window: { count: 5 } };
    let now = Date.now();
    const options = { now: () => now };
    const kept = new RateLimiter(new MemoryStore(), limits, options);
    const dropped = new RateLimiter(redisStore(admin), limits, options);
    for (const [name, request] of Object.entries(requests)) {
      assert.deepEqual(await dropped.limit(name, { key: "x", ...request }), await kept.limit(name, { key: "x", ...request }));
    }
    const keys = Object.keys(limits).map((name) => `ratebound:{${name}:x}:0`);
    for (const key of keys) assert.ok((await admin.pTTL(key)) > 0, `${key} has a TTL`);
    const deadline = Date.now() + 5_000;
    while ((await admin.exists(keys)) > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(await admin.exists(keys), 0, "Redis dropped every state");
    now = Date.now();
    for (const [name, request] of Object.entries(requests)) {
      for (let round = 0; round < 3; round++) {
        assert.deepEqual(await dropped.limit(name, { key: "x", ...request }), await kept.limit(name, { key: "x", ...request }), `${name}, round ${round}`);
        assert.deepEqual(await dropped.getValue(name, { key: "x" }), await kept.getValue(name, { key: "x" }), `${name}, round ${round}`);
      }
    }
  });
});
