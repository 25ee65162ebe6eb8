// README's quick starts (examples/http), run as a user runs them: Express + node-redis in Node and
// Hono + ioredis in Bun, each in its own process against a real redis-server on loopback, with the
// built package installed beside the real clients. Allowed with headers, refused with Retry-After,
// failed logins counted and successful ones refunded, Redis stopped: 503 and the process lives on,
// Redis back: allowed again.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort, startRedis } from "../redis/servers.mjs";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const QUICK_STARTS = [
  { name: "Express + node-redis in Node", file: "express-redis.mjs", command: process.execPath, packages: ["express", "redis"] },
  { name: "Hono + ioredis in Bun", file: "hono-ioredis.mjs", command: join(repo, "node_modules", ".bin", "bun"), packages: ["hono", "ioredis"] },
];

for (const quickStart of QUICK_STARTS) {
  describe(`README's quick start: ${quickStart.name}`, () => {
    let redis;
    let dir;
    let child;
    let base;
    let stderr = "";

    before(async () => {
      redis = await startRedis();
      dir = mkdtempSync(join(tmpdir(), "ratebound-quickstart-"));
      copyFileSync(join(repo, "examples", "http", quickStart.file), join(dir, quickStart.file));
      copyFileSync(join(repo, "examples", "http", "package.json"), join(dir, "package.json"));
      mkdirSync(join(dir, "node_modules"));
      // A copy of the built package, as npm installs it; the clients and frameworks as installed here.
      cpSync(join(repo, "pkg"), join(dir, "node_modules", "ratebound"), { recursive: true });
      for (const name of quickStart.packages) symlinkSync(join(repo, "node_modules", name), join(dir, "node_modules", name), "dir");
      const port = await freePort();
      child = spawn(quickStart.command, [quickStart.file], { cwd: dir, env: { ...process.env, REDIS_URL: redis.url, PORT: String(port), DO_NOT_TRACK: "1" }, stdio: ["ignore", "pipe", "pipe"] });
      child.stderr.setEncoding("utf8").on("data", (chunk) => (stderr += chunk));
      await new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${quickStart.file} did not start within 15 s: ${stderr}`)), 15_000);
        child.on("exit", (code) => reject(new Error(`${quickStart.file} exited with ${code}: ${stderr}`)));
        child.stdout.setEncoding("utf8").on("data", (chunk) => {
          if (chunk.includes("listening")) {
            clearTimeout(timer);
            resolve();
          }
        });
      });
      base = `http://127.0.0.1:${port}`;
    });

    after(async () => {
      child?.kill("SIGKILL");
      redis?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    const login = async (password) => {
      const response = await fetch(`${base}/login`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ password }) });
      await response.arrayBuffer();
      await sleep(20); // Express refunds once the response is sent: let it land before the next attempt
      return response;
    };

    test("an API request is allowed with draft-10 RateLimit fields", async () => {
      const response = await fetch(`${base}/api/hello`);
      assert.equal(response.status, 200);
      assert.deepEqual(await response.json(), { hello: "world" });
      assert.equal(response.headers.get("ratelimit-policy"), '"api";q=100;w=60');
      assert.match(response.headers.get("ratelimit"), /^"api";r=99;t=1$/);
    });

    test("logins: successes are refunded, 5 failures per 15 minutes, then 429 with Retry-After", async () => {
      for (let attempt = 0; attempt < 8; attempt++) assert.equal((await login("correct horse")).status, 200, `success ${attempt + 1} takes nothing`);
      for (let attempt = 0; attempt < 5; attempt++) assert.equal((await login(`guess ${attempt}`)).status, 401);
      const refused = await login("guess 6");
      assert.equal(refused.status, 429);
      assert.ok(Number(refused.headers.get("retry-after")) > 0);
      assert.equal((await login("correct horse")).status, 429, "the budget is spent: even the right password waits");
    });

    test("Redis stopped: 503 with Retry-After and a problem document, logged, and the process lives on; Redis back: allowed again", async () => {
      redis.stop();
      const response = await fetch(`${base}/api/hello`);
      assert.equal(response.status, 503);
      assert.equal(response.headers.get("retry-after"), "5");
      assert.equal(response.headers.get("content-type"), "application/problem+json");
      assert.equal((await response.json()).status, 503);
      assert.equal(child.exitCode, null, "the process is alive");
      assert.match(stderr, /rate limit store:/, "the error reached the app's log");
      redis = await startRedis({ port: redis.port });
      let status;
      for (let tries = 0; tries < 50 && status !== 200; tries++) {
        await sleep(200);
        const again = await fetch(`${base}/api/hello`);
        await again.arrayBuffer();
        status = again.status;
      }
      assert.equal(status, 200, `allowed once Redis is back: ${stderr.slice(-500)}`);
    });
  });
}
