// README's Hono quick start on Bun (`bun hono-ioredis.mjs`): ioredis, an API limit per client
// address, a login limit that counts only failed attempts, and a 503 when Redis is down.
import { Hono } from "hono";
import { getConnInfo } from "hono/bun";
import { Redis } from "ioredis";
import { MINUTE, RateLimiter } from "ratebound";
import { redisStore } from "ratebound/redis";
import { honoRateLimit, ipKey } from "ratebound/http";

const redis = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379", { maxRetriesPerRequest: 1 });
redis.on("error", (error) => console.error("redis:", error.message)); // an outage is logged, never a crash

const limiter = new RateLimiter(redisStore(redis, { timeoutMs: 500 }), {
  api: { kind: "token bucket", rate: 100, period: MINUTE },
  login: { kind: "fixed window", rate: 5, period: 15 * MINUTE },
});

/** @type {import("ratebound/http").HttpGuardOptions<import("hono").Context>} */
const perClient = {
  // The socket's address; behind a proxy, the address it reports (see docs/http.md: proxies and IPv6).
  key: (c) => ipKey(getConnInfo(c).remote.address), // IPv4 as is, IPv6 by its /56
  onError: (error) => console.error("rate limit store:", error.message), // Redis down: the request gets a 503
};
const app = new Hono();
app.use("/api/*", honoRateLimit(limiter, "api", perClient));
app.get("/api/hello", (c) => c.json({ hello: "world" }));
// 5 failed logins per 15 minutes per client; a successful login gives its token back.
app.post("/login", honoRateLimit(limiter, "login", { ...perClient, refundSuccessful: true }), async (c) => {
  const { password } = await c.req.json();
  return password === "correct horse" ? c.json({ welcome: true }) : c.json({ error: "wrong password" }, 401);
});

const server = Bun.serve({ port: Number(process.env.PORT ?? 3000), fetch: app.fetch });
console.log(`listening on ${server.url}`);
