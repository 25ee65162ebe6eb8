// docs/migrate-from-rate-limiter-flexible.md's side-by-side, ratebound's half: a login limit on
// Redis that decides in memory while Redis is down (rate-limiter-flexible's insuranceLimiter).
// tests/outage/redis.test.mjs runs it against a real redis-server, killed mid-run.
//
//   REDIS_URL=redis://127.0.0.1:6379 node -e 'import("./login.mjs").then(({ mayLogIn }) => mayLogIn("203.0.113.7")).then(console.log)'
import { MINUTE, RateLimiter } from "ratebound";
import { redisStore } from "ratebound/redis";
import { createClient } from "redis";

const client = createClient({ url: process.env.REDIS_URL, disableOfflineQueue: true });
client.on("error", (error) => console.error("redis:", error.message));
await client.connect();
const limiter = new RateLimiter(redisStore(client), {
  login: { kind: "fixed window", rate: 5, period: 15 * MINUTE, onStoreError: { fallback: "memory" } },
});

/**
 * Whether `ip` may try to log in now; how many tries are left, or how long to wait.
 * @param {string} ip
 */
export async function mayLogIn(ip) {
  const { ok, retryAfter, figures } = await limiter.limit("login", { key: ip, figures: true });
  // Every decision has figures, the fallback's too: only `onStoreError: "open"` admits without any,
  // and this limit declares its policy, so TypeScript knows `figures` is there.
  return ok ? { ok, remaining: figures.remaining } : { ok, retryAfter };
}
