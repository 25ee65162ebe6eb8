// Fastify 5, Koa 3, NestJS 11 and SvelteKit 2 take the guards as their own published types say
// (strict, module nodenext, skipLibCheck false): the Fastify plugin through app.register and its
// hook as a route's onRequest or preHandler, the Koa middleware in app.use, the Nest guard in
// UseGuards and useGlobalGuards, the SvelteKit handle as a Handle and in sequence. A key written
// inline sees the framework's request; annotated with the framework's own type, it gets it whole.
import Fastify, { type FastifyRequest } from "fastify";
import Koa, { type ParameterizedContext } from "koa";
import { UseGuards, type CanActivate, type INestApplication } from "@nestjs/common";
import type { Handle, RequestEvent } from "@sveltejs/kit";
import { sequence } from "@sveltejs/kit/hooks";
import { MemoryStore, MINUTE, RateLimiter, type RateLimitConfig } from "ratebound";
import { decide, fastifyRateLimit, ipKey, koaRateLimit, makePlan, nestRateLimit, rateLimitHeaders, responseOf, sveltekitRateLimit } from "ratebound/http";

const LIMITS = {
  api: { kind: "token bucket", rate: 60, period: MINUTE },
  login: { kind: "fixed window", rate: 5, period: 15 * MINUTE },
} satisfies Record<string, RateLimitConfig>;
const limiter = new RateLimiter(new MemoryStore(), LIMITS);

// Fastify: the plugin, scoped and global, and the hook per route.
const fastify = Fastify();
await fastify.register(fastifyRateLimit(limiter, "api", { key: (request) => ipKey(request.ip) }));
await fastify.register(async (api) => {
  await api.register(fastifyRateLimit(limiter, ["api", "login"], { key: (request) => request.headers["x-api-key"]?.toString(), headers: "draft-8" }));
  api.get("/api/hello", async () => ({ hello: "world" }));
});
const login = fastifyRateLimit(limiter, "login", { key: (request: FastifyRequest) => ipKey(request.ip), refundSuccessful: true, successful: (status) => status < 300 });
fastify.post("/login", { onRequest: login.hook }, async () => "ok");
fastify.post("/login2", { preHandler: [login.hook] }, async () => "ok");
fastify.get<{ Params: { id: string } }>("/users/:id", { onRequest: fastifyRateLimit(limiter, "api", { key: (request) => `${request.method} ${request.url}` }).hook }, async (request) => request.params.id);

// Koa: the middleware, with the context's own state type when annotated.
type State = { user?: string };
const koa = new Koa<State>();
koa.use(koaRateLimit(limiter, "api", { key: (ctx) => ipKey(ctx.ip), onError: (error, ctx) => console.error(ctx.path, error) }));
koa.use(koaRateLimit(limiter, "api", { key: (ctx: ParameterizedContext<State>) => ctx.state.user, count: (ctx) => (ctx.method === "POST" ? 2 : 1) }));
koa.use(koaRateLimit(limiter, "login", { key: (ctx) => ctx.get("x-user") || undefined, refundSuccessful: true }));

// NestJS: a CanActivate for UseGuards (decorator factories called as values: no decorator syntax here) and for the app.
const guard: CanActivate = nestRateLimit(limiter, "api", { key: (req) => ipKey(req.ip) });
UseGuards(guard, nestRateLimit(limiter, "login", { key: (req) => ipKey(req.ip), refundSuccessful: true }));
export function secure(app: INestApplication): void {
  app.useGlobalGuards(nestRateLimit(limiter, "api", { key: (req) => req.get("x-api-key") }));
}

// SvelteKit: a Handle, alone or in sequence, with RequestEvent's own fields when annotated.
export const handle: Handle = sveltekitRateLimit(limiter, "api", { key: (event) => ipKey(event.getClientAddress()) });
export const handles: Handle = sequence(
  sveltekitRateLimit(limiter, "api", { key: (event: RequestEvent) => event.cookies.get("session") }),
  sveltekitRateLimit(limiter, "login", { key: (event) => (event.route.id === "/login" ? ipKey(event.getClientAddress()) : undefined) }),
);
const perClient = { key: (event: RequestEvent) => ipKey(event.getClientAddress()) };
const apiHandle = sveltekitRateLimit(limiter, "api", perClient);
const loginHandle = sveltekitRateLimit(limiter, "login", { ...perClient, refundSuccessful: true });
export const routed: Handle = ({ event, resolve }) => (event.url.pathname === "/login" ? loginHandle : apiHandle)({ event, resolve });

// The generic API, for any other framework.
const plan = makePlan<Request>("myGuard", limiter, "api", { key: (request) => request.headers.get("x-api-key") ?? undefined });
export async function guarded(request: Request): Promise<Response> {
  const decision = await decide(plan, request);
  if (!decision.ok) return responseOf(decision);
  const response = new Response("hello", { headers: decision.headers });
  await decision.finish(response.status);
  return response;
}
export const pairs: Promise<Array<[string, string]>> = rateLimitHeaders("draft-7", [{ name: "api", figures: { limit: 10, remaining: 9, reset: 6, window: 60, sampled: 1, effectiveWindow: 6 } }]);

// @ts-expect-error Fastify's request has no such field
fastifyRateLimit(limiter, "api", { key: (request) => request.ipp });
// @ts-expect-error an unknown limit name
koaRateLimit(limiter, "nope");
// @ts-expect-error Koa's context has no such field
koaRateLimit(limiter, "api", { key: (ctx) => ctx.ipp });
// @ts-expect-error Express's request (Nest's platform) has no such field
nestRateLimit(limiter, "api", { key: (req) => req.ipp });
// @ts-expect-error SvelteKit's event has no such field
sveltekitRateLimit(limiter, "api", { key: (event) => event.clientAddress });
// @ts-expect-error an unknown header draft
sveltekitRateLimit(limiter, "api", { headers: "draft-9" });
