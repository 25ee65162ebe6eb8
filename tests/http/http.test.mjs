// ratebound/http through the real frameworks and runtimes: the guard's scenarios in Node, in Deno
// (Deno.serve) and in Bun (Bun.serve); Hono through app.request and on workerd (Miniflare);
// Express 5 on a node:http server on loopback. Every server listens on 127.0.0.1 with an
// ephemeral port and is stopped after, also on failure.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, cpSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import express from "express";
import { Hono } from "hono";
import * as lib from "../../pkg/dist/node.js";
import * as http from "../../pkg/dist/http.js";
import { bundleWorker, scratch, startMiniflare, workerOptions } from "../hosts/workerd.mjs";
import { ALGORITHMS, START, expectedFields, openDirect, runScenarios } from "./scenarios.mjs";

const here = fileURLToPath(new URL("./", import.meta.url));
const repo = fileURLToPath(new URL("../../", import.meta.url));
const CHILD_TIMEOUT_MS = 60_000;
const { MINUTE } = lib;
const at = (now, key) => ({ headers: { "x-now": String(now), ...(key === undefined ? {} : { "x-user": key }) } });
const down = Object.assign(new Error("the store is down"), { code: "STORE_DOWN" });
const throwingStore = { read() { throw down; }, write() { throw down; } };

/** Runs a command in its own process group, killed whole after the timeout; resolves with code and output. */
function run(command, args, { cwd = repo, env = process.env } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk) => (stderr += chunk));
    const timer = setTimeout(() => process.kill(-child.pid, "SIGKILL"), CHILD_TIMEOUT_MS);
    child.on("error", (error) => (clearTimeout(timer), reject(error)));
    child.on("close", (code, signal) => (clearTimeout(timer), resolve({ code: code ?? signal, stdout, stderr })));
  });
}

const SCENARIO_COUNT = 7;

describe("the guard", () => {
  test("passes every scenario in Node on Request objects", async () => {
    const passed = await runScenarios({ lib, http, open: openDirect });
    assert.equal(passed.length, SCENARIO_COUNT);
  });

  test("passes every scenario in Deno behind Deno.serve on loopback", { timeout: CHILD_TIMEOUT_MS }, async () => {
    const deno = join(repo, "tools", "deno", "node_modules", ".bin", "deno");
    const args = ["run", "--no-check", "--no-prompt", "--allow-net=127.0.0.1", "--allow-read", "--config", join(here, "deno.json"), join(here, "runtime.mjs")];
    const { code, stdout, stderr } = await run(deno, args, { env: { ...process.env, DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" } });
    assert.equal(code, 0, stderr);
    const { runtime, passed } = JSON.parse(stdout.trim().split("\n").at(-1));
    assert.equal(runtime, "deno");
    assert.equal(passed.length, SCENARIO_COUNT);
  });

  test("passes every scenario in Bun behind Bun.serve on loopback", { timeout: CHILD_TIMEOUT_MS }, async () => {
    const work = scratch("http-bun");
    try {
      mkdirSync(join(work.dir, "node_modules"));
      // A copy, not a link: under the repository Bun would apply tsconfig.json's paths to pkg/'s own imports.
      cpSync(join(repo, "pkg"), join(work.dir, "node_modules", "ratebound"), { recursive: true });
      for (const file of ["runtime.mjs", "scenarios.mjs"]) copyFileSync(join(here, file), join(work.dir, file));
      const { code, stdout, stderr } = await run(join(repo, "node_modules", ".bin", "bun"), ["runtime.mjs"], { cwd: work.dir, env: { ...process.env, DO_NOT_TRACK: "1" } });
      assert.equal(code, 0, stderr);
      const { runtime, passed } = JSON.parse(stdout.trim().split("\n").at(-1));
      assert.equal(runtime, "bun");
      assert.equal(passed.length, SCENARIO_COUNT);
    } finally {
      work.remove();
    }
  });

  test("refuses bad options when it is made, naming the option", () => {
    const limiter = new lib.RateLimiter(new lib.MemoryStore(), { api: ALGORITHMS["token bucket"], "café": ALGORITHMS["token bucket"] });
    const code = { code: "HTTP_GUARD_CONFIG" };
    assert.throws(() => http.httpGuard(limiter, "api", { headers: "draft-9" }), { ...code, message: /options\.headers must be one of draft-10, draft-8, draft-7, draft-6, none \(got "draft-9"\)/ });
    assert.throws(() => http.httpGuard(limiter, "api", { keys: () => "a" }), { ...code, message: /unknown option "keys"/ });
    assert.throws(() => http.httpGuard(limiter, "api", { key: "ada" }), { ...code, message: /options\.key must be a function \(got "ada"\)/ });
    assert.throws(() => http.httpGuard(limiter, []), { ...code, message: /or a non-empty array of them \(got \[\]\)/ });
    assert.throws(() => http.httpGuard(limiter, ["api", "api"]), { ...code, message: /"api" is named twice/ });
    assert.throws(() => http.httpGuard(limiter, "café"), { ...code, message: /printable ASCII for headers draft-10 \(got "café"\)/ });
    assert.throws(() => http.httpGuard({}, "api"), { ...code, message: /needs a RateLimiter/ });
    assert.throws(() => http.httpGuard(limiter, [{ name: "api", keyed: true }]), { ...code, message: /\{ name, keyed: false \}/ });
    assert.doesNotThrow(() => http.httpGuard(limiter, "café", { headers: "draft-6" }));
  });

  test("a limit with keyed: false is shared by every key, next to a per-key one, all consumed or none", async () => {
    const clock = { now: START };
    const limits = { api: ALGORITHMS["token bucket"], global: { kind: "fixed window", rate: 3, period: MINUTE, start: 0 } };
    const limiter = new lib.RateLimiter(new lib.MemoryStore(), limits, { now: () => clock.now });
    const user = (name) => new Request("http://127.0.0.1/", { headers: { "x-user": name } });
    const guard = http.httpGuard(limiter, ["api", { name: "global", keyed: false }], { key: (r) => r.headers.get("x-user") ?? undefined, now: () => clock.now, headers: "draft-8" });
    const answers = [];
    for (const name of ["ada", "ada", "grace", "grace"]) answers.push(await guard(user(name)));
    assert.deepEqual(answers.map(({ ok }) => ok), [true, true, true, false], "the global limit of 3 is shared by ada and grace");
    assert.deepEqual(JSON.parse(await answers[3].response.text())["violated-policies"], ["global"]);
    assert.equal((await limiter.getValue("api", { key: "grace" })).value, 2, "grace's own limit kept the token of the refused request");
    assert.equal((await limiter.getValue("global")).value, 0);
    assert.match(answers[2].headers.get("ratelimit-policy"), /^"api"; q=3; w=60; pk=:[A-Za-z0-9+/]{16}:, "global"; q=3; w=60$/, "a partition key only on the keyed limit");
  });

  test("a sharded limit's headers rest on the shards sampled, as the core reports them", async () => {
    const clock = { now: START };
    const limiter = new lib.RateLimiter(new lib.MemoryStore(), { llm: { kind: "token bucket", rate: 40, period: MINUTE, shards: 4 } }, { now: () => clock.now, random: () => 0.3 });
    const guard = http.httpGuard(limiter, "llm", { sampleShards: 4, count: () => 3, now: () => clock.now });
    for (let sent = 0; sent < 5; sent++) {
      const { ok, headers, limits } = await guard(new Request("http://127.0.0.1/"));
      assert.ok(ok);
      const figures = lib.rateLimitFigures(await limiter.getValue("llm", { sampleShards: 4 }), clock.now, undefined, 4);
      assert.equal(figures.sampled, 4);
      assert.deepEqual(limits[0].figures, figures);
      assert.equal(headers.get("ratelimit"), `"llm";r=${figures.remaining};t=${figures.reset}`);
    }
    assert.equal(new Headers((await guard(new Request("http://127.0.0.1/"))).headers).get("ratelimit-policy"), '"llm";q=40;w=60');
  });

  test("20 concurrent requests on a host whose transactions serialize admit exactly 3; without the transaction, more", async () => {
    const tick = () => new Promise((resolve) => setTimeout(resolve, 1));
    class SlowStore {
      states = new Map();
      async read(ref) { await tick(); return this.states.get(JSON.stringify(ref)) ?? null; }
      async write(ref, state) { await tick(); if (state === null) this.states.delete(JSON.stringify(ref)); else this.states.set(JSON.stringify(ref), state); }
    }
    class LockingStore extends SlowStore {
      #tail = Promise.resolve();
      transaction(body) {
        const attempt = this.#tail.then(() => body(this));
        this.#tail = attempt.catch(() => {});
        return attempt;
      }
    }
    const admitted = async (store) => {
      const limiter = new lib.RateLimiter(store, { api: ALGORITHMS["token bucket"], burst: ALGORITHMS["fixed window"] });
      const guard = http.httpGuard(limiter, ["api", "burst"], { key: () => "ada" });
      const answers = await Promise.all(Array.from({ length: 20 }, () => guard(new Request("http://127.0.0.1/"))));
      return answers.filter(({ ok }) => ok).length;
    };
    assert.equal(await admitted(new LockingStore()), 3);
    assert.ok((await admitted(new SlowStore())) > 3, "the same traffic without the host's transaction over-admits: the test can see a failure");
  });

  test("draft-8's partition key is the one express-rate-limit derives from the key", async () => {
    const limiter = new lib.RateLimiter(new lib.MemoryStore(), { api: ALGORITHMS["token bucket"] });
    const { headers } = await http.httpGuard(limiter, "api", { key: () => "203.0.113.7", headers: "draft-8" })(new Request("http://127.0.0.1/"));
    // express-rate-limit: sha256 hex of the key, its first 12 digits, base64 of those characters.
    const expected = Buffer.from(createHash("sha256").update("203.0.113.7").digest("hex").slice(0, 12)).toString("base64");
    assert.equal(headers.get("ratelimit-policy"), `"api"; q=3; w=60; pk=:${expected}:`);
  });

  test("rejects a key that is not a string, and an unknown limit, writing nothing", async () => {
    const limiter = new lib.RateLimiter(new lib.MemoryStore(), { api: ALGORITHMS["token bucket"] });
    const request = new Request("http://127.0.0.1/");
    await assert.rejects(http.httpGuard(limiter, "api", { key: () => 42 })(request), { code: "HTTP_GUARD_KEY", message: /must give a string or undefined \(got 42\)/ });
    await assert.rejects(http.httpGuard(limiter, "api", { count: () => -1 })(request), { code: "HTTP_GUARD_COUNT" });
    await assert.rejects(http.httpGuard(limiter, "nope")(request), /nope/);
    assert.equal((await limiter.getValue("api")).value, 3, "nothing was consumed");
  });
});

describe("Hono", () => {
  function app(limiter, clock, options = {}) {
    const hono = new Hono();
    const calls = { count: 0 };
    hono.use("*", async (c, next) => {
      clock.now = Number(c.req.header("x-now") ?? clock.now);
      await next();
    });
    hono.use("/api/*", http.honoRateLimit(limiter, options.names ?? "api", { key: (c) => c.req.header("x-user"), now: () => clock.now, ...options.guard }));
    hono.get("/api/text", (c) => (calls.count++, c.text("hello")));
    hono.get("/api/raw", () => (calls.count++, new Response("raw")));
    hono.onError((error, c) => c.json({ code: error.code ?? null }, 500));
    return { hono, calls };
  }

  test("app.request: allowed responses carry the core's figures, also from a handler that returns its own Response", async () => {
    const clock = { now: START };
    const limiter = new lib.RateLimiter(new lib.MemoryStore(), { api: ALGORITHMS["fixed window"] }, { now: () => clock.now });
    const { hono } = app(limiter, clock);
    for (const [index, path] of ["/api/text", "/api/raw"].entries()) {
      const now = START + index * 7_000;
      const response = await hono.request(path, at(now, "ada"));
      assert.equal(response.status, 200);
      const want = await expectedFields(lib, limiter, ["api"], "ada", now);
      assert.equal(response.headers.get("ratelimit"), want.limit, path);
      assert.equal(response.headers.get("ratelimit-policy"), want.policy, path);
    }
  });

  test("app.request: the request past the limit is a 429 with Retry-After never short, and another key still passes", async () => {
    const clock = { now: START };
    const limiter = new lib.RateLimiter(new lib.MemoryStore(), { api: ALGORITHMS["token bucket"] }, { now: () => clock.now });
    const { hono, calls } = app(limiter, clock);
    const statuses = [];
    for (let sent = 0; sent < 4; sent++) statuses.push((await hono.request("/api/text", at(START + 500, "ada"))).status);
    assert.deepEqual(statuses, [200, 200, 200, 429]);
    const refused = await hono.request("/api/text", at(START + 500, "ada"));
    const { retryAfter } = await limiter.check("api", { key: "ada" });
    const seconds = Number(refused.headers.get("retry-after"));
    assert.ok(seconds * 1000 >= retryAfter && seconds * 1000 < retryAfter + 1000, `Retry-After ${seconds} s for ${retryAfter} ms`);
    assert.equal(calls.count, 3, "the route ran only for the allowed");
    assert.equal((await hono.request("/api/text", at(START + 500, "grace"))).status, 200);
  });

  test("app.request: a throwing store reaches Hono's error handler, never the route", async () => {
    const clock = { now: START };
    const limiter = new lib.RateLimiter(throwingStore, { api: ALGORITHMS["token bucket"] }, { now: () => clock.now });
    const { hono, calls } = app(limiter, clock);
    const response = await hono.request("/api/text", at(START, "ada"));
    assert.equal(response.status, 500);
    assert.deepEqual(await response.json(), { code: "STORE_DOWN" });
    assert.equal(calls.count, 0);
  });

  describe("on workerd (Miniflare)", () => {
    let work;
    let miniflare;
    before(async () => {
      work = scratch("http-workerd");
      const outdir = join(work.dir, "bundle");
      const inputs = await bundleWorker(join(here, "worker.mjs"), outdir);
      assert.ok(inputs.some((input) => input.endsWith("pkg/dist/workerd.js")), "the bundle took in ratebound's workerd entry");
      miniflare = await startMiniflare(workerOptions(outdir));
    });
    after(async () => {
      await miniflare?.dispose();
      work?.remove();
    });
    const get = (path, now, key) => miniflare.dispatchFetch(`http://127.0.0.1${path}`, { ...at(now, key), signal: AbortSignal.timeout(30_000) });

    test("allowed requests carry the figures the core reports in the Worker, and the fourth is a 429", async () => {
      for (let sent = 0; sent < 3; sent++) {
        const now = START + sent * 2_000;
        const response = await get("/api/hello", now, "ada");
        assert.equal(response.status, 200);
        assert.equal(await response.text(), "hello");
        const figures = await (await get("/figures", now, "ada")).json();
        assert.equal(response.headers.get("ratelimit"), `"api";r=${figures.remaining};t=${figures.reset}`);
        assert.equal(response.headers.get("ratelimit-policy"), `"api";q=${figures.limit};w=${figures.window}`);
      }
      const refused = await get("/api/hello", START + 6_000, "ada");
      assert.equal(refused.status, 429);
      assert.equal(refused.headers.get("retry-after"), "14", "3 tokens per minute, 0.3 refilled by 6 s: 14 s to the next whole one");
      await refused.body?.cancel();
      const other = await get("/api/hello", START + 6_000, "grace");
      assert.equal(other.status, 200, "another key is independent");
      await other.body?.cancel();
    });
  });
});

describe("Express 5 on node:http (loopback)", () => {
  async function listen(limiter, clock, options = {}) {
    const app = express();
    const calls = { count: 0 };
    app.use((req, res, next) => {
      clock.now = Number(req.get("x-now") ?? clock.now);
      next();
    });
    app.use("/api", http.expressRateLimit(limiter, options.names ?? "api", { key: (req) => req.get("x-user"), now: () => clock.now, ...options.guard }));
    app.get("/api/hello", (req, res) => (calls.count++, res.send("hello")));
    app.use((error, req, res, _next) => res.status(500).json({ code: error.code ?? null }));
    const server = await new Promise((resolve) => {
      const listening = app.listen(0, "127.0.0.1", () => resolve(listening));
    });
    const base = `http://127.0.0.1:${server.address().port}`;
    return { calls, get: (path, now, key) => fetch(base + path, at(now, key)), close: () => new Promise((resolve) => server.close(resolve)) };
  }

  for (const algorithm of Object.keys(ALGORITHMS)) {
    test(`${algorithm}: allowed responses carry the core's figures, the fourth is a 429 never short, keys are independent`, async () => {
      const clock = { now: START };
      const limiter = new lib.RateLimiter(new lib.MemoryStore(), { api: ALGORITHMS[algorithm] }, { now: () => clock.now });
      const server = await listen(limiter, clock);
      try {
        for (let sent = 0; sent < 3; sent++) {
          const now = START + sent * 3_000;
          const response = await server.get("/api/hello", now, "ada");
          assert.equal(response.status, 200);
          assert.equal(await response.text(), "hello");
          const want = await expectedFields(lib, limiter, ["api"], "ada", now);
          assert.equal(response.headers.get("ratelimit"), want.limit);
          assert.equal(response.headers.get("ratelimit-policy"), want.policy);
        }
        const refused = await server.get("/api/hello", START + 9_000, "ada");
        assert.equal(refused.status, 429);
        const { retryAfter } = await limiter.check("api", { key: "ada" });
        const seconds = Number(refused.headers.get("retry-after"));
        assert.ok(seconds * 1000 >= retryAfter && seconds * 1000 < retryAfter + 1000, `Retry-After ${seconds} s for ${retryAfter} ms`);
        assert.equal((await refused.json())["violated-policies"][0], "api");
        assert.equal(server.calls.count, 3);
        assert.equal((await server.get("/api/hello", START + 9_000, "grace")).status, 200);
      } finally {
        await server.close();
      }
    });
  }

  test("several limits: one header with both policies, and a refusal consumes neither", async () => {
    const clock = { now: START };
    const limits = { api: ALGORITHMS["token bucket"], burst: { kind: "token bucket", rate: 1, period: 10_000 } };
    const limiter = new lib.RateLimiter(new lib.MemoryStore(), limits, { now: () => clock.now });
    const server = await listen(limiter, clock, { names: ["api", "burst"] });
    try {
      const allowed = await server.get("/api/hello", START, "ada");
      assert.equal(allowed.headers.get("ratelimit"), (await expectedFields(lib, limiter, ["api", "burst"], "ada", START)).limit);
      const refused = await server.get("/api/hello", START, "ada");
      assert.equal(refused.status, 429);
      assert.match(refused.headers.get("ratelimit"), /^"api";r=2;t=20, "burst";r=0;t=10$/);
      assert.equal((await limiter.getValue("api", { key: "ada" })).value, 2, "api kept the token the refused request did not take");
    } finally {
      await server.close();
    }
  });

  test("a throwing store goes to Express's error handling, never to the route", async () => {
    const clock = { now: START };
    const limiter = new lib.RateLimiter(throwingStore, { api: ALGORITHMS["token bucket"] }, { now: () => clock.now });
    const server = await listen(limiter, clock);
    try {
      const response = await server.get("/api/hello", START, "ada");
      assert.equal(response.status, 500);
      assert.deepEqual(await response.json(), { code: "STORE_DOWN" });
      assert.equal(server.calls.count, 0);
    } finally {
      await server.close();
    }
  });
});
