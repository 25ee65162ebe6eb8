// A Deno HTTP handler whose posts are rate limited per user on Deno KV: the limit's state and the
// post itself commit in one atomic operation, so a refused or failed post leaves nothing behind
// and concurrent requests (from any number of isolates) never admit more than the limit.
//
//   deno run --unstable-kv --allow-net=127.0.0.1 main.ts
import { MINUTE, RateLimiter, type RateLimitConfig } from "ratebound";
import { KvConflictError, kvTransaction } from "ratebound/deno-kv";

export const LIMITS = {
  // One post every ~6 s per user, up to 3 in quick succession.
  post: { kind: "token bucket", rate: 10, period: MINUTE, capacity: 3 },
} satisfies Record<string, RateLimitConfig>;

/** The app: `POST /posts` (body: the post) and `GET /posts`, as the user in the `x-user` header. */
export function createHandler(kv: Deno.Kv): (request: Request) => Promise<Response> {
  return async (request) => {
    const user = request.headers.get("x-user");
    if (!user) return new Response("Who are you? Send an x-user header.", { status: 401 });
    const { pathname } = new URL(request.url);
    if (pathname !== "/posts") return new Response("Not found", { status: 404 });

    if (request.method === "GET") {
      const posts = [];
      for await (const entry of kv.list<string>({ prefix: ["posts", user] })) posts.push(entry.value);
      return Response.json(posts);
    }
    if (request.method !== "POST") return new Response("Method not allowed", { status: 405 });

    const text = await request.text();
    try {
      const status = await kvTransaction(kv, async (tx) => {
        const status = await new RateLimiter(tx, LIMITS).limit("post", { key: user });
        if (status.ok) {
          // The app's own reads and writes go through the same transaction.
          const count = (await tx.get<number>(["postCount", user])) ?? 0;
          tx.set(["posts", user, count], text);
          tx.set(["postCount", user], count + 1);
        }
        return status;
      });
      if (!status.ok) {
        const seconds = Math.ceil(status.retryAfter / 1000);
        return new Response(`Too many posts: retry in ${seconds} s`, { status: 429, headers: { "retry-after": String(seconds) } });
      }
      return new Response("Posted", { status: 201 });
    } catch (error) {
      // Fail closed: the database stayed too contended to commit; nothing was written.
      if (error instanceof KvConflictError) return new Response("Busy: retry shortly", { status: 503, headers: { "retry-after": "1" } });
      throw error;
    }
  };
}

if (import.meta.main) {
  const kv = await Deno.openKv();
  Deno.serve({ hostname: "127.0.0.1", port: 8000 }, createHandler(kv));
}
