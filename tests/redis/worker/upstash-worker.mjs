// A Cloudflare Worker that limits through ratebound/redis over @upstash/redis's Workers build:
// the way an edge function that cannot open TCP sockets uses Redis. Bundled by
// tests/redis/workerd.test.mjs and run in real workerd against the Upstash REST bridge.
import { RateLimiter } from "ratebound";
import { redisStore } from "ratebound/redis";
import { Redis } from "@upstash/redis/cloudflare";

const LIMITS = { daily: { kind: "token bucket", rate: 10, period: 86_400_000 } };

export default {
  async fetch(request, env) {
    const redis = new Redis({ url: env.UPSTASH_URL, token: "bridge-ignores-it", retry: false, enableTelemetry: false });
    const limiter = new RateLimiter(redisStore(redis, { maxAttempts: 200, maxDelayMs: 20, timeoutMs: 10_000 }), LIMITS);
    try {
      return Response.json(await limiter.limit("daily", { key: new URL(request.url).searchParams.get("key") ?? undefined }));
    } catch (error) {
      return Response.json({ error: String(error), code: error?.code }, { status: 503 });
    }
  },
};
