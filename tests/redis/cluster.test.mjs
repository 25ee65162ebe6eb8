// ratebound/redis on a real Redis Cluster (three masters with a replica each, on loopback; see
// cluster.mjs), through node-redis `createCluster` and ioredis `Cluster`, current and previous
// majors: many keys over many slots, sharded limits, an all-or-nothing batch over several limits
// with a hash-tagged prefix and the CROSSSLOT error without one, optimistic transactions beside
// the script, and a master killed with its replica promoted.
//
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import calculateSlot from "cluster-key-slot";
import { RateLimiter } from "../../pkg/dist/node.js";
import { DECIDE_SCRIPT, redisKey, redisStore, RedisStoreError } from "../../pkg/dist/redis.js";
import { CLUSTER_CLIENTS, cli, startCluster, until } from "./cluster.mjs";

const NOW = 1_700_000_000_000;
const DAY = 86_400_000;
const perDay = (rate, more = {}) => ({ kind: "token bucket", rate, period: DAY, ...more });
const LIMITS = {
  login: perDay(3),
  sharded: perDay(40, { shards: 8 }),
  perUser: perDay(3),
  daily: perDay(10),
  global: perDay(1000),
  tx: perDay(10, { shards: 4 }),
  llm: perDay(1000),
  failover: perDay(10),
  sliding: { kind: "sliding window", rate: 10, period: DAY },
};
/** A limiter on `store` whose clock stands still, so every count is exact; `random` fixed when given. */
const limiterOn = (store, random) => new RateLimiter(store, LIMITS, random === undefined ? { now: () => NOW } : { now: () => NOW, random });

/** How many keys the masters hold in all, for "nothing was written" checks. */
async function keyCount(cluster) {
  const masters = (await cluster.topology(cluster.nodes[0].port)).filter((node) => node.master && !node.failed);
  const sizes = await Promise.all(masters.map((master) => cli(master.port, "dbsize")));
  return sizes.reduce((sum, size) => sum + Number(size.trim()), 0);
}

/** Tallies settled decisions: admitted, refused, failed (with the codes). */
function tally(outcomes) {
  const seen = { admitted: 0, refused: 0, failed: [] };
  for (const outcome of outcomes) {
    if (outcome.status === "rejected") seen.failed.push(outcome.reason?.code ?? String(outcome.reason));
    else if (outcome.value.ok) seen.admitted++;
    else seen.refused++;
  }
  return seen;
}

/** How many EVALSHA calls every master ran since `reset` (which zeroes their counts first). */
async function evalshaCalls(cluster, reset = false) {
  const masters = (await cluster.topology(cluster.nodes[0].port)).filter((node) => node.master && !node.failed);
  const counts = await Promise.all(
    masters.map(async (master) => {
      if (reset) {
        await cli(master.port, "script", "load", DECIDE_SCRIPT);
        await cli(master.port, "config", "resetstat");
        return 0;
      }
      return Number(/cmdstat_evalsha:calls=(\d+)/.exec(await cli(master.port, "info", "commandstats"))?.[1] ?? 0);
    }),
  );
  return counts.reduce((sum, count) => sum + count, 0);
}

describe("ratebound/redis on a real Redis Cluster (3 masters, 3 replicas)", () => {
  let cluster;
  before(async () => {
    cluster = await startCluster();
  });
  after(() => cluster?.stop());

  for (const [kind, { open }] of Object.entries(CLUSTER_CLIENTS)) {
    describe(`through ${kind}`, () => {
      let client;
      let close;
      before(async () => ({ client, close } = await open(cluster.rootNodes)));
      after(() => close?.());
      const tag = kind.replace(/\W+/g, "-");

      test("300 keys over the three masters, 5 concurrent limits on each: exactly the bound of 3 admitted per key, one EVALSHA per slot (the calls of one slot made at once go together)", async () => {
        const limiter = limiterOn(redisStore(client, { prefix: `${tag}:` }));
        const keys = Array.from({ length: 300 }, (_, index) => `user${index}`);
        const slots = new Set(keys.map((key) => calculateSlot(redisKey({ name: "login", key, shard: 0 }, `${tag}:`))));
        const masters = (await cluster.topology(cluster.nodes[0].port)).filter((node) => node.master);
        const inRange = (slot) => (range) => slot >= Number(range.split("-")[0]) && slot <= Number(range.split("-")[1] ?? range);
        assert.equal(masters.filter((master) => [...slots].some((slot) => master.slots.some(inRange(slot)))).length, 3, "the keys span every master");
        await evalshaCalls(cluster, true);
        const outcomes = await Promise.allSettled(keys.flatMap((key) => Array.from({ length: 5 }, () => limiter.limit("login", { key }))));
        assert.deepEqual(tally(outcomes), { admitted: 900, refused: 600, failed: [] });
        assert.equal(await evalshaCalls(cluster), slots.size, "one round trip per slot");
        for (const key of keys.slice(0, 20)) assert.equal(await client.get(redisKey({ name: "login", key, shard: 0 }, `${tag}:`)), `0,${NOW}`);
      });

      test("a sliding window keeps its two windows in one slot: 40 concurrent calls admit exactly 10, through the store's transaction", async () => {
        const limiter = limiterOn(redisStore(client, { prefix: `${tag}:`, maxAttempts: 200, maxDelayMs: 20 }));
        const refs = [0, 1].map((shard) => redisKey({ name: "sliding", key: "win", shard }, `${tag}:`));
        assert.equal(calculateSlot(refs[0]), calculateSlot(refs[1]));
        const outcomes = await Promise.allSettled(Array.from({ length: 40 }, () => limiter.limit("sliding", { key: "win" })));
        assert.deepEqual(tally(outcomes), { admitted: 10, refused: 30, failed: [] });
        const window = Math.floor(NOW / DAY);
        assert.equal(await client.get(refs[window % 2]), `10,${window * DAY}`);
      });

      test("a sharded limit keeps its shards in one slot: 80 concurrent calls on 8 shards never take more than the bound, and the shards account for every token taken", async () => {
        const limiter = limiterOn(redisStore(client, { prefix: `${tag}:` }));
        const outcomes = await Promise.allSettled(Array.from({ length: 80 }, () => limiter.limit("sharded", { key: "team" })));
        const seen = tally(outcomes);
        assert.deepEqual(seen.failed, []);
        assert.ok(seen.admitted <= 40 && seen.admitted >= 30, `admitted ${seen.admitted}`);
        let taken = 0;
        for (let shard = 0; shard < 8; shard++) {
          const stored = await client.get(redisKey({ name: "sharded", key: "team", shard }, `${tag}:`));
          if (stored !== null) taken += 5 - Number(stored.split(",")[0]);
        }
        assert.ok(Math.abs(taken - seen.admitted) < 1e-9, `the shards lost ${taken} tokens for ${seen.admitted} admitted`);
        const { value } = await limiter.getValue("sharded", { key: "team", sampleShards: 8 });
        assert.ok(Math.abs(value - (40 - seen.admitted)) < 1e-9, `getValue sees ${value} left`);
      });

      test('limitAll over two limits and a global one with a hash-tagged prefix "{rl}:": racing batches admit exactly the smallest bound', async () => {
        const prefix = `{rl-${tag}}:`;
        const limiter = limiterOn(redisStore(client, { prefix }));
        const batch = [{ name: "perUser", key: "bo" }, { name: "daily", key: "bo" }, { name: "global" }];
        const outcomes = await Promise.allSettled(Array.from({ length: 20 }, () => limiter.limitAll(batch)));
        assert.deepEqual(tally(outcomes), { admitted: 3, refused: 17, failed: [] });
        assert.equal(await client.get(redisKey({ name: "daily", key: "bo", shard: 0 }, prefix)), `7,${NOW}`);
        assert.equal(await client.get(redisKey({ name: "global", shard: 0 }, prefix)), `997,${NOW}`);
      });

      test("the same limitAll without a hash-tagged prefix fails closed with REDIS_CROSSSLOT, a message saying what to do, and nothing written", async () => {
        const prefix = `${tag}:`;
        const limiter = limiterOn(redisStore(client, { prefix }));
        const keys = ["perUser", "daily"].map((name) => redisKey({ name, key: "cy", shard: 0 }, prefix));
        assert.notEqual(calculateSlot(keys[0]), calculateSlot(keys[1]), "the two limits' keys are in different slots");
        const before = await keyCount(cluster);
        const error = await limiter.limitAll([{ name: "perUser", key: "cy" }, { name: "daily", key: "cy" }]).catch((caught) => caught);
        assert.ok(error instanceof RedisStoreError, String(error));
        assert.equal(error.code, "REDIS_CROSSSLOT");
        assert.match(error.message, /nothing was written/);
        assert.match(error.message, /prefix: "\{rl\}:"/);
        assert.equal(await keyCount(cluster), before);
        assert.deepEqual(await Promise.all(keys.map((key) => client.get(key))), [null, null]);
      });

      test("getValue, reset and grants (optimistic transactions) read what the script wrote and write what it reads, on the same keys", async () => {
        const prefix = `${tag}:`;
        const limiter = limiterOn(redisStore(client, { prefix }));
        // Shards of 2.5 tokens taken 1 at a time: any two of them hold at least 1 together, so all 5 are granted.
        for (let index = 0; index < 5; index++) assert.equal((await limiter.limit("tx", { key: "dee" })).ok, true);
        const { value } = await limiter.getValue("tx", { key: "dee", sampleShards: 4 });
        assert.ok(Math.abs(value - 5) < 1e-9, `getValue reads ${value} tokens left`);
        const granted = await limiter.limit("llm", { key: "dee", count: 300, grant: true });
        assert.equal(granted.ok, true);
        assert.equal((await limiter.limit("llm", { key: "dee", count: 700 })).ok, true, "the script sees what the grant's transaction took");
        assert.equal((await limiter.limit("llm", { key: "dee", count: 1 })).ok, false);
        const settled = await granted.grant.settle(100);
        assert.equal(settled.refunded, 200);
        assert.equal((await limiter.limit("llm", { key: "dee", count: 200 })).ok, true, "the refund is there for the script");
        await limiter.reset("tx", { key: "dee" });
        const left = await Promise.all([0, 1, 2, 3].map((shard) => client.get(redisKey({ name: "tx", key: "dee", shard }, prefix))));
        assert.deepEqual(left, [null, null, null, null]);
      });
    });
  }
});

describe("ratebound/redis when a Redis Cluster master is killed and its replica promoted", () => {
  for (const kind of ["node-redis createCluster", "ioredis Cluster"]) {
    test(`through ${kind}: calls fail closed while the slot has no master, then go on from the replica's copy, and nothing is admitted past the bound`, { timeout: 60_000 }, async () => {
      const cluster = await startCluster();
      const { client, close } = await CLUSTER_CLIENTS[kind].open(cluster.rootNodes);
      try {
        const limiter = limiterOn(redisStore(client, { timeoutMs: 1_000 }));
        const call = () => limiter.limit("failover", { key: "eve" });
        const before = tally(await Promise.allSettled(Array.from({ length: 6 }, call)));
        assert.deepEqual(before, { admitted: 6, refused: 0, failed: [] });
        // The master serving the key, and its replica, once the replica holds every write.
        const slot = calculateSlot(redisKey({ name: "failover", key: "eve", shard: 0 }));
        const nodes = await cluster.topology(cluster.nodes[0].port);
        const inRange = (range) => slot >= Number(range.split("-")[0]) && slot <= Number(range.split("-")[1] ?? range);
        const master = nodes.find((node) => node.master && node.slots.some(inRange));
        const replica = nodes.find((node) => node.masterId === master.id);
        const offset = async (port, field) => Number(new RegExp(`${field}:(\\d+)`).exec(await cli(port, "info", "replication"))[1]);
        // Every write made so far: the master's offset now (it goes on growing with the cluster's own pings).
        const written = await offset(master.port, "master_repl_offset");
        await until("the replica has every write", async () => (await offset(replica.port, "slave_repl_offset")) >= written);
        cluster.nodes.find((node) => node.port === master.port).stop();
        const during = [];
        const promoted = until("the replica is promoted", async () => /role:master/.test(await cli(replica.port, "info", "replication")), 30_000);
        let done = false;
        promoted.finally(() => (done = true));
        while (!done) {
          during.push(await Promise.allSettled([call()]).then(([outcome]) => outcome));
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        await promoted;
        await until("the cluster serves the slot again", async () => (await Promise.allSettled([call()]).then(([outcome]) => (during.push(outcome), outcome.status === "fulfilled"))), 30_000);
        const afterwards = tally(await Promise.allSettled(Array.from({ length: 8 }, call)));
        const whileDown = tally(during);
        const admitted = before.admitted + whileDown.admitted + afterwards.admitted;
        // A call that timed out may still run once the client reaches the new master: it spends
        // its token and the caller was refused (fail closed), so admitted may fall short by that many.
        const timedOut = whileDown.failed.filter((code) => code === "REDIS_TIMEOUT").length;
        const story = `admitted ${admitted}: before ${before.admitted}, during ${JSON.stringify(whileDown)}, after ${JSON.stringify(afterwards)}`;
        assert.ok(admitted <= 10 && admitted >= 10 - timedOut, story);
        assert.ok(whileDown.failed.every((code) => ["REDIS_ERROR", "REDIS_TIMEOUT"].includes(code)), `failed with ${whileDown.failed}`);
        assert.equal(await cli(replica.port, "get", redisKey({ name: "failover", key: "eve", shard: 0 })).then((text) => text.trim()), `0,${NOW}`);
      } finally {
        await close();
        cluster.stop();
      }
    });
  }
});
