// The same small app in Fastify 5, Koa 3 and NestJS 11 (Express platform), each served on
// loopback (127.0.0.1, an ephemeral port) by the framework itself: GET /api/hello guarded by the
// "api" limit keyed by x-user, GET /open unguarded, POST /login guarded at the route alone
// (refundSuccessful: x-password "right" is a 200, anything else a 401). `api` and `login` are the
// guards' options. Each resolves with `{ base, calls, logged, close() }`: `calls` counts the
// handlers that ran, `logged` holds what the framework logged at warn and error level.
import "reflect-metadata";
import Fastify from "fastify";
import Koa from "koa";
import { Controller, Get, Module, Post, Req, Res, UseGuards } from "@nestjs/common";
import { NestFactory } from "@nestjs/core";
import * as http from "../../pkg/dist/http.js";

const byUser = { key: (request) => (request.get ? request.get("x-user") || undefined : request.headers["x-user"]) };
const passwordOf = (headers) => headers["x-password"];

export const FRAMEWORKS = {
  async Fastify(limiter, { api = {}, login = {} } = {}) {
    const calls = { count: 0 };
    const logged = [];
    const app = Fastify({ logger: { level: "warn", stream: { write: (line) => logged.push(line) } } });
    // The API's routes in a context of their own: the plugin guards them, and not /open.
    await app.register(async (scope) => {
      await scope.register(http.fastifyRateLimit(limiter, "api", { ...byUser, ...api }));
      scope.get("/api/hello", async () => (calls.count++, { hello: "world" }));
    });
    app.get("/open", async () => "open");
    const loginLimit = http.fastifyRateLimit(limiter, "login", { ...byUser, refundSuccessful: true, ...login });
    app.post("/login", { onRequest: loginLimit.hook }, async (request, reply) => {
      calls.count++;
      if (passwordOf(request.headers) === "right") return { welcome: true };
      return reply.code(401).send({ wrong: true });
    });
    const address = await app.listen({ port: 0, host: "127.0.0.1" });
    return { base: address, calls, logged, close: () => app.close() };
  },

  async Koa(limiter, { api = {}, login = {} } = {}) {
    const calls = { count: 0 };
    const logged = [];
    const app = new Koa();
    app.silent = true;
    app.on("error", (error) => logged.push(String(error)));
    const apiLimit = http.koaRateLimit(limiter, "api", { ...byUser, ...api });
    const loginLimit = http.koaRateLimit(limiter, "login", { ...byUser, refundSuccessful: true, ...login });
    app.use((ctx, next) => (ctx.path.startsWith("/api/") ? apiLimit(ctx, next) : ctx.path === "/login" ? loginLimit(ctx, next) : next()));
    app.use((ctx) => {
      if (ctx.path === "/api/hello") (calls.count++, (ctx.body = { hello: "world" }));
      else if (ctx.path === "/open") ctx.body = "open";
      else if (ctx.path === "/login" && ctx.method === "POST") {
        calls.count++;
        if (passwordOf(ctx.headers) === "right") ctx.body = { welcome: true };
        else ctx.throw(401, "wrong password"); // through the guard as an error: it counts with its status
      }
    });
    const server = await new Promise((resolve) => {
      const listening = app.listen(0, "127.0.0.1", () => resolve(listening));
    });
    return { base: `http://127.0.0.1:${server.address().port}`, calls, logged, close: () => new Promise((resolve) => server.close(resolve)) };
  },

  async NestJS(limiter, { api = {}, login = {} } = {}) {
    const calls = { count: 0 };
    const logged = [];
    // Decorators applied as functions: this file is plain JavaScript.
    class ApiController {
      hello() {
        calls.count++;
        return { hello: "world" };
      }
      open() {
        return "open";
      }
    }
    class LoginController {
      login(req, res) {
        calls.count++;
        if (passwordOf(req.headers) === "right") res.status(200).json({ welcome: true });
        else res.status(401).json({ wrong: true });
      }
    }
    const method = (decorator, target, name) => decorator(target.prototype, name, Object.getOwnPropertyDescriptor(target.prototype, name));
    Controller()(ApiController);
    method(Get("api/hello"), ApiController, "hello");
    method(UseGuards(http.nestRateLimit(limiter, "api", { ...byUser, ...api })), ApiController, "hello");
    method(Get("open"), ApiController, "open");
    Controller("login")(LoginController);
    method(Post(), LoginController, "login");
    method(UseGuards(http.nestRateLimit(limiter, "login", { ...byUser, refundSuccessful: true, ...login })), LoginController, "login");
    Req()(LoginController.prototype, "login", 0);
    Res()(LoginController.prototype, "login", 1);
    class AppModule {}
    Module({ controllers: [ApiController, LoginController] })(AppModule);
    const logger = { log() {}, debug() {}, verbose() {}, warn: (...args) => logged.push(args.join(" ")), error: (...args) => logged.push(args.join(" ")), fatal: (...args) => logged.push(args.join(" ")) };
    const app = await NestFactory.create(AppModule, { logger });
    await app.listen(0, "127.0.0.1");
    return { base: `http://127.0.0.1:${app.getHttpServer().address().port}`, calls, logged, close: () => app.close() };
  },
};
