// What ratebound/http adds to a decision, on a MemoryStore in Node: a bare `limit`, the guard
// without headers, the guard with draft-10 headers (a getValue and the core's figures), and a
// Hono app.request with and without the middleware. Bounded: 20,000 requests per row.
//
//   node scripts/bench-http.mjs [--pkg DIR]
//
// Each row times its requests in a loop compiled from a source text of its own (see
// scripts/bench/interleave.mjs `fresh`): with one loop for every row, V8 would share the loop's
// type feedback between rows and charge each row for the others' shapes.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Hono } from "hono";
import { fresh } from "./bench/interleave.mjs";
import { installPackage, packageDir } from "./bench/package.mjs";

const N = 20_000;
const WARM = 2_000;

/** The timing loop; each row gets its own copy. Resolves µs per request. */
const LOOP = async (once, warm, n) => {
  for (let i = 0; i < warm; i++) await once(i);
  const started = performance.now();
  for (let i = 0; i < n; i++) await once(i);
  return ((performance.now() - started) * 1000) / n;
};

async function row(label, once) {
  const perRequest = await fresh(LOOP, label)(once, WARM, N);
  console.log(`${label.padEnd(44)} ${perRequest.toFixed(2).padStart(7)} µs/request`);
}

const work = mkdtempSync(join(tmpdir(), "ratebound-bench-http-"));
try {
  const { load } = installPackage(packageDir(), join(work, "project"));
  const { MemoryStore, MINUTE, RateLimiter } = await load("ratebound");
  const { honoRateLimit, httpGuard } = await load("ratebound/http");
  const LIMITS = { api: { kind: "token bucket", rate: 1e9, period: MINUTE } }; // never refuses: every row measures the allowed path
  const limiter = () => new RateLimiter(new MemoryStore(), LIMITS);
  const request = new Request("http://127.0.0.1/", { headers: { "x-user": "ada" } });
  const key = (r) => r.headers.get("x-user") ?? undefined;

  const bare = limiter();
  await row("limiter.limit", (i) => bare.limit("api", { key: `u${i % 1000}` }));
  const none = httpGuard(limiter(), "api", { key, headers: "none" });
  await row('httpGuard, headers: "none"', () => none(request));
  const draft10 = httpGuard(limiter(), "api", { key });
  await row('httpGuard, headers: "draft-10" (default)', () => draft10(request));
  const plain = new Hono().get("/", (c) => c.text("hi"));
  await row("Hono app.request, no middleware", () => plain.request("/", { headers: { "x-user": "ada" } }));
  const guarded = new Hono().use(honoRateLimit(limiter(), "api", { key: (c) => c.req.header("x-user") })).get("/", (c) => c.text("hi"));
  await row("Hono app.request, honoRateLimit (draft-10)", () => guarded.request("/", { headers: { "x-user": "ada" } }));
} finally {
  rmSync(work, { recursive: true, force: true });
}
