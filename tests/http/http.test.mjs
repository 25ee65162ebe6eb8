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

const SCENARIO_COUNT = 12;

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
    assert.throws(() => http.httpGuard(limiter, "api", { headers: "draft-9" }), { ...code, message: /options\.headers must be one of draft-11, draft-10, draft-8, draft-7, draft-6, none \(got "draft-9"\)/ });
    assert.throws(() => http.httpGuard(limiter, "api", { keys: () => "a" }), { ...code, message: /unknown option "keys"/ });
    assert.throws(() => http.httpGuard(limiter, "api", { key: "ada" }), { ...code, message: /options\.key must be a function \(got "ada"\)/ });
    assert.throws(() => http.httpGuard(limiter, []), { ...code, message: /or a non-empty array of them \(got \[\]\)/ });
    assert.throws(() => http.httpGuard(limiter, ["api", "api"]), { ...code, message: /"api" is named twice/ });
    assert.throws(() => http.httpGuard(limiter, "café"), { ...code, message: /printable ASCII for headers draft-10 \(got "café"\)/ });
    assert.throws(() => http.httpGuard({}, "api"), { ...code, message: /needs a RateLimiter/ });
    assert.throws(() => http.httpGuard(limiter, [{ name: "api", keyed: true }]), { ...code, message: /\{ name, keyed: false \}/ });
    assert.throws(() => http.httpGuard(limiter, "api", { now: () => 0 }), { ...code, message: /unknown option "now"/ }, "figures come from the decision: no clock of the guard's own");
    assert.throws(() => http.httpGuard(limiter, ["api", "café"], { refundSuccessful: true, headers: "draft-6" }), { ...code, message: /refundSuccessful takes one limit per guard \(got 2: api, café\)/ });
    assert.throws(() => http.httpGuard(limiter, "api", { successful: () => true }), { ...code, message: /successful is read only with refundSuccessful: true/ });
    assert.throws(() => http.httpGuard(limiter, "api", { unavailableRetryAfter: 1.5 }), { ...code, message: /unavailableRetryAfter must be whole seconds from 0 to 86400 \(got 1\.5\)/ });
    assert.throws(() => http.httpGuard(limiter, "api", { onError: "console" }), { ...code, message: /options\.onError must be a function/ });
    assert.doesNotThrow(() => http.httpGuard(limiter, "café", { headers: "draft-6" }));
  });

  test("a limit the limiter does not have fails when the guard is made, in every adapter, naming it and the limiter's limits", () => {
    const limiter = new lib.RateLimiter(new lib.MemoryStore(), { api: ALGORITHMS["token bucket"], login: ALGORITHMS["fixed window"] });
    const guards = { httpGuard: http.httpGuard, honoRateLimit: http.honoRateLimit, expressRateLimit: http.expressRateLimit, fastifyRateLimit: http.fastifyRateLimit, koaRateLimit: http.koaRateLimit, nestRateLimit: http.nestRateLimit, sveltekitRateLimit: http.sveltekitRateLimit };
    for (const [who, make] of Object.entries(guards)) {
      const message = new RegExp(`^ratebound/http: ${who}: the limiter has no limit "apii" \\(its limits: "api", "login"\\)$`);
      assert.throws(() => make(limiter, "apii"), { code: "HTTP_GUARD_CONFIG", message }, who);
      assert.throws(() => make(limiter, ["api", { name: "apii", keyed: false }]), { code: "HTTP_GUARD_CONFIG", message }, who);
      assert.doesNotThrow(() => make(limiter, ["api", { name: "login", keyed: false }]), who);
    }
    const empty = new lib.RateLimiter(new lib.MemoryStore());
    assert.throws(() => http.httpGuard(empty, "api"), { code: "HTTP_GUARD_CONFIG", message: /the limiter has no limit "api" \(its limits: none\)/ });
    assert.deepEqual(limiter.limitNames, ["api", "login"]);
  });

  test("a limit with keyed: false is shared by every key, next to a per-key one, all consumed or none", async () => {
    const clock = { now: START };
    const limits = { api: ALGORITHMS["token bucket"], global: { kind: "fixed window", rate: 3, period: MINUTE, start: 0 } };
    const limiter = new lib.RateLimiter(new lib.MemoryStore(), limits, { now: () => clock.now });
    const user = (name) => new Request("http://127.0.0.1/", { headers: { "x-user": name } });
    const guard = http.httpGuard(limiter, ["api", { name: "global", keyed: false }], { key: (r) => r.headers.get("x-user") ?? undefined, headers: "draft-8" });
    const answers = [];
    for (const name of ["ada", "ada", "grace", "grace"]) answers.push(await guard(user(name)));
    assert.deepEqual(answers.map(({ ok }) => ok), [true, true, true, false], "the global limit of 3 is shared by ada and grace");
    assert.deepEqual(JSON.parse(await answers[3].response.text())["violated-policies"], ["global"]);
    assert.equal((await limiter.getValue("api", { key: "grace" })).value, 2, "grace's own limit kept the token of the refused request");
    assert.equal((await limiter.getValue("global")).value, 0);
    assert.match(answers[2].headers.get("ratelimit-policy"), /^"api"; q=3; w=60; pk=:[A-Za-z0-9+/]{16}:, "global"; q=3; w=60$/, "a partition key only on the keyed limit");
  });

  test("one round trip: a request reads each state once and writes it once, and its headers are the decision's figures", async () => {
    const clock = { now: START };
    class CountingStore {
      states = new Map();
      reads = 0;
      writes = 0;
      read(ref) { this.reads++; return this.states.get(JSON.stringify(ref)) ?? null; }
      write(ref, state) { this.writes++; if (state === null) this.states.delete(JSON.stringify(ref)); else this.states.set(JSON.stringify(ref), state); }
    }
    const store = new CountingStore();
    const limiter = new lib.RateLimiter(store, { api: ALGORITHMS["token bucket"] }, { now: () => clock.now });
    const guard = http.httpGuard(limiter, "api", { key: () => "ada" });
    for (let sent = 0; sent < 3; sent++) {
      const before = [store.reads, store.writes];
      const { ok, headers, limits } = await guard(new Request("http://127.0.0.1/"));
      assert.ok(ok);
      assert.deepEqual([store.reads - before[0], store.writes - before[1]], [1, 1], "one read and one write: no getValue after the decision");
      assert.equal(headers.get("ratelimit"), `"api";r=${limits[0].figures.remaining};t=${limits[0].figures.reset}`);
      assert.equal(limits[0].figures.remaining, 2 - sent);
    }
  });

  test("a sharded limit's headers rest on the shards the decision read", async () => {
    const clock = { now: START };
    const limiter = new lib.RateLimiter(new lib.MemoryStore(), { llm: { kind: "token bucket", rate: 40, period: MINUTE, shards: 4 } }, { now: () => clock.now, random: () => 0.3 });
    const guard = http.httpGuard(limiter, "llm", { count: () => 3 });
    for (let sent = 0; sent < 5; sent++) {
      const { ok, headers, limits } = await guard(new Request("http://127.0.0.1/"));
      assert.ok(ok);
      const { figures } = limits[0];
      assert.ok(figures.sampled >= 1 && figures.sampled <= 2, `at most two shards read (got ${figures.sampled})`);
      assert.equal(figures.limit, 40);
      assert.equal(headers.get("ratelimit"), `"llm";r=${figures.remaining};t=${figures.reset}`);
    }
  });

  test("a limit of 1e15 tokens writes q=999999999999999, never a 16-digit integer a Structured Fields parser refuses", async () => {
    const limiter = new lib.RateLimiter(new lib.MemoryStore(), { bytes: { kind: "token bucket", rate: 1e15, period: lib.DAY } });
    const { headers } = await http.httpGuard(limiter, "bytes", { headers: "draft-10" })(new Request("http://127.0.0.1/"));
    assert.equal(headers.get("ratelimit-policy"), '"bytes";q=999999999999999;w=86400');
    assert.match(headers.get("ratelimit"), /^"bytes";r=999999999999999;t=1$/);
    assert.equal(http.MAX_HEADER_INTEGER, 999_999_999_999_999);
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

  test("an app's own bugs reject (for the framework's 500), writing nothing and calling no onError", async () => {
    const limiter = new lib.RateLimiter(new lib.MemoryStore(), { api: ALGORITHMS["token bucket"] });
    const request = new Request("http://127.0.0.1/");
    const reported = [];
    const onError = (error) => reported.push(error);
    await assert.rejects(http.httpGuard(limiter, "api", { key: () => 42, onError })(request), { code: "HTTP_GUARD_KEY", message: /must give a string or undefined \(got 42\)/ });
    await assert.rejects(http.httpGuard(limiter, "api", { count: () => -1, onError })(request), { code: "HTTP_GUARD_COUNT" });
    assert.throws(() => http.httpGuard(limiter, "nope", { onError }), { code: "HTTP_GUARD_CONFIG", message: /no limit "nope"/ }, "an unknown limit: when the guard is made");
    await assert.rejects(http.httpGuard(limiter, "api", { count: () => 4, onError })(request), { code: "COUNT_EXCEEDS_MAX" });
    assert.equal((await limiter.getValue("api")).value, 3, "nothing was consumed");
    assert.deepEqual(reported, [], "bugs are not store failures");
  });

  test("a store that times out is a 503 too", async () => {
    const hanging = { read: () => new Promise(() => {}), write: () => new Promise(() => {}) };
    const limiter = new lib.RateLimiter(hanging, { api: ALGORITHMS["token bucket"] }, { timeout: 50 });
    const reported = [];
    const { ok, response } = await http.httpGuard(limiter, "api", { onError: (error) => reported.push(error) })(new Request("http://127.0.0.1/"));
    assert.equal(ok, false);
    assert.equal(response.status, 503);
    assert.equal(reported[0].code, "STORE_TIMEOUT");
  });

  test("storedKey: short keys as they are; long ones, lone surrogates and the hash's own prefix under SHA-256", async () => {
    assert.equal(await http.storedKey("ada"), "ada");
    assert.equal(await http.storedKey("é".repeat(64)), "é".repeat(64), "128 bytes exactly: as it is");
    const long = await http.storedKey("é".repeat(65));
    const expected = "sha256:" + createHash("sha256").update("é".repeat(65)).digest("base64url");
    assert.equal(long, expected, "the same SHA-256 node:crypto gives");
    assert.match(await http.storedKey("sha256:abc"), /^sha256:[A-Za-z0-9_-]{43}$/);
    assert.notEqual(await http.storedKey("sha256:abc"), "sha256:abc");
    assert.match(await http.storedKey("\ud800"), /^sha256:/, "a lone surrogate, which the core refuses, is hashed");
  });

  test("ipKey: IPv4 as it is, IPv4-mapped as IPv4, IPv6 as its network in RFC 5952 form, anything else HTTP_GUARD_IP", () => {
    const cases = [
      ["203.0.113.7", undefined, "203.0.113.7"],
      ["::ffff:203.0.113.7", undefined, "203.0.113.7"],
      ["::FFFF:cb00:7107", undefined, "203.0.113.7"],
      ["2001:db8:1234:5678:9abc:def0:1234:5678", undefined, "2001:db8:1234:5600::/56"],
      ["2001:DB8:1234:56ff::1", undefined, "2001:db8:1234:5600::/56"],
      ["2001:db8:1234:5678::1", 64, "2001:db8:1234:5678::/64"],
      ["2001:db8:1234:5678::1", 48, "2001:db8:1234::/48"],
      ["2001:db8::1", 128, "2001:db8::1/128"],
      ["fe80::1%eth0", 64, "fe80::/64"],
      ["::1", undefined, "::/56"],
      ["::", 128, "::/128"],
      ["1:0:0:2:0:0:0:3", 128, "1:0:0:2::3/128"],
      ["1:0:0:2:2:0:0:3", 128, "1::2:2:0:0:3/128"],
      ["2001:db8::192.0.2.33", 128, "2001:db8::c000:221/128"],
      ["64:ff9b::192.0.2.33", 96, "64:ff9b::/96"],
    ];
    for (const [address, ipv6Subnet, key] of cases) {
      assert.equal(http.ipKey(address, ipv6Subnet === undefined ? undefined : { ipv6Subnet }), key, address);
    }
    const ip = { code: "HTTP_GUARD_IP" };
    for (const bad of ["203.0.113.7:443", "[::1]", "[::1]:443", "01.2.3.4", "256.1.1.1", "1.2.3", "1::2::3", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7", "12345::", "gggg::", "::1.2.3.4:5", "1.2.3.4::", "%eth0", "::1%", "", " 1.2.3.4", "localhost", "x".repeat(100)]) {
      assert.throws(() => http.ipKey(bad), { ...ip, message: /ipKey needs an IPv4 or IPv6 address, without port or brackets/ }, JSON.stringify(bad));
    }
    assert.throws(() => http.ipKey(undefined), { ...ip, message: /ipKey got no address \(undefined\)/ });
    for (const ipv6Subnet of [0, 129, 56.5, "56", null]) {
      assert.throws(() => http.ipKey("::1", { ipv6Subnet }), { code: "HTTP_GUARD_CONFIG", message: /ipv6Subnet must be an integer from 1 to 128/ });
    }
  });

  test("ipKey agrees with Node's own address parser on what is an address", async () => {
    const { isIP, BlockList } = await import("node:net");
    const samples = ["1.2.3.4", "::", "::1", "1::", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:1.2.3.4", "::ffff:1.2.3.4", "a:b::c:d", "1:2::3:4:5:6:7", "::1:2:3:4:5:6:7", "1:2:3:4:5:6:7::", "0.0.0.0", "255.255.255.255", "1.2.3.04", "1.2.3.-4", "::ffff:1.2.3", ":1::", "1::2:", "fe80::1%en0", "2001:0db8:0000:0000:0000:ff00:0042:8329"];
    for (const address of samples) {
      const node = isIP(address) !== 0;
      let ours = true;
      try {
        http.ipKey(address);
      } catch (error) {
        assert.equal(error.code, "HTTP_GUARD_IP");
        ours = false;
      }
      assert.equal(ours, node, `${address}: Node says ${node ? "an address" : "not one"}`);
      if (node && isIP(address) === 6 && !address.includes("%") && !/^::ffff:/i.test(address)) {
        const [network, bits] = http.ipKey(address).split("/");
        const list = new BlockList();
        list.addSubnet(network, Number(bits), "ipv6");
        assert.ok(list.check(address, "ipv6"), `${address} is inside its key's network ${network}/${bits}`);
      }
    }
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
    hono.use("/api/*", http.honoRateLimit(limiter, options.names ?? "api", { key: (c) => c.req.header("x-user"), ...options.guard }));
    hono.get("/api/text", (c) => (calls.count++, c.text("hello")));
    hono.get("/api/raw", () => (calls.count++, new Response("raw")));
    const errors = [];
    hono.onError((error, c) => (errors.push(error), c.json({ code: error.code ?? null }, 500)));
    return { hono, calls, errors };
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

  test("app.request: a throwing store is a 503 with Retry-After, its error to onError; the route and Hono's onError never run", async () => {
    const clock = { now: START };
    const limiter = new lib.RateLimiter(throwingStore, { api: ALGORITHMS["token bucket"] }, { now: () => clock.now });
    const reported = [];
    const { hono, calls, errors } = app(limiter, clock, { guard: { onError: (error, c) => reported.push([error, c.req.path]) } });
    const response = await hono.request("/api/text", at(START, "ada"));
    assert.equal(response.status, 503);
    assert.equal(response.headers.get("retry-after"), "5");
    assert.equal(response.headers.get("content-type"), "application/problem+json");
    assert.equal((await response.json()).status, 503);
    assert.deepEqual(reported, [[down, "/api/text"]]);
    assert.equal(calls.count, 0);
    assert.deepEqual(errors, [], "answered by the middleware: Hono's onError would have made it a 500");
  });

  test("app.request: an app's own bug (an unknown limit) still reaches Hono's onError", async () => {
    const limiter = new lib.RateLimiter(new lib.MemoryStore(), { api: ALGORITHMS["token bucket"] });
    const { hono, errors } = app(limiter, { now: START }, { guard: { count: () => 4 } });
    const response = await hono.request("/api/text", at(START, "ada"));
    assert.equal(response.status, 500);
    assert.deepEqual(await response.json(), { code: "COUNT_EXCEEDS_MAX" });
    assert.equal(errors.length, 1);
  });

  test("app.request: a login brute force with refundSuccessful: 5 failures per IPv6 /56, successes free, then 429", async () => {
    const clock = { now: START };
    const limiter = new lib.RateLimiter(new lib.MemoryStore(), { login: { kind: "fixed window", rate: 5, period: 15 * MINUTE, start: 0 } }, { now: () => clock.now });
    const hono = new Hono();
    const guard = http.honoRateLimit(limiter, "login", { key: (c) => http.ipKey(c.req.header("x-client-ip")), refundSuccessful: true });
    hono.post("/login", guard, async (c) => ((await c.req.json()).password === "right" ? c.json({ welcome: true }) : c.json({ wrong: true }, 401)));
    const login = async (address, password) =>
      (await hono.request("/login", { method: "POST", headers: { "x-client-ip": address, "content-type": "application/json" }, body: JSON.stringify({ password }) })).status;
    const statuses = [];
    for (let attempt = 0; attempt < 20; attempt++) statuses.push(await login(`2001:db8:aa:bb${attempt.toString(16).padStart(2, "0")}::${attempt}`, attempt % 2 === 0 ? "right" : `guess-${attempt}`));
    // 20 addresses of one /56; the even attempts log in (refunded), the odd ones guess.
    // Successes take nothing; the 5th failure spends the budget; from then on even the right password waits.
    assert.deepEqual(statuses, [200, 401, 200, 401, 200, 401, 200, 401, 200, 401, ...new Array(10).fill(429)]);
    assert.equal(await login("2001:db8:aa:cc00::1", "guess"), 401, "another /56 has its own budget");
  });

  describe("on workerd (Miniflare)", () => {
    let work;
    let miniflare;
    before(async () => {
      work = scratch("http-workerd");
      const outdir = join(work.dir, "bundle");
      const inputs = await bundleWorker(join(here, "worker.mjs"), outdir);
      assert.ok(inputs.some((input) => input.endsWith("pkg/dist/workerd.js")), "the bundle took in ratebound's workerd entry");
      miniflare = await startMiniflare(workerOptions(outdir, { durableObjects: { LIMITER: "Limiter" } }));
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

    test("httpGuard on a Durable Object's rateLimiterClient: limitAll's figures pass through the object", async () => {
      const first = await get("/do/hello", START, "ada");
      assert.equal(first.status, 200);
      assert.equal(await first.text(), "hello");
      assert.match(first.headers.get("ratelimit"), /^"api";r=2;t=\d+, "burst";r=1;t=\d+$/);
      assert.equal(first.headers.get("ratelimit-policy"), '"api";q=3;w=60, "burst";q=2;w=3600');
      await (await get("/do/hello", START, "ada")).text();
      const refused = await get("/do/hello", START, "ada");
      assert.equal(refused.status, 429);
      assert.match(refused.headers.get("ratelimit"), /^"api";r=\d;t=\d+, "burst";r=0;t=\d+$/);
      assert.ok(Number(refused.headers.get("retry-after")) > 0);
      assert.deepEqual((await refused.json())["violated-policies"], ["burst"]);
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
    app.use("/api", http.expressRateLimit(limiter, options.names ?? "api", { key: (req) => req.get("x-user"), ...options.guard }));
    app.get("/api/hello", (req, res) => (calls.count++, res.send("hello")));
    const errors = [];
    app.use((error, req, res, _next) => (errors.push(error), res.status(500).json({ code: error.code ?? null })));
    const server = await new Promise((resolve) => {
      const listening = app.listen(0, "127.0.0.1", () => resolve(listening));
    });
    const base = `http://127.0.0.1:${server.address().port}`;
    return { calls, errors, get: (path, now, key) => fetch(base + path, at(now, key)), close: () => new Promise((resolve) => server.close(resolve)) };
  }

  /** Serves `app` on loopback; resolves with its base URL and `close()`. */
  async function serve(app) {
    const server = await new Promise((resolve) => {
      const listening = app.listen(0, "127.0.0.1", () => resolve(listening));
    });
    return { base: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((resolve) => server.close(resolve)) };
  }

  /** Runs `body` with console.warn collected (and still printed), restored after. */
  async function collectingWarnings(body) {
    const warnings = [];
    const original = console.warn;
    console.warn = (...args) => (warnings.push(args.join(" ")), original(...args));
    try {
      await body();
    } finally {
      console.warn = original;
    }
    return warnings;
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

  test("a throwing store is a 503 with Retry-After and a problem document; the error goes to onError, not to next(error)", async () => {
    const clock = { now: START };
    const limiter = new lib.RateLimiter(throwingStore, { api: ALGORITHMS["token bucket"] }, { now: () => clock.now });
    const reported = [];
    const server = await listen(limiter, clock, { guard: { onError: (error, req) => reported.push([error, req.originalUrl]) } });
    try {
      const response = await server.get("/api/hello", START, "ada");
      assert.equal(response.status, 503);
      assert.equal(response.headers.get("retry-after"), "5");
      assert.equal(response.headers.get("content-type"), "application/problem+json");
      assert.deepEqual(await response.json(), { type: "about:blank", title: "Service Unavailable", status: 503, detail: "The rate limiter is unavailable. Retry after 5 s." });
      assert.deepEqual(reported, [[down, "/api/hello"]]);
      assert.equal(server.calls.count, 0);
      assert.deepEqual(server.errors, [], "Express's error handler would have rendered a 500");
    } finally {
      await server.close();
    }
  });

  test("an app's own bug (a key that gives a number) goes to next(error)", async () => {
    const limiter = new lib.RateLimiter(new lib.MemoryStore(), { api: ALGORITHMS["token bucket"] });
    const server = await listen(limiter, { now: START }, { guard: { key: () => 7 } });
    try {
      const response = await server.get("/api/hello", START, "ada");
      assert.equal(response.status, 500);
      assert.deepEqual(await response.json(), { code: "HTTP_GUARD_KEY" });
    } finally {
      await server.close();
    }
  });

  test("a route-level login guard with refundSuccessful: failures count, successes are refunded, then 429", async () => {
    const clock = { now: START };
    const limiter = new lib.RateLimiter(new lib.MemoryStore(), { login: { kind: "fixed window", rate: 5, period: 15 * MINUTE, start: 0 } }, { now: () => clock.now });
    const app = express();
    app.set("trust proxy", "loopback");
    app.post("/login", express.json(), http.expressRateLimit(limiter, "login", { key: (req) => http.ipKey(req.ip), refundSuccessful: true }), (req, res) => {
      if (req.body.password === "right") res.json({ welcome: true });
      else res.status(401).json({ wrong: true });
    });
    const server = await serve(app);
    const login = async (address, password) => {
      const response = await fetch(`${server.base}/login`, { method: "POST", headers: { "x-forwarded-for": address, "content-type": "application/json" }, body: JSON.stringify({ password }) });
      await response.arrayBuffer();
      // The refund runs when Express has sent the response: let it land before the next attempt.
      await new Promise((resolve) => setTimeout(resolve, 5));
      return response.status;
    };
    try {
      const statuses = [];
      for (let attempt = 0; attempt < 20; attempt++) statuses.push(await login(`2001:db8:aa:bb${attempt.toString(16).padStart(2, "0")}::${attempt}`, attempt % 2 === 0 ? "right" : `guess-${attempt}`));
      assert.deepEqual(statuses, [200, 401, 200, 401, 200, 401, 200, 401, 200, 401, ...new Array(10).fill(429)]);
      assert.equal(await login("198.51.100.7", "guess"), 401, "another client has its own budget");
    } finally {
      await server.close();
    }
  });

  test("behind a trusted proxy, 20 addresses of one IPv6 /64 against a limit of 5: 5 admitted", async () => {
    const limiter = new lib.RateLimiter(new lib.MemoryStore(), { api: { kind: "token bucket", rate: 5, period: MINUTE } });
    const app = express();
    app.set("trust proxy", "loopback");
    app.get("/", http.expressRateLimit(limiter, "api", { key: (req) => http.ipKey(req.ip) }), (req, res) => res.send("hello"));
    const server = await serve(app);
    try {
      const statuses = [];
      for (let host = 1; host <= 20; host++) {
        const response = await fetch(`${server.base}/`, { headers: { "x-forwarded-for": `2a01:4f8:c17:e9c4:${host.toString(16)}::${host}` } });
        await response.arrayBuffer();
        statuses.push(response.status);
      }
      assert.equal(statuses.filter((status) => status === 200).length, 5, String(statuses));
      const bad = await fetch(`${server.base}/`, { headers: { "x-forwarded-for": "not-an-address" } });
      assert.equal(bad.status, 400, "an address that is not one is the client's bad input");
    } finally {
      await server.close();
    }
  });

  test("a key past 1,024 bytes from a header is limited under its hash, never a 500", async () => {
    const limiter = new lib.RateLimiter(new lib.MemoryStore(), { api: ALGORITHMS["token bucket"] });
    const server = await listen(limiter, { now: START });
    try {
      const statuses = [];
      for (let sent = 0; sent < 4; sent++) statuses.push((await server.get("/api/hello", START, "k".repeat(8_000))).status);
      assert.deepEqual(statuses, [200, 200, 200, 429]);
    } finally {
      await server.close();
    }
  });

  test("warns once per app, as express-rate-limit does, when trust proxy is true, or when X-Forwarded-For comes while it is off", async () => {
    const limiter = new lib.RateLimiter(new lib.MemoryStore(), { api: { kind: "token bucket", rate: 100, period: MINUTE } });
    const permissive = express();
    permissive.set("trust proxy", true);
    permissive.get("/", http.expressRateLimit(limiter, "api", { key: (req) => http.ipKey(req.ip) }), (req, res) => res.send("hello"));
    const unset = express();
    unset.get("/", http.expressRateLimit(limiter, "api", { key: (req) => http.ipKey(req.ip) }), (req, res) => res.send("hello"));
    const careful = express();
    careful.set("trust proxy", 1);
    careful.get("/", http.expressRateLimit(limiter, "api", { key: (req) => http.ipKey(req.ip) }), (req, res) => res.send("hello"));
    const servers = await Promise.all([permissive, unset, careful].map(serve));
    try {
      const warnings = await collectingWarnings(async () => {
        for (const { base } of servers) {
          for (let sent = 0; sent < 3; sent++) await (await fetch(`${base}/`, { headers: { "x-forwarded-for": "203.0.113.9" } })).arrayBuffer();
        }
      });
      assert.equal(warnings.length, 2, warnings.join("\n"));
      assert.match(warnings[0], /HTTP_GUARD_TRUST_PROXY: Express's 'trust proxy' is true/);
      assert.match(warnings[1], /HTTP_GUARD_UNTRUSTED_FORWARDED/);
    } finally {
      await Promise.all(servers.map(({ close }) => close()));
    }
  });
});
