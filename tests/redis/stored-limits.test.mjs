// Limits stored in the host on a real redis-server (tests/hosts/stored-limits-scenarios.mjs),
// through node-redis and ioredis, two connections a scenario (one limiter each). The records are
// read and checked inside the call's one EVALSHA: the round trips are counted on the server.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createClient } from "redis";
import { redisKey, redisStore } from "../../pkg/dist/redis.js";
import { CLIENTS, startRedis } from "./servers.mjs";
import { KEY_LIMIT_SHARD, pair, storedLimitScenarios } from "../hosts/stored-limits-scenarios.mjs";

describe("stored limits on a real redis-server", () => {
  let redis;
  let admin;
  before(async () => {
    redis = await startRedis();
    admin = createClient({ url: redis.url });
    admin.on("error", () => {});
    await admin.connect();
  });
  after(async () => {
    await admin?.quit().catch(() => {});
    redis?.stop();
  });

  /** Two connections of `kind` to the server, as two stores, over an empty database. */
  const openWith = (kind) => async () => {
    await admin.flushDb();
    const first = await CLIENTS[kind].open({ redisUrl: redis.url });
    const second = await CLIENTS[kind].open({ redisUrl: redis.url });
    return { store: redisStore(first.client), other: redisStore(second.client), close: () => Promise.all([first.close(), second.close()]) };
  };

  for (const kind of ["node-redis", "ioredis"]) describe(`through ${kind}`, () => storedLimitScenarios(test, openWith(kind)));

  /**
   * The commands clients sent since the last reset, by name: the server counts a script's own
   * GETs and SETs too, so those (and the reset itself) are left out; every other is a round trip.
   */
  async function commands() {
    const info = await admin.info("commandstats");
    const counts = {};
    for (const [, name, calls] of info.matchAll(/cmdstat_([a-z|]+):calls=(\d+)/g)) if (!["get", "set", "config|resetstat"].includes(name)) counts[name] = Number(calls);
    await admin.configResetStat();
    return counts;
  }

  test("a call costs one EVALSHA with stored limits as without; after a change, its first call one more", async () => {
    const { store, other, close } = await openWith("node-redis")();
    try {
      const { a, b } = pair(store, other);
      await b.limit("api", { key: "acme" }); // loads the script, and reads that no limit is stored
      await commands();
      assert.deepEqual([(await b.limit("api", { key: "acme" })).ok, (await b.limit("api", { key: "acme" })).ok], [true, true]);
      assert.deepEqual(await commands(), { evalsha: 2 }, "steady state: one round trip a call, nothing else");
      await a.setLimit("api", { kind: "token bucket", rate: 3, period: 60_000 }, { key: "acme" });
      await commands();
      // 7 tokens left, capped at 3: the first call after the change sees the new records and plans again.
      assert.equal((await b.limit("api", { key: "acme" })).ok, true);
      assert.deepEqual(await commands(), { evalsha: 2 }, "the first call after a change: one more round trip");
      const next = [];
      for (let call = 0; call < 3; call++) next.push((await b.limit("api", { key: "acme" })).ok);
      assert.deepEqual(next, [true, true, false]);
      assert.deepEqual(await commands(), { evalsha: 3 });
      // The records sit in the key's hash tag, beside its states (one Cluster slot).
      assert.equal(await admin.get(redisKey({ name: "api", key: "acme", shard: KEY_LIMIT_SHARD })), "3,60000");
      assert.equal(await admin.get(redisKey({ name: "api", key: "acme", shard: KEY_LIMIT_SHARD + 1 })), "3,-1");
    } finally {
      await close();
    }
  });

  test("a record tampered with after a call's plan is caught by the script, which writes nothing, and the call plans again", async () => {
    const { store, other, close } = await openWith("ioredis")();
    try {
      const { a, b } = pair(store, other);
      await a.setLimit("api", { kind: "token bucket", rate: 2, period: 60_000 }, { key: "t" });
      assert.equal((await b.limit("api", { key: "t" })).ok, true);
      // Behind the limiter's back: a record that is no limit. The next call's plan assumed the old one.
      await admin.set(redisKey({ name: "api", key: "t", shard: KEY_LIMIT_SHARD }), "-5,60000");
      const state = await admin.get(redisKey({ name: "api", key: "t", shard: 0 }));
      assert.equal((await b.limit("api", { key: "t" }).catch((error) => error)).code, "CORRUPT_STATE");
      assert.equal(await admin.get(redisKey({ name: "api", key: "t", shard: 0 })), state, "nothing was written");
    } finally {
      await close();
    }
  });
});
