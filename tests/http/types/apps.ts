// The middleware fits each framework's own published types (skipLibCheck false): a key written
// inline at a route-level Express guard sees Express's request (req.ip, req.get, req.body), at a
// Hono route Hono's context (c.req.header, c.get), at httpGuard the fetch Request; annotated with
// the framework's own type, the key gets it whole. The guard takes a RateLimiter or a Durable
// Object's rateLimiterClient; limit names are checked.
import express, { type Request as ExpressRequest } from "express";
import { Hono, type Context } from "hono";
import { MemoryStore, MINUTE, RateLimiter, type RateLimitConfig } from "ratebound";
import { rateLimiterClient, type DurableObjectStubLike } from "ratebound/durable-object";
import { expressRateLimit, honoRateLimit, httpGuard, ipKey, storedKey, type GuardResult, type Unavailable } from "ratebound/http";

const LIMITS = {
  api: { kind: "token bucket", rate: 60, period: MINUTE },
  global: { kind: "fixed window", rate: 1000, period: MINUTE },
  login: { kind: "fixed window", rate: 5, period: 15 * MINUTE },
} satisfies Record<string, RateLimitConfig>;
const limiter = new RateLimiter(new MemoryStore(), LIMITS);

// Issue 25 item 5, as a user writes it.
const app = express();
app.post("/login", expressRateLimit(limiter, "login", { key: (req) => req.ip }), (req, res) => {
  res.send("ok");
});
app.post("/login2", express.json(), expressRateLimit(limiter, "login", { key: (req) => ipKey(req.ip), refundSuccessful: true, successful: (status) => status < 300 }), (req, res) => {
  res.send("ok");
});
app.get("/users/:id", expressRateLimit(limiter, "api", { key: (req) => `${req.params.id}:${req.get("x-api-key") ?? ""}:${String(req.body?.user)}` }), (req, res) => {
  res.send(req.params.id);
});
app.use(expressRateLimit(limiter, "api", { key: (req: ExpressRequest) => req.ip, count: () => 1, headers: "draft-7" }));
app.use("/upload", expressRateLimit(limiter, ["api", "global"], { onRefused: ({ retryAfter }) => ({ error: "slow down", retryAfter }) }));
app.use("/x", expressRateLimit(limiter, "api", { key: (req) => req.headers["x-user"]?.toString(), onError: (error, req) => console.error(req.ip, error) }));
const router = express.Router();
router.post("/login", expressRateLimit(limiter, "login", { key: (req) => ipKey(req.ip, { ipv6Subnet: 64 }) }), (req, res) => {
  res.send("ok");
});

type Env = { Variables: { user: string }; Bindings: { SECRET: string } };
const hono = new Hono<Env>();
hono.use("/api/*", honoRateLimit(limiter, "api", { key: (c) => c.req.header("x-user") }));
hono.use("/api/*", honoRateLimit(limiter, "api", { key: (c) => c.get("user") }));
hono.post("/login", honoRateLimit(limiter, "login", { key: (c) => ipKey(c.req.header("cf-connecting-ip")), refundSuccessful: true }), (c) => c.text("ok"));
hono.use("*", honoRateLimit(limiter, ["api", "global"], { key: (c: Context<Env>) => c.get("user"), headers: "draft-8" }));
hono.use("*", honoRateLimit<typeof LIMITS, Context<Env>>(limiter, "api", { key: (c) => c.var.user }));

export async function handle(request: Request, stub: DurableObjectStubLike): Promise<Response> {
  const guard = httpGuard(rateLimiterClient<typeof LIMITS>(stub), ["api", "global"], {
    key: async (r) => storedKey(r.headers.get("x-user") ?? ""),
    onUnavailable: (failure: Unavailable<Request>) => ({ retryAfter: failure.retryAfter, url: failure.request.url }),
    unavailableRetryAfter: 10,
  });
  const result: GuardResult = await guard(request);
  if (!result.ok) return result.response;
  const response = new Response("hello", { headers: result.headers });
  await result.finish(response);
  return response;
}

// @ts-expect-error an unknown limit name
httpGuard(limiter, "nope");
// @ts-expect-error an unknown header draft
httpGuard(limiter, "api", { headers: "draft-9" });
// @ts-expect-error Express's request has no such field
app.post("/typo", expressRateLimit(limiter, "login", { key: (req) => req.ipp }));
// @ts-expect-error the fetch Request has no ip
httpGuard(limiter, "api", { key: (request) => request.ip });
// @ts-expect-error ipKey takes options, not a number
ipKey("::1", 64);

// A limiter whose failure policy the types know (declared on a limit, or on the limiter) is guarded as any other.
const declared = new RateLimiter(
  new MemoryStore(),
  { login: { kind: "fixed window", rate: 5, period: 15 * MINUTE, onStoreError: { fallback: "memory" } }, search: { kind: "token bucket", rate: 100, period: MINUTE } },
  { onStoreError: "open" },
);
app.post("/declared", expressRateLimit(declared, ["login", "search"], { key: (req) => ipKey(req.ip) }));
hono.use("/declared/*", honoRateLimit(declared, "search"));
export const declaredGuard = httpGuard(declared, "login");
// @ts-expect-error its names are checked too
httpGuard(declared, "logn");
