// The HTTP guard on a concurrency limit: requests in flight per key, on a real Express server and
// through the fetch guard. A request holds a slot from the guard until its response ends: sent,
// failed in the handler (Express's 500), or aborted by the client (the socket closed before an
// answer); each way the slot comes back once, and a request past max in flight gets a 429.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { spawn } from "node:child_process";
import { copyFileSync, cpSync, mkdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import express from "express";
import Fastify from "fastify";
import Koa from "koa";
import "reflect-metadata";
import { Controller, Get, Module, UseGuards } from "@nestjs/common";
import { NestFactory } from "@nestjs/core";
import { MemoryStore, RateLimiter } from "../../pkg/dist/node.js";
import { expressRateLimit, fastifyRateLimit, httpGuard, koaRateLimit, nestRateLimit } from "../../pkg/dist/http.js";
import { scratch } from "../hosts/workerd.mjs";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const LIMITS = { inflight: { kind: "concurrency", max: 1, lease: 60_000 } };
const until = async (what, check) => {
  for (let tries = 0; tries < 200; tries++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`never: ${what}`);
};

describe("expressRateLimit on a concurrency limit: requests in flight per key", () => {
  let server;
  let base;
  const limiter = new RateLimiter(new MemoryStore(), LIMITS);
  const held = [];
  before(async () => {
    const app = express();
    app.use(expressRateLimit(limiter, "inflight", { key: (req) => String(req.query.user) }));
    app.get("/hold", (req, res) => held.push(res));
    app.get("/boom", () => {
      throw new Error("the handler failed");
    });
    app.get("/ok", (req, res) => res.send("ok"));
    app.use((error, req, res, next) => res.status(500).send("failed"));
    server = http.createServer(app);
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${server.address().port}`;
  });
  after(() => new Promise((resolve) => server.close(resolve)));

  const free = async (user) => {
    const answer = await limiter.limit("inflight", { key: user });
    if (answer.ok) await answer.lease.release();
    return answer.ok;
  };

  test("a second request while one is in flight is refused; the slot is back when the first response is sent", async () => {
    const first = fetch(`${base}/hold?user=a`);
    await until("the first request is in its handler", () => held.length === 1);
    const second = await fetch(`${base}/ok?user=a`);
    assert.equal(second.status, 429);
    assert.equal((await fetch(`${base}/ok?user=b`)).status, 200, "another key has its own slots");
    held.pop().send("done");
    assert.equal((await first).status, 200);
    await until("the slot is back", () => free("a"));
    assert.equal((await fetch(`${base}/ok?user=a`)).status, 200);
  });

  test("a handler that fails (Express's 500) gives the slot back", async () => {
    assert.equal((await fetch(`${base}/boom?user=c`)).status, 500);
    await until("the slot is back", () => free("c"));
  });

  test("a client that aborts before the answer gives the slot back", async () => {
    const controller = new AbortController();
    const aborted = fetch(`${base}/hold?user=d`, { signal: controller.signal }).catch((error) => error.name);
    await until("the request is in its handler", () => held.length === 1);
    assert.equal(await free("d"), false, "held while in flight");
    controller.abort();
    assert.equal(await aborted, "AbortError");
    await until("the slot is back after the socket closed", () => free("d"));
    held.pop().end();
  });
});

test("fastifyRateLimit on a concurrency limit: a client that aborts gives the slot back, a finished response too", async () => {
  const limiter = new RateLimiter(new MemoryStore(), LIMITS);
  const app = Fastify();
  const held = [];
  await app.register(fastifyRateLimit(limiter, "inflight", { key: () => "k" }));
  app.get("/hold", (request, reply) => new Promise((resolve) => held.push(() => resolve("done"))));
  app.get("/ok", async () => "ok");
  const address = await app.listen({ port: 0, host: "127.0.0.1" });
  try {
    const free = async () => {
      const answer = await limiter.limit("inflight", { key: "k" });
      if (answer.ok) await answer.lease.release();
      return answer.ok;
    };
    const controller = new AbortController();
    const aborted = fetch(`${address}/hold`, { signal: controller.signal }).catch((error) => error.name);
    await until("the request is in its handler", () => held.length === 1);
    assert.equal((await fetch(`${address}/ok`)).status, 429);
    controller.abort();
    assert.equal(await aborted, "AbortError");
    await until("the slot is back after the socket closed", free);
    held.pop()();
    assert.equal((await fetch(`${address}/ok`)).status, 200);
    await until("the slot is back after the response", free);
  } finally {
    await app.close();
  }
});

test("httpGuard on a concurrency limit: finish(response) gives the slot back, once", async () => {
  const limiter = new RateLimiter(new MemoryStore(), LIMITS);
  const guard = httpGuard(limiter, "inflight", { key: () => "k" });
  const first = await guard(new Request("http://x/"));
  assert.equal(first.ok, true);
  const second = await guard(new Request("http://x/"));
  assert.equal(second.ok, false);
  assert.equal(second.response.status, 429);
  await first.finish(new Response("ok"));
  await first.finish(500);
  const third = await guard(new Request("http://x/"));
  assert.equal(third.ok, true, "back after finish");
  assert.equal((await guard(new Request("http://x/"))).ok, false, "a second finish gave back nothing more");
});

/**
 * The same in-flight checks on a framework served on loopback: `open(limiter, held)` serves
 * GET /hold (answers when `held.pop()()` is called), /boom (the handler throws) and /ok, all
 * guarded by the "inflight" limit keyed by the `user` query parameter, and resolves with
 * `{ base, close() }` (and `held()`, `release()`, `free(user)` when its limiter is elsewhere).
 */
function inFlightOn(framework, open) {
  describe(`${framework} on a concurrency limit: requests in flight per key`, () => {
    const limiter = new RateLimiter(new MemoryStore(), LIMITS);
    const inProcess = [];
    let served;
    before(async () => (served = await open(limiter, inProcess)));
    after(() => served.close());
    const heldCount = () => (served.held ? served.held() : inProcess.length);
    const held = {
      get length() {
        return heldCount();
      },
    };
    const release = () => (served.release ? served.release() : inProcess.pop()());
    const free = async (user) => {
      if (served.free) return served.free(user);
      const answer = await limiter.limit("inflight", { key: user });
      if (answer.ok) await answer.lease.release();
      return answer.ok;
    };
    const get = (path, init) => fetch(`${served.base}${path}`, init);

    test("a second request while one is in flight is refused; the slot is back when the first response is sent", async () => {
      const first = get("/hold?user=a");
      await until("the first request is in its handler", async () => (await held.length) === 1);
      assert.equal((await get("/ok?user=a")).status, 429);
      assert.equal((await get("/ok?user=b")).status, 200, "another key has its own slots");
      await release();
      assert.equal((await first).status, 200);
      await until("the slot is back", () => free("a"));
      assert.equal((await get("/ok?user=a")).status, 200);
    });

    test("a handler that throws (a 500) gives the slot back", async () => {
      assert.equal((await get("/boom?user=c")).status, 500);
      await until("the slot is back", () => free("c"));
    });

    test("a client that aborts before the answer gives the slot back while the handler still runs", async () => {
      const controller = new AbortController();
      const aborted = get("/hold?user=d", { signal: controller.signal }).catch((error) => error.name);
      await until("the request is in its handler", async () => (await held.length) === 1);
      assert.equal(await free("d"), false, "held while in flight");
      controller.abort();
      assert.equal(await aborted, "AbortError");
      await until("the slot is back after the socket closed", () => free("d"));
      await release();
    });
  });
}

inFlightOn("koaRateLimit (Koa 3)", async (limiter, held) => {
  const app = new Koa();
  app.silent = true;
  app.use(koaRateLimit(limiter, "inflight", { key: (ctx) => String(ctx.query.user) }));
  app.use(async (ctx) => {
    if (ctx.path === "/hold") await new Promise((resolve) => held.push(resolve));
    if (ctx.path === "/boom") throw new Error("the handler failed");
    ctx.body = "ok";
  });
  const server = await new Promise((resolve) => {
    const listening = app.listen(0, "127.0.0.1", () => resolve(listening));
  });
  return { base: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((resolve) => server.close(resolve)) };
});

inFlightOn("nestRateLimit (NestJS 11, Express platform)", async (limiter, held) => {
  class InFlightController {
    hold() {
      return new Promise((resolve) => held.push(() => resolve("done")));
    }
    boom() {
      throw new Error("the handler failed");
    }
    ok() {
      return "ok";
    }
  }
  const method = (decorator, name) => decorator(InFlightController.prototype, name, Object.getOwnPropertyDescriptor(InFlightController.prototype, name));
  Controller()(InFlightController);
  for (const name of ["hold", "boom", "ok"]) method(Get(name), name);
  UseGuards(nestRateLimit(limiter, "inflight", { key: (req) => String(req.query.user) }))(InFlightController);
  class AppModule {}
  Module({ controllers: [InFlightController] })(AppModule);
  const quiet = { log() {}, debug() {}, verbose() {}, warn() {}, error() {}, fatal() {} };
  const app = await NestFactory.create(AppModule, { logger: quiet });
  await app.listen(0, "127.0.0.1");
  return { base: `http://127.0.0.1:${app.getHttpServer().address().port}`, close: () => app.close() };
});

inFlightOn("honoRateLimit (Hono behind Bun.serve)", async () => {
  const work = scratch("http-concurrency-hono");
  mkdirSync(join(work.dir, "node_modules"));
  // A copy, not a link: under the repository Bun would apply tsconfig.json's paths to pkg/'s own imports.
  cpSync(join(repo, "pkg"), join(work.dir, "node_modules", "ratebound"), { recursive: true });
  symlinkSync(join(repo, "node_modules", "hono"), join(work.dir, "node_modules", "hono"));
  copyFileSync(new URL("./concurrency-hono.mjs", import.meta.url), join(work.dir, "app.mjs"));
  const child = spawn(join(repo, "node_modules", ".bin", "bun"), ["app.mjs"], { cwd: work.dir, env: { ...process.env, DO_NOT_TRACK: "1" }, detached: true, stdio: ["ignore", "pipe", "ignore"] });
  const line = await new Promise((resolve, reject) => {
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (chunk) => {
      out += chunk;
      if (out.includes("\n")) resolve(out.split("\n")[0]);
    });
    child.on("close", (code) => reject(new Error(`bun exited with ${code}`)));
  });
  const base = `http://127.0.0.1:${JSON.parse(line).port}`;
  const text = async (path) => (await fetch(`${base}${path}`)).text();
  return {
    base: `${base}/g`,
    held: async () => Number(await text("/held")),
    release: () => text("/release"),
    free: async (user) => (await text(`/free?user=${user}`)) === "true",
    close: () => {
      process.kill(-child.pid, "SIGKILL");
      work.remove();
    },
  };
});
