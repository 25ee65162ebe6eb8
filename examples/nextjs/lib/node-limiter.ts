// The Node.js runtime's limiter (the proxy and /api/node): node-redis. The client is made and
// connected on the first request, not when `next build` loads the module.
import { MINUTE, RateLimiter } from "ratebound";
import { redisStore } from "ratebound/redis";
import { createClient } from "redis";

const LIMITS = {
  // Every /api request, per client address: a flood guard. With Redis down it keeps limiting,
  // per server instance, in memory; the routes' own limits fail closed (503).
  api: { kind: "token bucket", rate: 10, period: MINUTE, onStoreError: { fallback: "memory" } },
  // What /api/node does, per client address.
  send: { kind: "token bucket", rate: 3, period: MINUTE },
} as const;

let limiter: RateLimiter<typeof LIMITS> | undefined;

/** The limiter, with its node-redis client (made on first use). */
export function nodeLimiter(): RateLimiter<typeof LIMITS> {
  if (limiter) return limiter;
  const client = createClient({ url: process.env.REDIS_URL });
  client.on("error", (error: Error) => console.error("redis:", error.message)); // an outage is logged, never a crash
  client.connect().catch(() => {}); // commands wait for the connection; timeoutMs bounds the wait
  limiter = new RateLimiter(redisStore(client, { timeoutMs: 500 }), LIMITS);
  return limiter;
}
