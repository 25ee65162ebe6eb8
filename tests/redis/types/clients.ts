// Every supported client satisfies redisStore's structural types, with its own published types:
// node-redis (a client and a cluster), ioredis (Redis and Cluster), each in its current major (6)
// and the previous one (5), and @upstash/redis.
import { createClient, createCluster } from "redis";
import { createClient as createClient5, createCluster as createCluster5 } from "redis-5";
import { Redis as IORedis, Cluster } from "ioredis";
import { Redis as IORedis5, Cluster as Cluster5 } from "ioredis-5";
import { Redis as UpstashRedis } from "@upstash/redis";
import { RateLimiter, MINUTE, type RateLimitConfig } from "ratebound";
import { redisStore, RedisStoreError, type RedisErrorCode } from "ratebound/redis";

const LIMITS = { post: { kind: "token bucket", rate: 10, period: MINUTE } } satisfies Record<string, RateLimitConfig>;

export async function all(): Promise<void> {
  const nodeRedis = await createClient({ url: "redis://127.0.0.1:1" }).connect();
  const nodeCluster = createCluster({ rootNodes: [{ url: "redis://127.0.0.1:1" }] });
  const io = new IORedis("redis://127.0.0.1:1");
  const ioCluster = new Cluster([{ host: "127.0.0.1", port: 1 }]);
  const upstash = new UpstashRedis({ url: "https://example.invalid", token: "t" });
  const previous = [
    redisStore(await createClient5({ url: "redis://127.0.0.1:1" }).connect()),
    redisStore(createCluster5({ rootNodes: [{ url: "redis://127.0.0.1:1" }] })),
    redisStore(new IORedis5("redis://127.0.0.1:1")),
    redisStore(new Cluster5([{ host: "127.0.0.1", port: 1 }])),
  ];
  for (const store of [redisStore(nodeRedis), redisStore(nodeCluster), redisStore(io), redisStore(ioCluster), redisStore(upstash, { prefix: "{rl}:" }), ...previous]) {
    const limiter = new RateLimiter(store, LIMITS);
    try {
      const status = await limiter.limit("post", { key: "ada" });
      if (!status.ok) status.retryAfter satisfies number;
    } catch (error) {
      if (error instanceof RedisStoreError) error.code satisfies RedisErrorCode;
    }
  }
  // @ts-expect-error: a limit name that was never defined
  await new RateLimiter(redisStore(io), LIMITS).limit("unknown");
  // @ts-expect-error: not a Redis client
  redisStore({ get: async () => null });
}

// valkey-glide's GlideClient as it is (bun-types is not installed: Bun's RedisClient is checked by its run in Bun).
export async function glideClient(glide: import("@valkey/valkey-glide").GlideClient): Promise<boolean> {
  return (await new RateLimiter(redisStore(glide), { post: { kind: "token bucket", rate: 10, period: 60_000 } }).limit("post", { key: "ada" })).ok;
}
