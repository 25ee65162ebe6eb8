// Hono behind Bun.serve on loopback, guarded by honoRateLimit on a concurrency limit (one request
// in flight per `user`): tests/http/concurrency.test.mjs runs it in Bun and drives it over HTTP.
// /g/hold answers when /release is called, /g/boom throws, /g/ok answers; /held counts the held
// requests and /free?user= says whether a slot is free (taking and releasing one here, where the
// limiter is). Prints `{ port }` once listening.
import { Hono } from "hono";
import { MemoryStore, RateLimiter } from "ratebound";
import { honoRateLimit } from "ratebound/http";

const limiter = new RateLimiter(new MemoryStore(), { inflight: { kind: "concurrency", max: 1, lease: 60_000 } });
const held = [];
const app = new Hono();
app.get("/held", (c) => c.text(String(held.length)));
app.get("/release", (c) => (held.pop()?.(), c.text("released")));
app.get("/free", async (c) => {
  const answer = await limiter.limit("inflight", { key: c.req.query("user") });
  if (answer.ok) await answer.lease.release();
  return c.text(String(answer.ok));
});
app.use("/g/*", honoRateLimit(limiter, "inflight", { key: (c) => c.req.query("user") }));
app.get("/g/hold", async (c) => {
  await new Promise((resolve) => held.push(resolve));
  return c.text("done");
});
app.get("/g/boom", () => {
  throw new Error("the handler failed");
});
app.get("/g/ok", (c) => c.text("ok"));
const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: app.fetch });
console.log(JSON.stringify({ port: server.port }));
