// README's Express quick start: node-redis, an API limit per client address, a login limit that
// counts only failed attempts, and a 503 when Redis is down. Run with REDIS_URL and PORT.
import express from "express";
import { createClient } from "redis";
import { MINUTE, RateLimiter } from "ratebound";
import { redisStore } from "ratebound/redis";
import { expressRateLimit, ipKey } from "ratebound/http";

const client = createClient({ url: process.env.REDIS_URL });
client.on("error", (error) => console.error("redis:", error.message)); // an outage is logged, never a crash
await client.connect();

const limiter = new RateLimiter(redisStore(client, { timeoutMs: 500 }), {
  api: { kind: "token bucket", rate: 100, period: MINUTE },
  login: { kind: "fixed window", rate: 5, period: 15 * MINUTE },
});

const app = express();
app.set("trust proxy", 1); // one proxy (your load balancer) in front: req.ip is its client's address
/** @type {import("ratebound/http").HttpGuardOptions<import("express").Request>} */
const perClient = {
  key: (req) => ipKey(req.ip), // IPv4 as is, IPv6 by its /56
  onError: (error) => console.error("rate limit store:", error.message), // Redis down: the request gets a 503
};
app.use("/api", expressRateLimit(limiter, "api", perClient));
app.get("/api/hello", (req, res) => res.json({ hello: "world" }));
// 5 failed logins per 15 minutes per client; a successful login gives its token back.
app.post("/login", express.json(), expressRateLimit(limiter, "login", { ...perClient, refundSuccessful: true }), (req, res) => {
  if (req.body?.password === "correct horse") res.json({ welcome: true });
  else res.status(401).json({ error: "wrong password" });
});

const port = Number(process.env.PORT ?? 3000);
app.listen(port, () => console.log(`listening on http://localhost:${port}`));
