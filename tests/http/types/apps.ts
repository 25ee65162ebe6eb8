// The middleware fits each framework's own published types (skipLibCheck false): Hono's
// app.use and a typed Context in `key`, Express 5's app.use and its Request in `key`; the guard
// takes a RateLimiter or a Durable Object's rateLimiterClient; limit names are checked.
import express, { type Request as ExpressRequest } from "express";
import { Hono, type Context } from "hono";
import { MemoryStore, MINUTE, RateLimiter, type RateLimitConfig } from "ratebound";
import { rateLimiterClient, type DurableObjectStubLike } from "ratebound/durable-object";
import { expressRateLimit, honoRateLimit, httpGuard, type GuardResult } from "ratebound/http";

const LIMITS = {
  api: { kind: "token bucket", rate: 60, period: MINUTE },
  global: { kind: "fixed window", rate: 1000, period: MINUTE },
} satisfies Record<string, RateLimitConfig>;
const limiter = new RateLimiter(new MemoryStore(), LIMITS);

const hono = new Hono<{ Variables: { user: string } }>();
hono.use("/api/*", honoRateLimit(limiter, "api", { key: (c) => c.req.header("x-user") }));
hono.use("*", honoRateLimit<typeof LIMITS, Context<{ Variables: { user: string } }>>(limiter, ["api", "global"], { key: (c) => c.get("user"), headers: "draft-8" }));

const app = express();
app.use(expressRateLimit(limiter, "api", { key: (req: ExpressRequest) => req.ip, count: () => 1, headers: "draft-7" }));
app.use("/upload", expressRateLimit(limiter, ["api", "global"], { onRefused: ({ retryAfter }) => ({ error: "slow down", retryAfter }) }));

export async function handle(request: Request, stub: DurableObjectStubLike): Promise<Response> {
  const guard = httpGuard(rateLimiterClient<typeof LIMITS>(stub), "api", { key: (r) => r.headers.get("x-user") ?? undefined });
  const result: GuardResult = await guard(request);
  if (!result.ok) return result.response;
  return new Response("hello", { headers: result.headers });
}

// @ts-expect-error an unknown limit name
httpGuard(limiter, "nope");
// @ts-expect-error an unknown header draft
httpGuard(limiter, "api", { headers: "draft-9" });
