// A Hono app on workerd (bundled by tests/http/http.test.mjs as wrangler would): honoRateLimit in
// front of /api, the clock set per request from `x-now`, and /figures reporting the core's figures.
import { Hono } from "hono";
import { MemoryStore, RateLimiter, rateLimitFigures } from "ratebound";
import { honoRateLimit } from "ratebound/http";

const clock = { now: 0 };
const limiter = new RateLimiter(new MemoryStore(), { api: { kind: "token bucket", rate: 3, period: 60_000 } }, { now: () => clock.now });

const app = new Hono();
app.use("*", async (c, next) => {
  clock.now = Number(c.req.header("x-now") ?? clock.now);
  await next();
});
app.get("/figures", async (c) => c.json(rateLimitFigures(await limiter.getValue("api", { key: c.req.header("x-user") }), clock.now)));
app.use("/api/*", honoRateLimit(limiter, "api", { key: (c) => c.req.header("x-user"), now: () => clock.now }));
app.get("/api/hello", (c) => c.text("hello"));
export default app;
