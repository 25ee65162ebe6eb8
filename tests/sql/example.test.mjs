// examples/postgres, run as it is (node server.mjs, with ratebound installed as pkg/) against a
// real PostgreSQL server: a post and its limit commit together, a refused post leaves no row, and
// 20 posts at once from one user create exactly the 3 the limit allows.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { copyFileSync, mkdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { scratch } from "../hosts/workerd.mjs";
import { startPostgres } from "./postgres-server.mjs";

const repo = fileURLToPath(new URL("../../", import.meta.url));
let server;
let work;
let app;
let base;

before(async () => {
  server = await startPostgres();
  work = scratch("example-postgres");
  mkdirSync(join(work.dir, "node_modules"));
  symlinkSync(join(repo, "pkg"), join(work.dir, "node_modules", "ratebound"), "dir");
  symlinkSync(join(repo, "node_modules", "pg"), join(work.dir, "node_modules", "pg"), "dir");
  copyFileSync(join(repo, "examples", "postgres", "server.mjs"), join(work.dir, "server.mjs"));
  copyFileSync(join(repo, "examples", "postgres", "package.json"), join(work.dir, "package.json"));
  app = spawn(process.execPath, ["server.mjs"], {
    cwd: work.dir,
    env: { ...process.env, DATABASE_URL: server.connectionString, PORT: "0" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  base = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the example did not start in 20 s")), 20_000);
    app.stdout.on("data", (chunk) => {
      const match = /listening on (http:\/\/\S+)/.exec(String(chunk));
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    app.once("exit", (code) => reject(new Error(`the example exited with ${code}`)));
  });
});

after(async () => {
  app?.kill();
  server?.stop();
  work?.remove();
});

const postAs = (user, body) => fetch(`${base}/posts`, { method: "POST", headers: { "x-user": user }, body, signal: AbortSignal.timeout(10_000) });

test("examples/postgres: three posts are created, the fourth is refused with 429 and leaves no row", async () => {
  const statuses = [];
  for (const body of ["one", "two", "three", "four"]) statuses.push((await postAs("ada", body)).status);
  assert.deepEqual(statuses, [201, 201, 201, 429]);
  const refused = await postAs("ada", "five");
  assert.match(refused.headers.get("retry-after") ?? "", /^[1-6]$/, "whole seconds until the next token (one every 6 s)");
  const posts = await (await fetch(`${base}/posts`, { headers: { "x-user": "ada" } })).json();
  assert.deepEqual(posts.map((post) => post.body), ["one", "two", "three"]);
});

test("examples/postgres: 20 posts at once from one user create exactly 3 rows", async () => {
  const statuses = await Promise.all(Array.from({ length: 20 }, (_, index) => postAs("bob", `post ${index}`).then((response) => response.status)));
  assert.equal(statuses.filter((status) => status === 201).length, 3);
  assert.equal(statuses.filter((status) => status === 429).length, 17);
  const client = new pg.Client(server.connectionString);
  await client.connect();
  try {
    const { rows } = await client.query("SELECT count(*)::int AS n FROM posts WHERE author = 'bob'");
    assert.equal(rows[0].n, 3);
  } finally {
    await client.end();
  }
});
