// Next.js's request interceptor (proxy.ts, formerly middleware.ts; it runs on the Node.js
// runtime): every /api request takes a token of its client's `api` limit before any route runs.
import { NextResponse, type NextRequest } from "next/server";
import { httpGuard } from "ratebound/http";
import { clientKey } from "./lib/client-key";
import { nodeLimiter } from "./lib/node-limiter";

let guard: ReturnType<typeof httpGuard> | undefined;

export async function proxy(request: NextRequest) {
  guard ??= httpGuard(nodeLimiter(), "api", { key: clientKey });
  const decision = await guard(request);
  if (!decision.ok) return decision.response; // 429 with Retry-After and the RateLimit fields
  // Admitted: the route answers. Its own RateLimit fields (if it has a limit) are the ones the
  // client needs; Next.js would keep a proxy's header over the route's of the same name.
  return NextResponse.next();
}

export const config = { matcher: "/api/:path*" };
