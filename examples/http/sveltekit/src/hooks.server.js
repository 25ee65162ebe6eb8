// SvelteKit's handle, rate limited in Redis per client address: POST /login under "login" (5
// failed attempts per 15 minutes, a successful one gives its token back), every other request
// (pages, endpoints, form actions) under "api". A 429 past a limit, a 503 when Redis is down.
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
  login: { kind: "fixed window", rate: 5, period: 15 * MINUTE },
});

const perClient = {
  key: (event) => ipKey(event.getClientAddress()), // the adapter's client address; IPv6 by its /56
  onError: (error) => console.error("rate limit store:", error.message), // Redis down: the request gets a 503
};
const api = sveltekitRateLimit(limiter, "api", perClient);
const login = sveltekitRateLimit(limiter, "login", { ...perClient, refundSuccessful: true });

export const handle = ({ event, resolve }) => (event.url.pathname === "/login" ? login : api)({ event, resolve });
