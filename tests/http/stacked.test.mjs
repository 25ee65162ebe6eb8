// Guards stacked on one route (issue 28, item 7): a guard per limit, as docs/http.md says to
// stack them, through Express 5 on loopback, Hono's app.request and httpGuard on one Request.
// Each guard appends its limit's member to RateLimit and RateLimit-Policy (the same limit twice
// keeps one, with the later figures), drafts 6 and 7 report the tightest limit, a 429's
// Retry-After is the refusing limit's, and a guard with refundSuccessful (a grant) sends the
// fields of its own limit.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import express from "express";
import { Hono } from "hono";
import { cors } from "hono/cors";
import * as lib from "../../pkg/dist/node.js";
import * as http from "../../pkg/dist/http.js";

const START = 1_000_000; // the window of 60 s from 960 000 ends in 20 s; the one of 15 min from 900 000 in 800 s
const LIMITS = {
  global: { kind: "fixed window", rate: 100, period: 60_000, start: 0 },
  login: { kind: "fixed window", rate: 5, period: 15 * lib.MINUTE, start: 0 },
  api: { kind: "fixed window", rate: 3, period: 60_000, start: 0 },
};
const GLOBAL = { name: "global", keyed: false };
const POLICIES = '"global";q=100;w=60, "login";q=5;w=900';
const limiterAt = (now = START) => new lib.RateLimiter(new lib.MemoryStore(), LIMITS, { now: () => now });
/** The draft-10 RateLimit field after `sent` requests to both limits. */
const both = (sent, loginLeft = 5 - sent) => `"global";r=${100 - sent};t=20, "login";r=${loginLeft};t=800`;

/** Serves an Express app on loopback; resolves with `post(path, body)` and `close()`. */
async function serve(app) {
  const server = await new Promise((resolve) => {
    const listening = app.listen(0, "127.0.0.1", () => resolve(listening));
  });
  const base = `http://127.0.0.1:${server.address().port}`;
  const post = async (path, password = "wrong") => {
    const response = await fetch(base + path, { method: "POST", headers: { "x-client": "203.0.113.7", "content-type": "application/json" }, body: JSON.stringify({ password }) });
    const body = await response.text();
    // A refund runs when Express has sent the response: let it land before the next request.
    await new Promise((resolve) => setTimeout(resolve, 5));
    return { response, body };
  };
  return { post, close: () => new Promise((resolve) => server.close(resolve)) };
}

/** What a test reads of a response: status, the rate-limit fields, Retry-After. */
const fieldsOf = (response) => ({
  status: response.status,
  policy: response.headers.get("ratelimit-policy"),
  limit: response.headers.get("ratelimit"),
  retryAfter: response.headers.get("retry-after"),
});

/** The login route's answers to five failed attempts and a sixth, as fieldsOf gives them. */
const FIVE_FAILURES_THEN_429 = [
  ...[1, 2, 3, 4, 5].map((sent) => ({ status: 401, policy: POLICIES, limit: both(sent), retryAfter: null })),
  { status: 429, policy: POLICIES, limit: both(6, 0), retryAfter: "800" },
];

describe("Express 5: guards stacked on one route", () => {
  test("a global guard and a login guard with refundSuccessful: both members in RateLimit and RateLimit-Policy; the 429 is login's", async () => {
    const limiter = limiterAt();
    const app = express();
    app.use(http.expressRateLimit(limiter, GLOBAL));
    const login = http.expressRateLimit(limiter, "login", { key: (req) => req.get("x-client"), refundSuccessful: true });
    app.post("/login", express.json(), login, (req, res) => (req.body.password === "right" ? res.json({ welcome: true }) : res.status(401).json({ wrong: true })));
    const server = await serve(app);
    try {
      const welcome = await server.post("/login", "right");
      assert.deepEqual(fieldsOf(welcome.response), { status: 200, policy: POLICIES, limit: both(1, 4), retryAfter: null }, "a grant's own member is there");
      // The success was refunded: login is full again; global keeps its token.
      const seen = [];
      for (let attempt = 0; attempt < 6; attempt++) {
        const { response, body } = await server.post("/login");
        seen.push(fieldsOf(response));
        if (response.status === 429) assert.deepEqual(JSON.parse(body)["violated-policies"], ["login"]);
      }
      assert.deepEqual(seen, FIVE_FAILURES_THEN_429.map((fields, index) => ({ ...fields, limit: fields.limit.replace(/"global";r=\d+/, `"global";r=${100 - index - 2}`) })));
    } finally {
      await server.close();
    }
  });

  test("the same limit guarded twice keeps one member, with the later decision's figures", async () => {
    const limiter = limiterAt();
    const app = express();
    const api = () => http.expressRateLimit(limiter, "api", { key: (req) => req.get("x-client") });
    app.use(api());
    app.post("/twice", api(), (req, res) => res.status(401).send("no"));
    const server = await serve(app);
    try {
      assert.deepEqual(fieldsOf((await server.post("/twice")).response), { status: 401, policy: '"api";q=3;w=60', limit: '"api";r=1;t=20', retryAfter: null });
      assert.deepEqual(fieldsOf((await server.post("/twice")).response), { status: 429, policy: '"api";q=3;w=60', limit: '"api";r=0;t=20', retryAfter: "20" });
    } finally {
      await server.close();
    }
  });

  test("drafts 6 and 7: RateLimit-Policy lists both, the single-value fields report the tightest limit", async () => {
    for (const headers of ["draft-6", "draft-7"]) {
      const limiter = limiterAt();
      const app = express();
      app.use(http.expressRateLimit(limiter, GLOBAL, { headers }));
      app.post("/login", http.expressRateLimit(limiter, "login", { key: (req) => req.get("x-client"), headers }), (req, res) => res.status(401).send("no"));
      const server = await serve(app);
      try {
        const { response } = await server.post("/login");
        assert.equal(response.headers.get("ratelimit-policy"), "100;w=60, 5;w=900", headers);
        if (headers === "draft-7") assert.equal(response.headers.get("ratelimit"), "limit=5, remaining=4, reset=800");
        else assert.deepEqual(["limit", "remaining", "reset"].map((field) => response.headers.get(`ratelimit-${field}`)), ["5", "4", "800"]);
      } finally {
        await server.close();
      }
    }
  });
});

describe("Hono: guards stacked on one route (app.request)", () => {
  function app(limiter) {
    const hono = new Hono();
    hono.use("*", http.honoRateLimit(limiter, GLOBAL));
    const login = http.honoRateLimit(limiter, "login", { key: (c) => c.req.header("x-client"), refundSuccessful: true });
    hono.post("/login", login, async (c) => ((await c.req.json()).password === "right" ? c.json({ welcome: true }) : c.json({ wrong: true }, 401)));
    // A handler that returns a Response of its own, which drops headers set before it.
    hono.post("/own", login, () => new Response("no", { status: 401 }));
    return hono;
  }
  const post = (hono, path, password = "wrong") =>
    hono.request(path, { method: "POST", headers: { "x-client": "203.0.113.7", "content-type": "application/json" }, body: JSON.stringify({ password }) });

  test("a global guard and a login guard with refundSuccessful: both members; the 429 is login's, with login's Retry-After", async () => {
    const hono = app(limiterAt());
    assert.deepEqual(fieldsOf(await post(hono, "/login", "right")), { status: 200, policy: POLICIES, limit: both(1, 4), retryAfter: null });
    const seen = [];
    for (let attempt = 0; attempt < 6; attempt++) {
      const response = await post(hono, attempt % 2 === 0 ? "/login" : "/own");
      seen.push(fieldsOf(response));
      if (response.status === 429) assert.deepEqual((await response.json())["violated-policies"], ["login"]);
    }
    assert.deepEqual(seen, FIVE_FAILURES_THEN_429.map((fields, index) => ({ ...fields, limit: fields.limit.replace(/"global";r=\d+/, `"global";r=${100 - index - 2}`) })));
  });

  test("behind cors() (which sets its fields on c.res before the route), a refusing second guard's 429 keeps both members", async () => {
    const limiter = limiterAt();
    const hono = new Hono();
    hono.use("*", cors());
    hono.use("*", http.honoRateLimit(limiter, GLOBAL));
    hono.post("/login", http.honoRateLimit(limiter, "login", { key: (c) => c.req.header("x-client") }), (c) => c.text("no", 401));
    const seen = [];
    for (let sent = 0; sent < 6; sent++) seen.push(fieldsOf(await post(hono, "/login")));
    assert.deepEqual(seen, FIVE_FAILURES_THEN_429);
  });

  test("the same limit guarded twice keeps one member, with the later decision's figures", async () => {
    const limiter = limiterAt();
    const hono = new Hono();
    const api = () => http.honoRateLimit(limiter, "api", { key: (c) => c.req.header("x-client") });
    hono.use("*", api());
    hono.post("/twice", api(), (c) => c.text("no", 401));
    assert.deepEqual(fieldsOf(await post(hono, "/twice")), { status: 401, policy: '"api";q=3;w=60', limit: '"api";r=1;t=20', retryAfter: null });
    assert.deepEqual(fieldsOf(await post(hono, "/twice")), { status: 429, policy: '"api";q=3;w=60', limit: '"api";r=0;t=20', retryAfter: "20" });
  });
});

describe("httpGuard: guards stacked on one Request", () => {
  test("the second guard's headers and 429 carry both members; a lone grant guard carries its own", async () => {
    const limiter = limiterAt();
    const global = http.httpGuard(limiter, GLOBAL);
    const login = http.httpGuard(limiter, "login", { key: (request) => request.headers.get("x-client") ?? undefined, refundSuccessful: true });
    const attempt = async () => {
      const request = new Request("http://localhost/login", { method: "POST", headers: { "x-client": "203.0.113.7" } });
      const first = await global(request);
      assert.equal(first.ok, true);
      const second = await login(request);
      if (!second.ok) return fieldsOf(second.response);
      const response = new Response("no", { status: 401, headers: second.headers });
      await second.finish(response);
      return fieldsOf(response);
    };
    const seen = [];
    for (let sent = 0; sent < 6; sent++) seen.push(await attempt());
    assert.deepEqual(seen, FIVE_FAILURES_THEN_429);
    const alone = await login(new Request("http://localhost/login", { headers: { "x-client": "198.51.100.1" } }));
    assert.deepEqual([alone.headers.get("ratelimit-policy"), alone.headers.get("ratelimit")], ['"login";q=5;w=900', '"login";r=4;t=800']);
  });
});
