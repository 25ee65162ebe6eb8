// A Hono app on workerd (bundled by tests/http/http.test.mjs as wrangler would): honoRateLimit in
// front of /api, the clock set per request from `x-now`, and /figures reporting the core's figures;
// and httpGuard on a Durable Object's rateLimiterClient in front of /do, two limits in one call.
import { Hono } from "hono";
import { MemoryStore, RateLimiter, rateLimitFigures } from "ratebound";
import { rateLimiterClient, rateLimiterObject } from "ratebound/durable-object";
import { honoRateLimit, httpGuard } from "ratebound/http";

const clock = { now: 0 };
const limiter = new RateLimiter(new MemoryStore(), { api: { kind: "token bucket", rate: 3, period: 60_000 } }, { now: () => clock.now });

const DO_LIMITS = {
  api: { kind: "token bucket", rate: 3, period: 60_000 },
  burst: { kind: "fixed window", rate: 2, period: 3_600_000, start: 0 },
};
export class Limiter extends rateLimiterObject(DO_LIMITS) {}

const app = new Hono();
app.use("*", async (c, next) => {
  clock.now = Number(c.req.header("x-now") ?? clock.now);
  await next();
});
app.get("/figures", async (c) => c.json(rateLimitFigures(await limiter.getValue("api", { key: c.req.header("x-user") }), clock.now)));
app.use("/api/*", honoRateLimit(limiter, "api", { key: (c) => c.req.header("x-user") }));
app.get("/api/hello", (c) => c.text("hello"));
app.get("/do/hello", async (c) => {
  const stub = c.env.LIMITER.get(c.env.LIMITER.idFromName("one"));
  const guard = httpGuard(rateLimiterClient(stub), ["api", "burst"], { key: (request) => request.headers.get("x-user") ?? undefined });
  const { ok, headers, response } = await guard(c.req.raw);
  if (!ok) return response;
  return new Response("hello", { headers });
});
export default app;
