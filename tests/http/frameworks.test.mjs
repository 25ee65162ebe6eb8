// fastifyRateLimit, koaRateLimit and nestRateLimit in the real frameworks (Fastify 5, Koa 3,
// NestJS 11 on Express), each serving the app of framework-apps.mjs on loopback: the core's
// draft-10 figures on allowed responses, a 429 with Retry-After and a problem document past the
// bound, a 503 with Retry-After when the store throws (the error to onError, never to the
// framework), successful logins refunded at one route, an app's own bug as the framework's 500,
// and nothing the framework logs about the answers.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import * as lib from "../../pkg/dist/node.js";
import { FRAMEWORKS } from "./framework-apps.mjs";
import { ALGORITHMS, START, expectedFields } from "./scenarios.mjs";

const { MINUTE } = lib;
const down = Object.assign(new Error("the store is down"), { code: "STORE_DOWN" });
const throwingStore = { read() { throw down; }, write() { throw down; } };
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const LIMITS = { api: ALGORITHMS["token bucket"], login: { kind: "fixed window", rate: 3, period: 15 * MINUTE, start: 0 } };

/** A limiter on `store` whose clock stands at START. */
const limiterOn = (store = new lib.MemoryStore()) => new lib.RateLimiter(store, LIMITS, { now: () => START });

/** Serves the framework's app for the length of `body`, closed after, also on failure. */
async function serving(framework, limiter, options, body) {
  const app = await FRAMEWORKS[framework](limiter, options);
  try {
    await body(app);
  } finally {
    await app.close();
  }
}

for (const framework of Object.keys(FRAMEWORKS)) {
  describe(`${framework} on loopback`, () => {
    test("allowed responses carry the core's draft-10 figures, the fourth is a 429 with Retry-After never short, other keys and routes go on", async () => {
      const limiter = limiterOn();
      await serving(framework, limiter, {}, async ({ base, calls, logged }) => {
        const get = (path, user) => fetch(base + path, { headers: user === undefined ? {} : { "x-user": user } });
        for (let sent = 0; sent < 3; sent++) {
          const response = await get("/api/hello", "ada");
          assert.equal(response.status, 200);
          assert.deepEqual(await response.json(), { hello: "world" });
          const want = await expectedFields(lib, limiter, ["api"], "ada", START);
          assert.equal(response.headers.get("ratelimit-policy"), want.policy);
          assert.equal(response.headers.get("ratelimit"), want.limit);
        }
        const refused = await get("/api/hello", "ada");
        assert.equal(refused.status, 429);
        assert.equal(refused.headers.get("content-type"), "application/problem+json");
        const { retryAfter } = await limiter.check("api", { key: "ada" });
        const seconds = Number(refused.headers.get("retry-after"));
        assert.ok(seconds * 1000 >= retryAfter && seconds * 1000 < retryAfter + 1000, `Retry-After ${seconds} s for ${retryAfter} ms`);
        assert.equal(refused.headers.get("ratelimit"), '"api";r=0;t=60');
        assert.equal(refused.headers.get("ratelimit-policy"), '"api";q=3;w=60');
        assert.deepEqual(await refused.json(), {
          type: "https://iana.org/assignments/http-problem-types#quota-exceeded",
          title: "Too Many Requests",
          status: 429,
          detail: `Retry after ${seconds} s.`,
          "violated-policies": ["api"],
        });
        assert.equal(calls.count, 3, "the refused request never reached the route");
        assert.equal((await get("/api/hello", "grace")).status, 200, "another key has its own budget");
        for (let sent = 0; sent < 5; sent++) {
          const open = await get("/open", "ada");
          assert.equal(open.status, 200);
          assert.equal(open.headers.get("ratelimit"), null, "an unguarded route is neither limited nor labelled");
        }
        assert.deepEqual(logged, [], "the framework logged nothing about the answers");
      });
    });

    test("a throwing store is a 503 with Retry-After and a problem document; the error goes to onError, the route never runs", async () => {
      const reported = [];
      await serving(framework, limiterOn(throwingStore), { api: { onError: (error) => reported.push(error) } }, async ({ base, calls, logged }) => {
        const response = await fetch(`${base}/api/hello`, { headers: { "x-user": "ada" } });
        assert.equal(response.status, 503);
        assert.equal(response.headers.get("retry-after"), "5");
        assert.equal(response.headers.get("content-type"), "application/problem+json");
        assert.deepEqual(await response.json(), { type: "about:blank", title: "Service Unavailable", status: 503, detail: "The rate limiter is unavailable. Retry after 5 s." });
        assert.deepEqual(reported, [down]);
        assert.equal(calls.count, 0);
        assert.deepEqual(logged, [], "the framework's error handling never saw it");
      });
    });

    test("a route-level login guard with refundSuccessful: successes are refunded, 3 failures, then 429", async () => {
      await serving(framework, limiterOn(), {}, async ({ base }) => {
        const login = async (password, user = "ada") => {
          const response = await fetch(`${base}/login`, { method: "POST", headers: { "x-user": user, "x-password": password } });
          await response.arrayBuffer();
          await sleep(5); // a refund on the response's finish: let it land before the next attempt
          return response.status;
        };
        const statuses = [];
        for (const password of ["right", "wrong", "right", "wrong", "right", "wrong", "right", "right"]) statuses.push(await login(password));
        assert.deepEqual(statuses, [200, 401, 200, 401, 200, 401, 429, 429]);
        assert.equal(await login("right", "grace"), 200, "another client has its own budget");
      });
    });

    test("an app's own bug (a key that gives a number) is the framework's 500, not a 503", async () => {
      await serving(framework, limiterOn(), { api: { key: () => 7 } }, async ({ base, calls, logged }) => {
        const response = await fetch(`${base}/api/hello`);
        assert.equal(response.status, 500);
        assert.equal(response.headers.get("retry-after"), null);
        assert.equal(calls.count, 0);
        assert.match(logged.join("\n"), /HTTP_GUARD_KEY|options\.key\(request\) must give a string/, "the framework reported the bug");
      });
    });
  });
}

describe("NestJS", () => {
  test("the guard is a CanActivate for HTTP on the Express platform: another context or platform is the app's bug, named", async () => {
    const guard = (await import("../../pkg/dist/http.js")).nestRateLimit(limiterOn(), "api");
    await assert.rejects(guard.canActivate({ getType: () => "rpc", switchToHttp: () => assert.fail("not HTTP") }), { code: "HTTP_GUARD_CONFIG", message: /guards HTTP requests \(got a rpc context\)/ });
    // A Fastify reply, as Nest's Fastify platform gives it: no setHeader. Refused by name, never half-written.
    const fastifyPlatform = { getType: () => "http", switchToHttp: () => ({ getRequest: () => ({ headers: {}, get: () => undefined }), getResponse: () => ({ code() {}, header() {}, send() {} }) }) };
    await assert.rejects(guard.canActivate(fastifyPlatform), { code: "HTTP_GUARD_CONFIG", message: /needs Nest's Express platform/ });
  });
});

describe("Fastify", () => {
  test("the hook as a route's preHandler: count reads the parsed body", async () => {
    const { default: Fastify } = await import("fastify");
    const http = await import("../../pkg/dist/http.js");
    const limiter = limiterOn();
    const app = Fastify();
    const batch = http.fastifyRateLimit(limiter, "api", { key: () => "ada", count: (request) => request.body.items.length });
    app.post("/batch", { preHandler: batch.hook }, async (request) => ({ took: request.body.items.length }));
    try {
      const send = (items) => app.inject({ method: "POST", url: "/batch", payload: { items } });
      const first = await send([1, 2]);
      assert.equal(first.statusCode, 200);
      assert.equal(first.headers.ratelimit, '"api";r=1;t=40');
      const refused = await send([3, 4]);
      assert.equal(refused.statusCode, 429, "2 tokens asked, 1 left");
      assert.equal(refused.headers["content-type"], "application/problem+json");
      assert.equal((await send([5])).statusCode, 200);
    } finally {
      await app.close();
    }
  });

  test("the plugin guards the context it is registered in: at the root, every route", async () => {
    const { default: Fastify } = await import("fastify");
    const http = await import("../../pkg/dist/http.js");
    const app = Fastify();
    await app.register(http.fastifyRateLimit(limiterOn(), "api", { key: () => "everyone" }));
    app.get("/a", async () => "a");
    app.get("/b", async () => "b");
    try {
      const statuses = [];
      for (const path of ["/a", "/b", "/a", "/b"]) statuses.push((await app.inject({ method: "GET", url: path })).statusCode);
      assert.deepEqual(statuses, [200, 200, 200, 429]);
    } finally {
      await app.close();
    }
  });
});

test("ratebound/http loads, as ESM and through require, in a project without any of the frameworks", () => {
  const dir = mkdtempSync(join(tmpdir(), "ratebound-no-frameworks-"));
  try {
    mkdirSync(join(dir, "node_modules"));
    cpSync(fileURLToPath(new URL("../../pkg/", import.meta.url)), join(dir, "node_modules", "ratebound"), { recursive: true });
    const names = "fastifyRateLimit,koaRateLimit,nestRateLimit,sveltekitRateLimit,makePlan,decide,responseOf,rateLimitHeaders";
    const esm = `const http = await import("ratebound/http"); console.log("${names}".split(",").map((name) => typeof http[name]).join())`;
    const cjs = `const http = require("ratebound/http"); console.log("${names}".split(",").map((name) => typeof http[name]).join())`;
    const functions = new Array(8).fill("function").join();
    assert.equal(execFileSync(process.execPath, ["--input-type=module", "-e", esm], { cwd: dir, encoding: "utf8" }).trim(), functions);
    assert.equal(execFileSync(process.execPath, ["-e", cjs], { cwd: dir, encoding: "utf8" }).trim(), functions);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
