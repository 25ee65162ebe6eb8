// What ratebound/http adds to a decision, on a MemoryStore in Node: a bare `limit`, the guard
// without headers, the guard with draft-10 headers (a getValue and the core's figures), and a
// Hono app.request with and without the middleware. Bounded: 20,000 requests per row.
//   node scripts/build.mjs --if-stale && node scripts/bench-http.mjs
import { Hono } from "hono";
import { MemoryStore, MINUTE, RateLimiter } from "../pkg/dist/node.js";
import { honoRateLimit, httpGuard } from "../pkg/dist/http.js";

const N = 20_000;
const LIMITS = { api: { kind: "token bucket", rate: 1e9, period: MINUTE } }; // never refuses: every row measures the allowed path
const fresh = () => new RateLimiter(new MemoryStore(), LIMITS);
const request = new Request("http://127.0.0.1/", { headers: { "x-user": "ada" } });
const key = (r) => r.headers.get("x-user") ?? undefined;

async function row(label, once) {
  for (let i = 0; i < 2_000; i++) await once(i); // warm up
  const started = performance.now();
  for (let i = 0; i < N; i++) await once(i);
  const perRequest = ((performance.now() - started) * 1000) / N;
  console.log(`${label.padEnd(44)} ${perRequest.toFixed(2).padStart(7)} µs/request`);
}

const bare = fresh();
await row("limiter.limit", (i) => bare.limit("api", { key: `u${i % 1000}` }));
const none = httpGuard(fresh(), "api", { key, headers: "none" });
await row('httpGuard, headers: "none"', () => none(request));
const draft10 = httpGuard(fresh(), "api", { key });
await row('httpGuard, headers: "draft-10" (default)', () => draft10(request));
const plain = new Hono().get("/", (c) => c.text("hi"));
await row("Hono app.request, no middleware", () => plain.request("/", { headers: { "x-user": "ada" } }));
const guarded = new Hono().use(honoRateLimit(fresh(), "api", { key: (c) => c.req.header("x-user") })).get("/", (c) => c.text("hi"));
await row("Hono app.request, honoRateLimit (draft-10)", () => guarded.request("/", { headers: { "x-user": "ada" } }));
