// SvelteKit's handle, rate limited: every request (pages, endpoints, form actions) takes a token of
// the "api" limit of its client's address, in Redis; a 429 past the limit, a 503 when Redis is down.
import { createClient } from "redis";
import { MINUTE, RateLimiter } from "ratebound";
import { redisStore } from "ratebound/redis";
import { ipKey, sveltekitRateLimit } from "ratebound/http";

const client = createClient({ url: process.env.REDIS_URL });
client.on("error", (error) => console.error("redis:", error.message)); // an outage is logged, never a crash

/** Runs once, before the first request (SvelteKit 2.10 and later). */
export async function init() {
  await client.connect();
}

const limiter = new RateLimiter(redisStore(client, { timeoutMs: 500 }), {
  api: { kind: "token bucket", rate: 60, period: MINUTE, capacity: 10 },
});

export const handle = sveltekitRateLimit(limiter, "api", {
  key: (event) => ipKey(event.getClientAddress()), // the adapter's client address; IPv6 by its /56
  onError: (error) => console.error("rate limit store:", error.message), // Redis down: the request gets a 503
});
