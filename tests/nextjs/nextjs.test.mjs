// examples/nextjs as a user builds and serves it, with no configuration: the packed package
// installed beside next 16, built with `next build` (Turbopack) and `next build --webpack`, each
// served with `next start` in front of a real redis-server (node-redis) and the Upstash REST bridge
// (@upstash/redis on the edge runtime), and hit with real requests: allowed with the RateLimit
// fields, refused with 429 and Retry-After, the proxy's own limit, Redis stopped (the routes
// answer 503, the proxy keeps limiting in memory, the server lives on). The build's artefacts say
// which entry of the package each runtime took: the edge route gets the .wasm as a WebAssembly
// module binding (as Vercel's edge deploys it: no compiling from bytes), the Node.js route and the
// proxy get it inlined.
//
// The app lives outside the repository (a user's project has no parent lockfile), in
// <tmpdir>/ratebound-nextjs-<hash of this checkout>, and keeps its node_modules between runs:
// `npm install` runs when the example's package.json or the tarball changed (a new tarball is a new
// file: spec, so only ratebound is reinstalled). Builds nothing of ratebound: run
// `node scripts/build.mjs` first. RATEBOUND_NEXTJS_BUNDLERS=webpack (or Turbopack) builds one only.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort, startRedis, startUpstashBridge } from "../redis/servers.mjs";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const example = join(repo, "examples", "nextjs");
const app = join(tmpdir(), `ratebound-nextjs-${createHash("sha256").update(repo).digest("hex").slice(0, 12)}`);
const BUILD_TIMEOUT_MS = 8 * 60_000;
const ENV = { NEXT_TELEMETRY_DISABLED: "1", NO_COLOR: "1", CI: "1" };
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const running = new Set();

/** Runs a command to completion in its own process group; rejects with its output on failure. */
function run(command, args, { cwd = app, env = {}, timeoutMs = BUILD_TIMEOUT_MS } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: { ...process.env, ...ENV, ...env }, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    running.add(child);
    let output = "";
    child.stdout.setEncoding("utf8").on("data", (chunk) => (output += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk) => (output += chunk));
    const timer = setTimeout(() => killGroup(child), timeoutMs);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      killGroup(child);
      if (code === 0) resolve(output);
      else reject(new Error(`${command} ${args.join(" ")} exited with ${code ?? signal}:\n${output}`));
    });
  });
}

function killGroup(child) {
  running.delete(child);
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    // already gone
  }
}

process.on("exit", () => running.forEach(killGroup));

/** Copies the example's sources into the app (keeping node_modules), with ratebound from `tarball`. */
function syncApp(tarball) {
  mkdirSync(app, { recursive: true });
  for (const entry of readdirSync(app)) {
    if (!["node_modules", "package-lock.json", ".install-stamp"].includes(entry)) rmSync(join(app, entry), { recursive: true, force: true });
  }
  cpSync(example, app, { recursive: true, filter: (source) => !/[\\/](node_modules|\.next)$/.test(source) });
  const manifest = JSON.parse(readFileSync(join(example, "package.json"), "utf8"));
  manifest.dependencies.ratebound = `file:./${tarball}`;
  writeFileSync(join(app, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  return manifest;
}

/** `npm install` in the app, unless its package.json is what the last install installed. */
async function install() {
  const wanted = readFileSync(join(app, "package.json"), "utf8");
  const stamp = join(app, ".install-stamp");
  if (existsSync(stamp) && readFileSync(stamp, "utf8") === wanted && existsSync(join(app, "node_modules", "next"))) return "reused";
  await run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"], { timeoutMs: 10 * 60_000 });
  writeFileSync(stamp, wanted);
  return "installed";
}

let tarballName;

before(async () => {
  assert.ok(existsSync(join(repo, "pkg", "dist", "wasm", "ratebound.wasm")), "pkg/ is not built: run `node scripts/build.mjs` first");
  const packDir = join(app, ".pack");
  rmSync(packDir, { recursive: true, force: true });
  mkdirSync(packDir, { recursive: true });
  const packed = JSON.parse(await run("npm", ["pack", join(repo, "pkg"), "--pack-destination", packDir, "--json", "--loglevel=error"], { cwd: repo }));
  const bytes = readFileSync(join(packDir, packed[0].filename));
  tarballName = `ratebound-${createHash("sha256").update(bytes).digest("hex").slice(0, 12)}.tgz`;
  syncApp(tarballName);
  writeFileSync(join(app, tarballName), bytes);
  rmSync(packDir, { recursive: true, force: true });
  const started = Date.now();
  const how = await install();
  console.log(`# ${app}: dependencies ${how} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
});

after(() => running.forEach(killGroup));

/** Starts `next start` on a free port with the stores' addresses; resolves once it answers. */
async function serve(env) {
  const port = await freePort();
  const child = spawn(join(app, "node_modules", ".bin", "next"), ["start", "-p", String(port), "-H", "127.0.0.1"], {
    cwd: app,
    env: { ...process.env, ...ENV, ...env },
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.add(child);
  let output = "";
  child.stdout.setEncoding("utf8").on("data", (chunk) => (output += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk) => (output += chunk));
  const base = `http://127.0.0.1:${port}`;
  for (const deadline = Date.now() + 60_000; ; ) {
    if (child.exitCode !== null) throw new Error(`next start exited with ${child.exitCode}:\n${output}`);
    const ok = await fetch(`${base}/`).then((response) => response.ok, () => false);
    if (ok) break;
    if (Date.now() > deadline) throw new Error(`next start did not answer within 60 s:\n${output}`);
    await sleep(200);
  }
  return { base, output: () => output, stop: () => killGroup(child) };
}

/** GET `path` as the client at `address` (the platform in front sets X-Forwarded-For). */
async function get(base, path, address) {
  const response = await fetch(`${base}${path}`, { headers: { "x-forwarded-for": address } });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, json: () => JSON.parse(text) };
}

/** Asserts a response carries one limit's RateLimit fields (draft 10) and returns its remaining. */
function fields(response, name, quota) {
  assert.equal(response.headers.get("ratelimit-policy"), `"${name}";q=${quota};w=60`);
  const match = new RegExp(`^"${name}";r=(\\d+);t=(\\d+)$`).exec(response.headers.get("ratelimit") ?? "");
  assert.ok(match, `RateLimit is one "${name}" item: ${response.headers.get("ratelimit")}`);
  return Number(match[1]);
}

/** Asserts a 429 from limit `name`: Retry-After, the fields, and the problem document. */
function assertRefused(response, name, quota) {
  assert.equal(response.status, 429, response.text);
  assert.match(response.headers.get("retry-after") ?? "", /^[1-9]\d*$/);
  assert.equal(fields(response, name, quota), 0);
  assert.match(response.headers.get("content-type") ?? "", /^application\/problem\+json/);
  assert.deepEqual(response.json()["violated-policies"], [name]);
}

/** The files under `dir` (recursively) whose text matches `pattern`. */
function filesMatching(dir, pattern) {
  const found = [];
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !/\.js$/.test(entry.name)) continue;
    const path = join(entry.parentPath ?? entry.path, entry.name);
    if (pattern.test(readFileSync(path, "utf8"))) found.push(path.slice(dir.length + 1));
  }
  return found;
}

// `AGFzbQ` is the base64 of the .wasm magic number ("\0asm"): the inlined module.
const INLINED_WASM = /AGFzbQ/;

const BUNDLERS = (process.env.RATEBOUND_NEXTJS_BUNDLERS ?? "Turbopack,webpack").split(",");

for (const bundler of BUNDLERS) {
  describe(`examples/nextjs built with next build${bundler === "webpack" ? " --webpack" : ""} (${bundler}), served with next start`, () => {
    let redis;
    let bridge;
    let server;
    let buildOutput;

    before(async () => {
      rmSync(join(app, ".next"), { recursive: true, force: true });
      const started = Date.now();
      buildOutput = await run(join(app, "node_modules", ".bin", "next"), ["build", ...(bundler === "webpack" ? ["--webpack"] : [])]);
      console.log(`# next build (${bundler}): ${((Date.now() - started) / 1000).toFixed(1)} s`);
      redis = await startRedis();
      bridge = await startUpstashBridge(redis.url);
      server = await serve({ REDIS_URL: redis.url, UPSTASH_REDIS_REST_URL: bridge.url, UPSTASH_REDIS_REST_TOKEN: "the-bridge-ignores-it" });
    });

    after(async () => {
      server?.stop();
      await bridge?.stop();
      redis?.stop();
    });

    test("the build says nothing about ratebound (no warning, no module trace)", () => {
      assert.doesNotMatch(buildOutput, /node_modules[\\/]ratebound|ratebound[\\/]dist/, buildOutput);
    });

    test("the edge route took the .wasm as a WebAssembly module binding, the Node.js bundles hold it inlined", () => {
      const manifest = JSON.parse(readFileSync(join(app, ".next", "server", "middleware-manifest.json"), "utf8"));
      const edge = manifest.functions["/api/edge/route"];
      assert.ok(edge, "/api/edge is an edge function");
      assert.equal(edge.wasm?.length, 1, "one .wasm binding: the core, compiled by the platform, not from bytes");
      const edgeFiles = edge.files.filter((file) => file.endsWith(".js")).map((file) => join(app, ".next", file));
      assert.ok(edgeFiles.every((file) => !INLINED_WASM.test(readFileSync(file, "utf8"))), "no inlined .wasm in the edge function");
      const nodeBundles = ["app/api/node", "chunks"].map((dir) => join(app, ".next", "server", dir)).filter((dir) => existsSync(dir));
      assert.ok(nodeBundles.some((dir) => filesMatching(dir, INLINED_WASM).length > 0), "the Node.js route's bundle holds the inlined .wasm");
    });

    test("the Node.js route (node-redis): allowed with its RateLimit fields, then 429 with Retry-After", async () => {
      for (const remaining of [2, 1, 0]) {
        const response = await get(server.base, "/api/node", "198.51.100.7");
        assert.equal(response.status, 200, `${response.text}\n${server.output()}`);
        assert.deepEqual(response.json(), { sent: true, runtime: "nodejs" });
        assert.equal(fields(response, "send", 3), remaining);
      }
      assertRefused(await get(server.base, "/api/node", "198.51.100.7"), "send", 3);
      const other = await get(server.base, "/api/node", "198.51.100.8");
      assert.equal(other.status, 200, "another client has its own limit");
    });

    test("the edge route (@upstash/redis): allowed with its RateLimit fields, then 429; addresses of one IPv6 /56 share a limit", async () => {
      for (const [index, remaining] of [2, 1, 0].entries()) {
        const response = await get(server.base, "/api/edge", `2001:db8:0:${index + 1}::${index + 1}`);
        assert.equal(response.status, 200, `${response.text}\n${server.output()}`);
        assert.deepEqual(response.json(), { results: [], runtime: "edge" });
        assert.equal(fields(response, "search", 3), remaining);
      }
      assertRefused(await get(server.base, "/api/edge", "2001:db8:0:ff::9"), "search", 3);
      assert.equal((await get(server.base, "/api/edge", "2001:db8:1::1")).status, 200, "another /56 has its own limit");
    });

    test("the proxy guards every /api route: 10 requests of a client pass, the 11th is refused before any route runs", async () => {
      for (let request = 1; request <= 10; request++) {
        const response = await get(server.base, "/api/hello", "192.0.2.10");
        assert.equal(response.status, 200, `request ${request}: ${response.text}\n${server.output()}`);
      }
      assertRefused(await get(server.base, "/api/hello", "192.0.2.10"), "api", 10);
      assertRefused(await get(server.base, "/api/node", "192.0.2.10"), "api", 10);
      assert.equal((await get(server.base, "/", "192.0.2.10")).status, 200, "pages outside /api are not guarded");
    });

    test("Redis down: the routes answer 503 with Retry-After, the proxy limits in memory, the server lives on", async () => {
      redis.stop();
      // The proxy's fallback bucket (10 a minute) gains a token every 6 s from its first call on: as many
      // more may pass as whole 6 s have gone by (a slow machine takes ~6 s to reach the 11th request).
      const start = Date.now();
      for (const path of ["/api/node", "/api/edge"]) {
        const response = await get(server.base, path, "192.0.2.20");
        assert.equal(response.status, 503, `${path}: ${response.text}`);
        assert.match(response.headers.get("retry-after") ?? "", /^[1-9]\d*$/);
        assert.match(response.headers.get("content-type") ?? "", /^application\/problem\+json/);
      }
      // The proxy's limit fell back to memory: 192.0.2.20 has spent 2 of its 10 there.
      for (let request = 3; request <= 10; request++) assert.equal((await get(server.base, "/api/hello", "192.0.2.20")).status, 200);
      let refused = await get(server.base, "/api/hello", "192.0.2.20");
      for (let refilled = 1; refused.status === 200; refilled++) {
        assert.ok(refilled <= Math.floor((Date.now() - start) / 6000), `no more than the tokens refilled pass (${refilled} after ${Date.now() - start} ms)`);
        refused = await get(server.base, "/api/hello", "192.0.2.20");
      }
      assert.equal(refused.status, 429, refused.text);
      assert.match(refused.headers.get("retry-after") ?? "", /^[1-9]\d*$/);
      assert.deepEqual(refused.json()["violated-policies"], ["api"]);
      assert.equal((await get(server.base, "/", "192.0.2.20")).status, 200);
      assert.match(server.output(), /rate limit|redis/i, "the store's failure was logged");
    });
  });
}
