// A route handler on the Node.js runtime (the default), its limit in Redis through node-redis.
import { httpGuard } from "ratebound/http";
import { clientKey } from "../../../lib/client-key";
import { nodeLimiter } from "../../../lib/node-limiter";

let guard: ReturnType<typeof httpGuard> | undefined;

export async function GET(request: Request) {
  guard ??= httpGuard(nodeLimiter(), "send", { key: clientKey });
  const decision = await guard(request);
  if (!decision.ok) return decision.response; // 429 refused, 503 when Redis is down
  const response = Response.json({ sent: true, runtime: process.env.NEXT_RUNTIME }, { headers: decision.headers });
  await decision.finish(response);
  return response;
}
