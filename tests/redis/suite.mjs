// The Redis host suite (not a test file itself): `redisSuite(kind, env)` registers the same
// tests for one client library (node-redis, ioredis, @upstash/redis). `env()` gives the running
// servers: `redisUrl`, `bridgeUrl`, and `admin`, a node-redis connection of the test's own for
// looking at (and tampering with) what is stored.
import { beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import * as ratebound from "../../pkg/dist/node.js";
import { DECIDE_SCRIPT, redisStore, redisKey, RedisStoreError } from "../../pkg/dist/redis.js";
import { COLLIDING_REFS, stateFor } from "../hosts/collisions.mjs";
import { CLIENTS, startRedis, startUpstashBridge } from "./servers.mjs";

const { RateLimiter } = ratebound;
/** A clock that never moves, so every count is exact. */
export const NOW = 1_700_000_000_000;
const DAY = 86_400_000;
export const LIMITS = {
  daily: { kind: "token bucket", rate: 10, period: DAY },
  big: { kind: "token bucket", rate: 40, period: DAY },
  perUser: { kind: "token bucket", rate: 3, period: DAY },
  sharded: { kind: "token bucket", rate: 30, period: DAY, shards: 3 },
  sliding: { kind: "sliding window", rate: 10, period: DAY },
};
const CLIENT_COUNT = 8;

/** `count` connections of this client library, closed after `run`. */
async function withClients(kind, env, count, run) {
  const opened = await Promise.all(Array.from({ length: count }, () => CLIENTS[kind].open(env)));
  try {
    return await run(opened.map(({ client }) => client));
  } finally {
    await Promise.all(opened.map(({ close }) => close()));
  }
}

/** `requests` calls of `call(limiter)` at once, spread over the connections, each limiter on its own store. */
async function race(clients, requests, call, storeOptions = {}) {
  let conflicts = 0;
  const outcomes = await Promise.all(
    Array.from({ length: requests }, (_, index) => {
      const store = redisStore(clients[index % clients.length], { maxAttempts: 200, maxDelayMs: 20, onConflict: () => conflicts++, ...storeOptions });
      return call(new RateLimiter(store, LIMITS, { now: () => NOW })).catch((error) => ({ error }));
    }),
  );
  return {
    admitted: outcomes.filter((outcome) => outcome.ok === true).length,
    refused: outcomes.filter((outcome) => outcome.ok === false).length,
    failed: outcomes.filter((outcome) => outcome.error).map(({ error }) => String(error)),
    conflicts,
  };
}

/** Every key and value in the database, for "nothing was written" checks. */
async function snapshot(admin) {
  const keys = (await admin.keys("*")).sort();
  return Promise.all(keys.map(async (key) => [key, await admin.type(key) === "string" ? await admin.get(key) : await admin.type(key)]));
}

export function redisSuite(kind, env) {
  describe(`through ${kind}`, () => {
    beforeEach(() => env().admin.flushDb());

    test(`${CLIENT_COUNT} connections, 60 concurrent limits on one key: exactly the bound of 10 admitted, the state at 0, one EVALSHA each and no retry`, () =>
      withClients(kind, env(), CLIENT_COUNT, async (clients) => {
        const { admin } = env();
        await admin.scriptLoad(DECIDE_SCRIPT);
        await admin.configResetStat();
        const seen = await race(clients, 60, (limiter) => limiter.limit("daily", { key: "ada" }));
        assert.deepEqual(seen.failed, []);
        assert.deepEqual([seen.admitted, seen.refused], [10, 50]);
        assert.equal(await admin.get("ratebound:{daily:ada}:0"), `0,${NOW}`);
        assert.equal(seen.conflicts, 0, "a hot key never races: nothing to retry");
        const evalsha = /cmdstat_evalsha:calls=(\d+)/.exec(await admin.info("commandstats"));
        assert.equal(Number(evalsha?.[1]), 60, "one round trip per call");
      }));

    test(`${CLIENT_COUNT} connections, 25 concurrent limits under a bound of 40: all admitted and no update lost (15 left)`, () =>
      withClients(kind, env(), CLIENT_COUNT, async (clients) => {
        const seen = await race(clients, 25, (limiter) => limiter.limit("big", { key: "ada" }));
        assert.deepEqual(seen.failed, []);
        assert.equal(seen.admitted, 25);
        assert.equal(await env().admin.get("ratebound:{big:ada}:0"), `15,${NOW}`);
      }));

    test("the harness sees over-admission: the same traffic through plain GET and SET, without the commit script, admits more than 10", () =>
      withClients(kind, env(), CLIENT_COUNT, async (clients) => {
        const outcomes = await Promise.all(
          Array.from({ length: 60 }, (_, index) => {
            const client = clients[index % clients.length];
            const naive = {
              read: async (ref) => {
                const stored = await client.get(redisKey(ref));
                return stored === null ? null : { value: Number(String(stored).split(",")[0]), ts: Number(String(stored).split(",")[1]) };
              },
              write: async (ref, state) => {
                await client.set(redisKey(ref), `${state.value},${state.ts}`);
              },
            };
            return new RateLimiter(naive, LIMITS, { now: () => NOW }).limit("daily", { key: "naive" });
          }),
        );
        const admitted = outcomes.filter((outcome) => outcome.ok).length;
        assert.ok(admitted > 10, `admitted ${admitted}`);
      }));

    test(`${CLIENT_COUNT} connections, 60 concurrent limits of a sliding window on one key (its optimistic transaction, not the script): exactly the bound of 10 admitted, its window holding 10`, () =>
      withClients(kind, env(), CLIENT_COUNT, async (clients) => {
        const seen = await race(clients, 60, (limiter) => limiter.limit("sliding", { key: "ada" }));
        assert.deepEqual(seen.failed, []);
        assert.deepEqual([seen.admitted, seen.refused], [10, 50]);
        const window = Math.floor(NOW / DAY);
        assert.equal(await env().admin.get(`ratebound:{sliding:ada}:${window % 2}`), `10,${window * DAY}`);
        assert.equal(await env().admin.get(`ratebound:{sliding:ada}:${1 - (window % 2)}`), null, "the other window was never written");
        assert.ok(seen.conflicts > 0, "the calls raced, and the commit's check caught it");
      }));

    test("the harness sees over-admission of a sliding window: the same traffic through plain GET and SET admits more than 10", () =>
      withClients(kind, env(), CLIENT_COUNT, async (clients) => {
        const outcomes = await Promise.all(
          Array.from({ length: 60 }, (_, index) => {
            const client = clients[index % clients.length];
            const naive = {
              read: async (ref) => {
                const stored = await client.get(redisKey(ref));
                return stored === null ? null : { value: Number(String(stored).split(",")[0]), ts: Number(String(stored).split(",")[1]) };
              },
              write: async (ref, state) => {
                await client.set(redisKey(ref), `${state.value},${state.ts}`);
              },
            };
            return new RateLimiter(naive, LIMITS, { now: () => NOW }).limit("sliding", { key: "naive" });
          }),
        );
        const admitted = outcomes.filter((outcome) => outcome.ok).length;
        assert.ok(admitted > 10, `admitted ${admitted}`);
      }));

    test("limitAll is all or nothing: racing batches over two limits admit exactly the smaller bound, spending both alike, and a refused batch writes nothing", () =>
      withClients(kind, env(), CLIENT_COUNT, async (clients) => {
        const batch = [{ name: "perUser", key: "bo" }, { name: "daily", key: "bo" }];
        const seen = await race(clients, 20, (limiter) => limiter.limitAll(batch));
        assert.deepEqual(seen.failed, []);
        assert.deepEqual([seen.admitted, seen.refused], [3, 17]);
        const { admin } = env();
        assert.equal(await admin.get("ratebound:{perUser:bo}:0"), `0,${NOW}`);
        assert.equal(await admin.get("ratebound:{daily:bo}:0"), `7,${NOW}`, "daily spent exactly by the admitted batches");
        const before = await snapshot(admin);
        const limiter = new RateLimiter(redisStore(clients[0]), LIMITS, { now: () => NOW });
        assert.equal((await limiter.limitAll([{ name: "daily", key: "bo" }, { name: "perUser", key: "bo" }])).ok, false);
        assert.deepEqual(await snapshot(admin), before);
      }));

    test("every (name, key, shard) triple of the collision set is its own key, however its strings look", () =>
      withClients(kind, env(), 1, async ([client]) => {
        const store = redisStore(client);
        await store.transaction(async (tx) => COLLIDING_REFS.forEach((ref, index) => tx.write(ref, stateFor(index))));
        const states = await Promise.all(COLLIDING_REFS.map((ref) => store.read(ref)));
        assert.deepEqual(states, COLLIDING_REFS.map((_, index) => stateFor(index)));
        assert.equal((await env().admin.keys("ratebound:*")).length, COLLIDING_REFS.length);
        const limiter = new RateLimiter(store, {}, { now: () => NOW });
        const config = { kind: "token bucket", rate: 1, period: DAY };
        const take = async (name, key) => (await limiter.limit(name, { key, config })).ok;
        assert.deepEqual([await take("x:y", "z"), await take("x", "y:z"), await take("x:y", "z")], [true, true, false]);
      }));

    test("a sharded limit keeps every shard of one name and key under one hash tag, and reset deletes them all", () =>
      withClients(kind, env(), 1, async ([client]) => {
        const limiter = new RateLimiter(redisStore(client), LIMITS, { now: () => NOW });
        for (let index = 0; index < 12; index++) assert.equal((await limiter.limit("sharded", { key: "k{1}" })).ok, true);
        const keys = await env().admin.keys("ratebound:{sharded:k%7B1%7D}:*");
        assert.ok(keys.length >= 2, `several shards written: ${keys}`);
        await limiter.reset("sharded", { key: "k{1}" });
        assert.deepEqual(await env().admin.keys("ratebound:{sharded*"), []);
      }));

    test("check and a refusal write nothing; calls in one transaction see each other's writes", () =>
      withClients(kind, env(), 1, async ([client]) => {
        const store = redisStore(client);
        const limiter = new RateLimiter(store, LIMITS, { now: () => NOW });
        assert.deepEqual(await limiter.check("daily", { key: "cy" }), { ok: true });
        assert.deepEqual(await env().admin.keys("*cy*"), []);
        const answers = await store.transaction(async (tx) => {
          const inner = new RateLimiter(tx, LIMITS, { now: () => NOW });
          return [await inner.limit("daily", { key: "cy", count: 6 }), await inner.limit("daily", { key: "cy", count: 6 }), await tx.read({ name: "daily", key: "cy", shard: 0 })];
        });
        assert.deepEqual(answers.slice(0, 2).map(({ ok }) => ok), [true, false]);
        assert.deepEqual(answers[2], { value: 4, ts: NOW });
        const before = await snapshot(env().admin);
        assert.equal((await limiter.limit("daily", { key: "cy", count: 5 })).ok, false);
        assert.deepEqual(await snapshot(env().admin), before);
      }));

    test("a call that loses every race fails closed after maxAttempts with REDIS_CONFLICT, writing nothing", () =>
      withClients(kind, env(), 1, async ([client]) => {
        const { admin } = env();
        const conflicts = [];
        const store = redisStore(client, { maxAttempts: 3, baseDelayMs: 1, onConflict: (attempt) => conflicts.push(attempt) });
        let attempts = 0;
        const error = await store
          .transaction(async (tx) => {
            attempts++;
            await new RateLimiter(tx, LIMITS, { now: () => NOW }).limit("daily", { key: "dee" });
            await admin.set("ratebound:{daily:dee}:0", `${attempts},${NOW}`); // a rival commits first
          })
          .catch((caught) => caught);
        assert.ok(error instanceof RedisStoreError, String(error));
        assert.equal(error.code, "REDIS_CONFLICT");
        assert.match(error.message, /lost the race to other writers 3 times in a row; nothing was written/);
        assert.deepEqual([attempts, error.attempts, conflicts], [3, 3, [1, 2, 3]]);
        assert.equal(await admin.get("ratebound:{daily:dee}:0"), `3,${NOW}`, "only the rival's writes are there");
      }));

    test("a stored value that is not a state rejects with CORRUPT_STATE naming the ref, and is left as it was, with the batch's other states", () =>
      withClients(kind, env(), 1, async ([client]) => {
        const { admin } = env();
        const limiter = new RateLimiter(redisStore(client), LIMITS, { now: () => NOW });
        assert.equal((await limiter.limit("perUser", { key: "eve" })).ok, true);
        for (const corrupt of ["not a state", "1,2,3", "Infinity,0", "5", '{"value":1,"ts":2}', ""]) {
          await admin.set("ratebound:{daily:eve}:0", corrupt);
          const before = await snapshot(admin);
          for (const call of [() => limiter.limit("daily", { key: "eve" }), () => limiter.limitAll([{ name: "perUser", key: "eve" }, { name: "daily", key: "eve" }])]) {
            const error = await call().catch((caught) => caught);
            assert.ok(error instanceof Error, `${JSON.stringify(corrupt)}: rejected with an Error`);
            assert.equal(error.code, "CORRUPT_STATE", `${JSON.stringify(corrupt)}: ${error.message}`);
            assert.match(error.message, /daily/);
            assert.match(error.message, /eve/);
            assert.deepEqual(await snapshot(admin), before, `${JSON.stringify(corrupt)}: nothing written`);
          }
        }
      }));

    test("a key of another type fails the call closed with REDIS_ERROR (the server's WRONGTYPE), and is left as it was", () =>
      withClients(kind, env(), 1, async ([client]) => {
        const { admin } = env();
        await admin.hSet("ratebound:{daily:fay}:0", "value", "1");
        const error = await new RateLimiter(redisStore(client), LIMITS, { now: () => NOW }).limit("daily", { key: "fay" }).catch((caught) => caught);
        assert.ok(error instanceof RedisStoreError, String(error));
        assert.equal(error.code, "REDIS_ERROR");
        assert.match(error.message, /WRONGTYPE/);
        assert.deepEqual({ ...(await admin.hGetAll("ratebound:{daily:fay}:0")) }, { value: "1" });
      }));

    test("after SCRIPT FLUSH the commit falls back from EVALSHA to EVAL and still commits", () =>
      withClients(kind, env(), 1, async ([client]) => {
        const limiter = new RateLimiter(redisStore(client), LIMITS, { now: () => NOW });
        await env().admin.scriptFlush();
        assert.equal((await limiter.limit("daily", { key: "gus", count: 4 })).ok, true);
        assert.equal((await limiter.limit("daily", { key: "gus", count: 4 })).ok, true);
        assert.equal(await env().admin.get("ratebound:{daily:gus}:0"), `2,${NOW}`);
      }));

    test("each written state expires no earlier than it is full again (PX, rounded up), and never when it never is (a fixed window with a random start)", () =>
      withClients(kind, env(), 1, async ([client]) => {
        const { admin } = env();
        const limits = { ...LIMITS, randomStart: { kind: "fixed window", rate: 10, period: DAY } };
        const limiter = new RateLimiter(redisStore(client), limits, { now: () => NOW });
        assert.equal((await limiter.limit("daily", { key: "ivy", count: 3 })).ok, true);
        const ttl = await admin.pTTL("ratebound:{daily:ivy}:0");
        // 3 tokens at 10 a day: full again in 0.3 days.
        assert.ok(ttl <= 0.3 * DAY && ttl > 0.3 * DAY - 5_000, `PTTL ${ttl}`);
        assert.equal((await limiter.limit("randomStart", { key: "ivy" })).ok, true);
        assert.equal(await admin.pTTL("ratebound:{randomStart:ivy}:0"), -1, "no TTL: its ts holds the phase of its windows");
      }));

    test("a server that goes away fails the call closed with a RedisStoreError within the timeout", { timeout: 20_000 }, async () => {
      const doomed = await startRedis();
      const bridge = kind === "@upstash/redis" ? await startUpstashBridge(doomed.url) : undefined;
      const { client, close } = await CLIENTS[kind].open({ redisUrl: doomed.url, bridgeUrl: bridge?.url });
      try {
        const limiter = new RateLimiter(redisStore(client, { timeoutMs: 1_000 }), LIMITS, { now: () => NOW });
        assert.equal((await limiter.limit("daily", { key: "hal" })).ok, true);
        doomed.stop();
        await bridge?.stop();
        const started = Date.now();
        const error = await limiter.limit("daily", { key: "hal" }).catch((caught) => caught);
        assert.ok(error instanceof RedisStoreError, String(error));
        assert.ok(["REDIS_ERROR", "REDIS_TIMEOUT"].includes(error.code), error.code);
        assert.ok(Date.now() - started < 5_000, "failed within the bound");
      } finally {
        doomed.stop();
        await bridge?.stop();
        await close();
      }
    });
  });
}
