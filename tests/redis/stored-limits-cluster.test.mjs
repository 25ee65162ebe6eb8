// Limits stored in the host on a real Redis Cluster (three masters with a replica each, see
// cluster.mjs), through node-redis createCluster: with a hash-tagged prefix every key and record
// shares one slot and the scenarios hold; without one, a key's records share its states' slot but
// the name's limit lives in the name's, so a call with a key fails closed with REDIS_CROSSSLOT.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { RateLimiter } from "../../pkg/dist/node.js";
import { redisStore } from "../../pkg/dist/redis.js";
import { CLUSTER_CLIENTS, startCluster } from "./cluster.mjs";
import { LIMITS, NOW, storedLimitScenarios } from "../hosts/stored-limits-scenarios.mjs";

describe("stored limits on a real Redis Cluster", () => {
  let cluster;
  const opened = [];
  let scenario = 0;
  before(async () => {
    cluster = await startCluster();
  });
  after(async () => {
    await Promise.all(opened.map(({ close }) => close()));
    cluster?.stop();
  });
  const connect = async () => {
    const connection = await CLUSTER_CLIENTS["node-redis createCluster"].open(cluster.rootNodes);
    opened.push(connection);
    return connection.client;
  };

  describe("with a hash-tagged prefix", () =>
    storedLimitScenarios(test, async () => {
      // A prefix of its own per scenario: the same cluster serves them all.
      const prefix = `{stored-${scenario++}}:`;
      const [first, second] = [await connect(), await connect()];
      return { store: redisStore(first, { prefix }), other: redisStore(second, { prefix }) };
    }));

  test("without one, a call with a key fails closed with REDIS_CROSSSLOT, naming the fix, and writes nothing", async () => {
    const client = await connect();
    const limiter = new RateLimiter(redisStore(client, { prefix: "plain:" }), LIMITS, { now: () => NOW, storedLimits: true });
    const error = await limiter.limit("api", { key: "acme" }).catch((thrown) => thrown);
    assert.equal(error.code, "REDIS_CROSSSLOT", String(error));
    assert.match(error.message, /hash-tagged prefix/);
    assert.equal(await client.get("plain:{api:acme}:0"), null);
    // Without a key, the name's records and its state share the name's slot.
    assert.equal((await limiter.limit("api")).ok, true);
  });
});
