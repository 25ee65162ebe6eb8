// examples/deno-kv, run as it is: its handler served by Deno.serve on a loopback port, over a
// Deno KV database file, and asked over HTTP.
import assert from "node:assert/strict";
import { createHandler } from "../../../examples/deno-kv/main.ts";

/** The example served on 127.0.0.1 (a free port) over a fresh database; cleaned up afterwards. */
async function withServer(run) {
  const dir = await Deno.makeTempDir({ prefix: "ratebound-deno-example-" });
  const kv = await Deno.openKv(`${dir}/kv.sqlite`);
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, createHandler(kv));
  const origin = `http://127.0.0.1:${server.addr.port}`;
  const ask = async (user, method = "GET", body) => {
    const response = await fetch(`${origin}/posts`, { method, body, headers: user ? { "x-user": user } : {}, signal: AbortSignal.timeout(30_000) });
    return { status: response.status, retryAfter: response.headers.get("retry-after"), text: await response.text() };
  };
  try {
    await run(ask);
  } finally {
    await server.shutdown();
    kv.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("three quick posts are stored, the fourth is refused with Retry-After and not stored", () =>
  withServer(async (ask) => {
    for (const body of ["one", "two", "three"]) assert.equal((await ask("ada", "POST", body)).status, 201);
    const refused = await ask("ada", "POST", "four");
    assert.deepEqual([refused.status, refused.retryAfter], [429, "6"]);
    assert.deepEqual(JSON.parse((await ask("ada")).text), ["one", "two", "three"]);
    assert.equal((await ask("bob", "POST", "hi")).status, 201);
  }));

Deno.test("ten concurrent posts by one user: exactly three stored, each under its own number", () =>
  withServer(async (ask) => {
    const answers = await Promise.all(Array.from({ length: 10 }, (_, index) => ask("cy", "POST", `post ${index}`)));
    assert.equal(answers.filter(({ status }) => status === 201).length, 3);
    assert.equal(answers.filter(({ status }) => status === 429).length, 7);
    assert.equal(JSON.parse((await ask("cy")).text).length, 3);
  }));

Deno.test("a request without a user is turned away", () =>
  withServer(async (ask) => {
    assert.equal((await ask(undefined, "POST", "x")).status, 401);
  }));
