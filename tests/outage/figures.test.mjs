// Figures while degraded, on a real redis-server killed mid-run (Debian's, on a free loopback
// port): the memory fallback decides, so its answers carry the core's figures like any decision
// (limit and limitAll), and an Express guard on loopback keeps sending the RateLimit fields while
// Redis is down; "open" decides nothing and sends none. And docs/migrate-from-rate-limiter-flexible.md's
// own sample (examples/redis/login.mjs), run as a user would in its own process, answers through
// the outage instead of throwing a TypeError on the missing figures.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import express from "express";
import { createClient } from "redis";
import { RateLimiter } from "../../pkg/dist/node.js";
import { expressRateLimit } from "../../pkg/dist/http.js";
import { redisStore } from "../../pkg/dist/redis.js";
import { startRedis } from "../redis/servers.mjs";
import { eventually } from "./stores.mjs";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const NOW = 1_700_000_000_000;
const BUCKET = { kind: "token bucket", rate: 3, period: 60_000 };
const LIMITS = {
  feed: { ...BUCKET, onStoreError: { fallback: "memory" } },
  search: { ...BUCKET, onStoreError: "open" },
};

/** A node-redis client that fails a command at once while disconnected and reconnects every 50 ms. */
async function connect(url) {
  const client = createClient({ url, disableOfflineQueue: true, socket: { reconnectStrategy: () => 50, connectTimeout: 1_000 } });
  client.on("error", () => {});
  await client.connect();
  return client;
}

/** Serves `app` on loopback; resolves with its base URL and `close()`. */
async function serve(app) {
  const server = await new Promise((resolve) => {
    const listening = app.listen(0, "127.0.0.1", () => resolve(listening));
  });
  return { base: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((resolve) => server.close(resolve)) };
}

describe("the memory fallback's figures on a redis-server killed mid-run", () => {
  let server;
  let client;
  before(async () => {
    server = await startRedis();
    client = await connect(server.url);
  });
  after(() => {
    if (client?.isOpen) client.destroy();
    server?.stop();
  });

  test("limit and limitAll answer the fallback's figures; an Express guard sends RateLimit fields from them, and none under open", { timeout: 30_000 }, async () => {
    const limiter = new RateLimiter(redisStore(client), LIMITS, { now: () => NOW });
    const reported = [];
    const app = express();
    app.get("/feed", expressRateLimit(limiter, "feed", { onError: (error) => reported.push(error.code) }), (req, res) => res.send("feed"));
    app.get("/search", expressRateLimit(limiter, "search", { onError: (error) => reported.push(error.code) }), (req, res) => res.send("search"));
    const http = await serve(app);
    try {
      const before = await fetch(`${http.base}/feed`);
      assert.equal(before.headers.get("ratelimit"), '"feed";r=2;t=20', "Redis decides before the outage");

      server.stop(); // SIGKILL: the connection drops
      await eventually(() => !client.isReady);
      const first = await limiter.limit("feed", { key: "u1", figures: true });
      assert.equal(first.degraded, "store-error");
      assert.deepEqual(first.figures, { limit: 3, remaining: 2, reset: 20, window: 60, sampled: 1, effectiveWindow: 20 }, "the fallback decided, on its own full state");
      const batch = await limiter.limitAll([{ name: "feed", key: "u2", count: 3 }], { figures: true });
      assert.deepEqual([batch.ok, batch.degraded, batch.figures], [true, "store-error", [{ limit: 3, remaining: 0, reset: 60, window: 60, sampled: 1, effectiveWindow: 20 }]]);
      const refused = await limiter.limit("feed", { key: "u2", figures: true });
      assert.deepEqual([refused.ok, refused.figures.retryAfter], [false, 20], "a refusal on the fallback has its figures and Retry-After");
      const open = await limiter.limit("search", { key: "u1", figures: true });
      assert.deepEqual([open.ok, open.degraded, "figures" in open], [true, "store-error", false], "open decides nothing: no figures");

      // The guard: one limit for everyone (no key), the fallback counts down from full.
      const seen = [];
      for (let sent = 0; sent < 4; sent++) {
        const response = await fetch(`${http.base}/feed`);
        seen.push([response.status, response.headers.get("ratelimit"), response.headers.get("retry-after")]);
      }
      assert.deepEqual(seen, [
        [200, '"feed";r=2;t=20', null],
        [200, '"feed";r=1;t=40', null],
        [200, '"feed";r=0;t=60', null],
        [429, '"feed";r=0;t=60', "20"],
      ]);
      const search = await fetch(`${http.base}/search`);
      assert.deepEqual([search.status, search.headers.get("ratelimit"), search.headers.get("ratelimit-policy")], [200, null, null], "open: admitted without fields");
      assert.ok(reported.length === 5 && reported.every((code) => code === "REDIS_ERROR"), `every degraded answer reported its cause (${reported})`);
    } finally {
      await http.close();
    }
  });
});

describe("docs/migrate-from-rate-limiter-flexible.md's sample (examples/redis/login.mjs) through an outage", () => {
  let server;
  let dir;
  let child;
  let answers;
  before(async () => {
    server = await startRedis();
    dir = mkdtempSync(join(tmpdir(), "ratebound-example-login-"));
    copyFileSync(join(repo, "examples", "redis", "login.mjs"), join(dir, "login.mjs"));
    copyFileSync(join(repo, "examples", "redis", "package.json"), join(dir, "package.json"));
    mkdirSync(join(dir, "node_modules"));
    symlinkSync(join(repo, "pkg"), join(dir, "node_modules", "ratebound"), "dir");
    symlinkSync(join(repo, "node_modules", "redis"), join(dir, "node_modules", "redis"), "dir");
    // The app around the sample: one line in (an address), its answer out, as JSON; a throw is an answer too.
    const driver = `import { createInterface } from "node:readline";
const { mayLogIn } = await import("./login.mjs");
for await (const ip of createInterface({ input: process.stdin })) {
  const answer = await mayLogIn(ip).then((result) => ({ result }), (error) => ({ threw: String(error) }));
  console.log(JSON.stringify(answer));
}`;
    child = spawn(process.execPath, ["--input-type=module", "-e", driver], { cwd: dir, env: { ...process.env, REDIS_URL: server.url }, stdio: ["pipe", "pipe", "ignore"] });
    const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
    answers = async (ip) => {
      child.stdin.write(`${ip}\n`);
      const { value } = await lines.next();
      return JSON.parse(value);
    };
  });
  after(() => {
    child?.kill("SIGKILL");
    server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("before, during and without Redis: every answer has remaining or retryAfter, none throws", { timeout: 30_000 }, async () => {
    assert.deepEqual(await answers("203.0.113.7"), { result: { ok: true, remaining: 4 } }, "Redis decides");
    server.stop();
    await new Promise((resolve) => setTimeout(resolve, 300)); // the sample's client sees the connection drop
    const during = [];
    for (let attempt = 0; attempt < 6; attempt++) during.push(await answers("203.0.113.7"));
    assert.deepEqual(during.slice(0, 5).map(({ result }) => result), [4, 3, 2, 1, 0].map((remaining) => ({ ok: true, remaining })), "the fallback decides, from full");
    assert.equal(during[5].result.ok, false, JSON.stringify(during[5]));
    assert.ok(during[5].result.retryAfter > 0, JSON.stringify(during[5]));
  });
});
