// Concurrency limits with leases on a real redis-server and on a real 6-node Redis Cluster
// (tests/concurrency/scenarios.mjs): each take, release and extend is the store's optimistic
// transaction (GET every slot, then the commit script that checks what was read), each limiter
// on its own connection; a key's slots share one hash slot, so a Cluster runs them too. Not yet
// one EVALSHA: the decision script does not decide concurrency. Concurrent takes grant exactly
// max; the same takes through the store's bare read and write grant more.
import { after, before, describe, test } from "node:test";
import { RateLimiter } from "../../pkg/dist/node.js";
import { redisStore } from "../../pkg/dist/redis.js";
import { CLIENTS, startRedis } from "./servers.mjs";
import { CLUSTER_CLIENTS, startCluster } from "./cluster.mjs";
import { SCENARIOS, checkAndReset, overAdmitsWithoutTransaction } from "../concurrency/scenarios.mjs";
import { bareStore } from "../settle/scenarios.mjs";

/** Registers the scenarios, each limiter on a connection of its own from `connection()`. */
function suite(connection) {
  const clock = { now: 1_700_000_000_000, read: () => clock.now };
  const options = { now: clock.read };
  const harness = {
    clock,
    connect: async (limits) => new RateLimiter(redisStore(await connection(), { maxAttempts: 200, maxDelayMs: 20 }), limits, options),
    bare: async (limits) => new RateLimiter(bareStore(redisStore(await connection())), limits, options),
  };
  for (const [name, scenario] of Object.entries({ ...SCENARIOS, checkAndReset })) test(name, () => scenario(harness));
  test("the same concurrent calls through the store's bare read and write, without its transaction, over-admit", () => overAdmitsWithoutTransaction(harness));
}

describe("concurrency limits on a real redis-server, through node-redis", () => {
  let redis;
  const opened = [];
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    await Promise.all(opened.map(({ close }) => close().catch(() => {})));
    redis?.stop();
  });
  suite(async () => {
    const connected = await CLIENTS["node-redis"].open({ redisUrl: redis.url });
    opened.push(connected);
    return connected.client;
  });
});

describe("concurrency limits on a real Redis Cluster, through node-redis createCluster", () => {
  let cluster;
  const opened = [];
  before(async () => {
    cluster = await startCluster();
  });
  after(async () => {
    await Promise.all(opened.map(({ close }) => close().catch(() => {})));
    cluster?.stop();
  });
  suite(async () => {
    const connected = await CLUSTER_CLIENTS["node-redis createCluster"].open(cluster.rootNodes);
    opened.push(connected);
    return connected.client;
  });
});
