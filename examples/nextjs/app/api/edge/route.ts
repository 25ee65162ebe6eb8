// A route handler on the edge runtime, its limit in Redis through Upstash's REST API.
import { Redis } from "@upstash/redis";
import { MINUTE, RateLimiter } from "ratebound";
import { redisStore } from "ratebound/redis";
import { httpGuard } from "ratebound/http";
import { clientKey } from "../../../lib/client-key";

export const runtime = "edge";

let guard: ReturnType<typeof httpGuard> | undefined;

export async function GET(request: Request) {
  guard ??= httpGuard(
    new RateLimiter(redisStore(Redis.fromEnv(), { timeoutMs: 500 }), {
      search: { kind: "fixed window", rate: 3, period: MINUTE },
    }),
    "search",
    { key: clientKey },
  );
  const decision = await guard(request);
  if (!decision.ok) return decision.response; // 429 refused, 503 when Redis is down
  const response = Response.json({ results: [], runtime: process.env.NEXT_RUNTIME }, { headers: decision.headers });
  await decision.finish(response);
  return response;
}
