// ratebound/http in a fetch-only app without Hono, Express or Node's types installed, on lib
// es2020 with every declaration checked (skipLibCheck false).
import { MemoryStore, MINUTE, RateLimiter } from "ratebound";
import { HttpGuardError, httpGuard, type HeaderDraft } from "ratebound/http";

const limiter = new RateLimiter(new MemoryStore(), { api: { kind: "token bucket", rate: 60, period: MINUTE } });
const draft: HeaderDraft = "draft-6";
const guard = httpGuard(limiter, "api", { key: (request) => request.headers.get("x-user") ?? undefined, headers: draft });

export async function fetchHandler(request: Request): Promise<Response> {
  try {
    const { ok, headers, response } = await guard(request);
    return ok ? new Response("hello", { headers }) : response;
  } catch (error) {
    return new Response(error instanceof HttpGuardError ? error.code : "unavailable", { status: 503 });
  }
}
