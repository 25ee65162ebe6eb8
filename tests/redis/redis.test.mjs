// ratebound/redis on a real redis-server (Debian's, started here on a free loopback port and
// killed after): the same suite through node-redis and ioredis, and through @upstash/redis over
// a REST bridge that forwards every command unchanged to that server.
import { after, before, describe } from "node:test";
import { createClient } from "redis";
import { startRedis, startUpstashBridge } from "./servers.mjs";
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
  for (const kind of ["node-redis", "ioredis", "@upstash/redis"]) redisSuite(kind, env);
});
