// A node:http server whose posts are rate limited per user on PostgreSQL: the post's INSERT and
// the limit run in one transaction, so a refused post rolls its row back, a failed request leaves
// nothing behind, and any number of server processes never admit more than the limit.
//
//   DATABASE_URL=postgresql://localhost/app PORT=8787 node server.mjs
//   curl -X POST -H "x-user: ada" -d "hello" http://127.0.0.1:8787/posts
import { createServer } from "node:http";
import pg from "pg";
import { MINUTE, RateLimiter } from "ratebound";
import { createTable, postgresStore } from "ratebound/postgres";

/** One post every ~6 s per user, up to 3 in quick succession. */
export const LIMITS = { post: { kind: "token bucket", rate: 10, period: MINUTE, capacity: 3 } };

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
await createTable(pool);
await pool.query("CREATE TABLE IF NOT EXISTS posts (id serial PRIMARY KEY, author text NOT NULL, body text NOT NULL)");

/** Answers with JSON. */
function reply(response, status, body, headers = {}) {
  response.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body));
}

/** The request's body as text. */
async function textOf(request) {
  const chunks = [];
  for await (const chunk of request) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8");
}

/** `POST /posts` (body: the post) and `GET /posts`, as the user in the `x-user` header. */
async function handle(request, response) {
  const user = request.headers["x-user"];
  if (!user) return reply(response, 401, { error: "Who are you? Send an x-user header." });
  if (request.url !== "/posts") return reply(response, 404, { error: "Not found" });
  if (request.method === "GET") {
    const { rows } = await pool.query("SELECT id, body FROM posts WHERE author = $1 ORDER BY id", [user]);
    return reply(response, 200, rows);
  }
  if (request.method !== "POST") return reply(response, 405, { error: "Method not allowed" });

  const body = await textOf(request);
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    const { rows } = await client.query("INSERT INTO posts (author, body) VALUES ($1, $2) RETURNING id", [user, body]);
    // The limit joins this transaction: its state commits with the post, or not at all.
    const status = await new RateLimiter(postgresStore(client), LIMITS).limit("post", { key: user });
    if (!status.ok) {
      await client.query("ROLLBACK"); // the post's row goes too
      return reply(response, 429, { error: "Too many posts", retryAfter: status.retryAfter }, { "retry-after": String(Math.ceil(status.retryAfter / 1000)) });
    }
    await client.query("COMMIT");
    return reply(response, 201, { id: rows[0].id });
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    // Fail closed: a lost connection, a lock timeout or a corrupt state admits nothing.
    return reply(response, 503, { error: "Unavailable", code: error.code });
  } finally {
    client.release();
  }
}

const server = createServer((request, response) => {
  handle(request, response).catch((error) => reply(response, 500, { error: String(error) }));
});
server.listen(Number(process.env.PORT ?? 8787), "127.0.0.1", () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}`);
});
