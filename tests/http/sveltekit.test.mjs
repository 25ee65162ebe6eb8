// examples/http/sveltekit as a user runs it: a real SvelteKit 2 app (Svelte 5, Vite 7) built with
// `vite build` and served by `vite preview`, its hooks.server.js guarding every request with
// sveltekitRateLimit on a real redis-server on loopback. Pages and endpoints carry the draft-10
// fields, the request past the bound is a 429 with Retry-After, failed logins count and
// successful ones are refunded, Redis stopped is a 503 with
// Retry-After (logged, the server lives on), Redis back is allowed again. The build takes about
// 20 s here; it runs once, in a scratch copy with the built package installed beside the real
// framework.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { connect } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort, startRedis } from "../redis/servers.mjs";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const vite = join(repo, "node_modules", "vite", "bin", "vite.js");
const PACKAGES = ["@sveltejs/kit", "@sveltejs/vite-plugin-svelte", "svelte", "vite", "redis"];
const BUILD_TIMEOUT_MS = 180_000;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `node vite.js build` in `cwd` in its own process group; resolves with its output once it exits 0. */
function buildOnce(cwd) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [vite, "build"], { cwd, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    let timedOut = false;
    for (const stream of [child.stdout, child.stderr]) stream.setEncoding("utf8").on("data", (chunk) => (output += chunk));
    const timer = setTimeout(() => ((timedOut = true), process.kill(-child.pid, "SIGKILL")), BUILD_TIMEOUT_MS);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(output);
      else reject(Object.assign(new Error(`vite build exited with ${code ?? signal}:\n${output}`), { aborted: signal !== null && !timedOut }));
    });
  });
}

/**
 * The build, once more when Node itself aborted it (Node 20 can fail an assertion in `fs.access`
 * as vite's process exits, after the build wrote its output: seen once in CI); any other failure,
 * or a second abort, fails the suite.
 */
async function build(cwd) {
  try {
    return await buildOnce(cwd);
  } catch (error) {
    if (!error.aborted) throw error;
    return buildOnce(cwd);
  }
}

describe("SvelteKit: examples/http/sveltekit built with vite build, served by vite preview", () => {
  let redis;
  let dir;
  let preview;
  let base;
  let stderr = "";

  before(async () => {
    redis = await startRedis();
    dir = mkdtempSync(join(tmpdir(), "ratebound-sveltekit-"));
    cpSync(join(repo, "examples", "http", "sveltekit"), dir, { recursive: true });
    mkdirSync(join(dir, "node_modules", "@sveltejs"), { recursive: true });
    // A copy of the built package, as npm installs it; the framework and the client as installed here.
    cpSync(join(repo, "pkg"), join(dir, "node_modules", "ratebound"), { recursive: true });
    for (const name of PACKAGES) symlinkSync(join(repo, "node_modules", name), join(dir, "node_modules", name), "dir");
    const started = Date.now();
    await build(dir);
    console.log(`# vite build: ${((Date.now() - started) / 1000).toFixed(1)} s`);
    const port = await freePort();
    preview = spawn(process.execPath, [vite, "preview", "--host", "127.0.0.1", "--port", String(port), "--strictPort"], {
      cwd: dir,
      detached: true,
      env: { ...process.env, REDIS_URL: redis.url },
      stdio: ["ignore", "pipe", "pipe"],
    });
    preview.stderr.setEncoding("utf8").on("data", (chunk) => (stderr += chunk));
    // Ready when it answers: under CI=true vite prints no banner to wait for.
    let exited;
    preview.on("exit", (code) => (exited = code));
    for (const deadline = Date.now() + 30_000; ; await sleep(200)) {
      if (exited !== undefined) throw new Error(`vite preview exited with ${exited}: ${stderr}`);
      if (Date.now() > deadline) throw new Error(`vite preview did not answer within 30 s: ${stderr}`);
      // A TCP connection, not a request: every request takes a token of the budget under test.
      const listening = await new Promise((resolve) => {
        const socket = connect(port, "127.0.0.1", () => (socket.destroy(), resolve(true)));
        socket.on("error", () => resolve(false));
      });
      if (listening) break;
    }
    base = `http://127.0.0.1:${port}`;
  });

  after(() => {
    if (preview?.exitCode === null) process.kill(-preview.pid, "SIGKILL");
    redis?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("an endpoint and a page are allowed with the draft-10 RateLimit fields of one budget", async () => {
    const api = await fetch(`${base}/api/hello`);
    assert.equal(api.status, 200);
    assert.deepEqual(await api.json(), { hello: "world" });
    assert.equal(api.headers.get("ratelimit-policy"), '"api";q=10;w=60');
    assert.equal(api.headers.get("ratelimit"), '"api";r=9;t=1');
    const page = await fetch(`${base}/`);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<h1>hello<\/h1>/);
    assert.match(page.headers.get("ratelimit"), /^"api";r=8;t=[12]$/);
  });

  test("past the bound: a 429 with Retry-After and a problem document; the route never answers", async () => {
    let refused;
    for (let sent = 0; sent < 12 && refused === undefined; sent++) {
      const response = await fetch(`${base}/api/hello`);
      if (response.status === 429) refused = response;
      else await response.arrayBuffer();
    }
    assert.ok(refused, "a request past the bound of 10 was refused");
    assert.ok(Number(refused.headers.get("retry-after")) >= 1);
    assert.equal(refused.headers.get("content-type"), "application/problem+json");
    assert.match(refused.headers.get("ratelimit"), /^"api";r=0;t=\d+$/);
    const body = await refused.json();
    assert.equal(body.status, 429);
    assert.deepEqual(body["violated-policies"], ["api"]);
  });

  test("POST /login under its own limit: successes are refunded, 5 failures per 15 minutes, then 429", async () => {
    const login = async (password) => {
      const response = await fetch(`${base}/login`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ password }) });
      await response.arrayBuffer();
      return response;
    };
    for (let attempt = 0; attempt < 8; attempt++) assert.equal((await login("correct horse")).status, 200, `success ${attempt + 1} takes nothing`);
    for (let attempt = 0; attempt < 5; attempt++) assert.equal((await login(`guess ${attempt}`)).status, 401);
    const refused = await login("guess 6");
    assert.equal(refused.status, 429);
    assert.ok(Number(refused.headers.get("retry-after")) > 0);
    assert.equal((await login("correct horse")).status, 429, "the budget is spent: even the right password waits");
  });

  test("Redis stopped: a 503 with Retry-After, logged, and the server lives on; Redis back: allowed again", async () => {
    redis.stop();
    const response = await fetch(`${base}/api/hello`);
    assert.equal(response.status, 503);
    assert.equal(response.headers.get("retry-after"), "5");
    assert.equal(response.headers.get("content-type"), "application/problem+json");
    assert.equal((await response.json()).status, 503);
    assert.equal(preview.exitCode, null, "the server is alive");
    assert.match(stderr, /rate limit store:/, "the error reached the app's log");
    redis = await startRedis({ port: redis.port });
    let status;
    for (let tries = 0; tries < 50 && status !== 200; tries++) {
      await sleep(200);
      const again = await fetch(`${base}/api/hello`);
      await again.arrayBuffer();
      status = again.status;
    }
    assert.equal(status, 200, `allowed once Redis is back (a new, empty server): ${stderr.slice(-500)}`);
  });
});
