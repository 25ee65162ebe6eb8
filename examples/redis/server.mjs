// A Node HTTP server whose posts are rate limited on Redis: per user, and all users together,
// decided as one batch (limitAll), so a post either takes a token from both limits or from
// neither. Every server process that points at the same Redis shares the limits exactly.
//
//   REDIS_URL=redis://127.0.0.1:6379 PORT=3000 node server.mjs
//   curl -X POST -H 'x-user: ada' localhost:3000/posts
//
// Swap the client freely: `new Redis(url)` from ioredis, or `Redis.fromEnv()` from @upstash/redis
// (for Vercel Edge or Cloudflare Workers, which cannot open TCP sockets) work the same.
import { createServer } from "node:http";
import { createClient } from "redis";
import { MINUTE, RateLimiter, SECOND } from "ratebound";
import { RedisStoreError, redisStore } from "ratebound/redis";

/** The limits: 3 posts in quick succession per user (then one every 6 s), and 100 a second in all. */
export const LIMITS = {
  perUser: { kind: "token bucket", rate: 10, period: MINUTE, capacity: 3 },
  // Sharded: the writers of a busy global limit spread over 10 keys instead of racing for one.
  global: { kind: "token bucket", rate: 100, period: SECOND, shards: 10 },
};

/**
 * The app: `POST /posts` as the user in the `x-user` header, and `GET /limits` for that user's
 * tokens left.
 *
 * @param client A connected node-redis client (or an ioredis / @upstash/redis one).
 * @returns A `node:http` request listener.
 * @example
 * createServer(createApp(await createClient().connect())).listen(3000);
 */
export function createApp(client) {
  // One limiter for the process: each call is its own optimistic transaction on Redis.
  const limiter = new RateLimiter(redisStore(client, { timeoutMs: 1_000 }), LIMITS);
  return async (request, response) => {
    const send = (status, body, headers = {}) => response.writeHead(status, { "content-type": "text/plain", ...headers }).end(body);
    const user = request.headers["x-user"];
    if (typeof user !== "string" || user === "") return send(401, "Who are you? Send an x-user header.");
    try {
      if (request.method === "GET" && request.url === "/limits") {
        const { value } = await limiter.getValue("perUser", { key: user });
        return send(200, JSON.stringify({ perUser: value }), { "content-type": "application/json" });
      }
      if (request.method !== "POST" || request.url !== "/posts") return send(404, "Not found");
      // In Redis Cluster, a batch over different keys needs them in one slot: see docs/redis.md.
      const status = await limiter.limitAll([{ name: "perUser", key: user }, { name: "global" }]);
      if (!status.ok) {
        const seconds = Math.ceil(status.retryAfter / SECOND);
        return send(429, `Too many posts: retry in ${seconds} s`, { "retry-after": String(seconds) });
      }
      return send(201, "Posted");
    } catch (error) {
      // Fail closed: Redis was unreachable, slow, or too contended; nothing was written.
      if (error instanceof RedisStoreError) return send(503, `Busy (${error.code}): retry shortly`, { "retry-after": "1" });
      console.error(error);
      return send(500, "Internal error");
    }
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const client = createClient({ url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379" });
  client.on("error", (error) => console.error("redis:", error.message));
  await client.connect();
  const port = Number(process.env.PORT ?? 3000);
  createServer(createApp(client)).listen(port, "127.0.0.1", () => console.log(`listening on http://127.0.0.1:${port}`));
}
