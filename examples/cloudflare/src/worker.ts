// A Worker whose API is rate limited per user by a Durable Object: one object per user, so each
// user's requests are decided one at a time, in the object that stores that user's limits.
import { HOUR, MINUTE, type RateLimitConfig } from "ratebound";
import { rateLimiterClient, rateLimiterObject, type DurableObjectStubLike } from "ratebound/durable-object";
import { httpGuard, ipKey } from "ratebound/http";

export const LIMITS = {
  // 60 requests a minute per user, up to 10 at once.
  api: { kind: "token bucket", rate: 60, period: MINUTE, capacity: 10 },
  // 5 uploads an hour per user, in fixed windows (each user's windows start at a random instant).
  upload: { kind: "fixed window", rate: 5, period: HOUR },
} satisfies Record<string, RateLimitConfig>;

/** The Durable Object class: export it, and bind it in wrangler.toml. */
export class RateLimits extends rateLimiterObject(LIMITS) {}

/** The bindings this Worker uses (with @cloudflare/workers-types: `DurableObjectNamespace<RateLimits>`). */
interface Env {
  RATE_LIMITS: { idFromName(name: string): unknown; get(id: unknown): DurableObjectStubLike };
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const user = request.headers.get("x-user");
    // A signed-in user by name; anyone else by address: Cloudflare puts the client's in
    // CF-Connecting-IP, and ipKey keys an IPv6 client by its /56 (one subscriber's many addresses).
    const who = user ? `user:${user}` : `ip:${ipKey(request.headers.get("cf-connecting-ip") ?? undefined)}`;
    // One object per key: route to it by name.
    const limiter = rateLimiterClient<typeof LIMITS>(env.RATE_LIMITS.get(env.RATE_LIMITS.idFromName(who)));
    // A refusal is a ready 429 with Retry-After, a store failure a 503; allowed responses carry the RateLimit headers.
    const guard = httpGuard(limiter, request.method === "PUT" ? "upload" : "api", { key: () => who });
    const { ok, headers, response } = await guard(request);
    if (!ok) return response;
    return new Response(`Hello, ${user ?? "stranger"}`, { headers });
  },
};
