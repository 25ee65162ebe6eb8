// examples/redis, copied as a user would (node_modules/ratebound is the built package), served by
// its own Node process against a real redis-server.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { freePort, startRedis } from "./servers.mjs";

const repo = fileURLToPath(new URL("../../", import.meta.url));
let redis;
let dir;
let server;
let base;

before(async () => {
  redis = await startRedis();
  dir = mkdtempSync(join(tmpdir(), "ratebound-example-redis-"));
  copyFileSync(join(repo, "examples", "redis", "server.mjs"), join(dir, "server.mjs"));
  copyFileSync(join(repo, "examples", "redis", "package.json"), join(dir, "package.json"));
  mkdirSync(join(dir, "node_modules"));
  symlinkSync(join(repo, "pkg"), join(dir, "node_modules", "ratebound"), "dir");
  symlinkSync(join(repo, "node_modules", "redis"), join(dir, "node_modules", "redis"), "dir");
  const port = await freePort();
  server = spawn(process.execPath, [join(dir, "server.mjs")], { cwd: dir, env: { ...process.env, REDIS_URL: redis.url, PORT: String(port) }, stdio: ["ignore", "pipe", "inherit"] });
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the example did not start within 10 s")), 10_000);
    server.on("exit", (code) => reject(new Error(`the example exited with ${code}`)));
    createInterface({ input: server.stdout }).on("line", (line) => {
      if (line.startsWith("listening")) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  base = `http://127.0.0.1:${port}`;
});

after(() => {
  server?.kill("SIGKILL");
  redis?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const post = (user) => fetch(`${base}/posts`, { method: "POST", headers: user ? { "x-user": user } : {}, signal: AbortSignal.timeout(10_000) });

test("examples/redis: 6 posts at once by one user, 3 posted and 3 told when to retry; another user is unaffected", async () => {
  const responses = await Promise.all(Array.from({ length: 6 }, () => post("ada")));
  const statuses = await Promise.all(responses.map(async (response) => (await response.text(), response.status)));
  assert.deepEqual(statuses.sort(), [201, 201, 201, 429, 429, 429]);
  const refused = responses.find((response) => response.status === 429);
  assert.equal(refused.headers.get("retry-after"), "6");
  const bob = await post("bob");
  assert.equal(bob.status, 201);
  const limits = await (await fetch(`${base}/limits`, { headers: { "x-user": "bob" } })).json();
  assert.ok(limits.perUser >= 2 && limits.perUser < 2.1, `bob has 2 posts left (${limits.perUser})`);
});

test("examples/redis: a request without a user is turned away", async () => {
  const response = await post(undefined);
  assert.equal(response.status, 401);
  await response.text();
});

test("examples/redis: with Redis gone, posts fail closed with 503 and Retry-After", async () => {
  redis.stop();
  const response = await post("cy");
  assert.equal(response.status, 503);
  assert.match(await response.text(), /REDIS_(ERROR|TIMEOUT)/);
  assert.equal(response.headers.get("retry-after"), "1");
});
