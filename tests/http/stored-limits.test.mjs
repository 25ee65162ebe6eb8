// The HTTP guard honours stored limits: a key's own limit (set by another limiter instance) applies
// to the guard's key, and its headers show that limit's quota; on a MemoryStore and on a real
// redis-server.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createClient } from "redis";
import { MemoryStore, RateLimiter } from "../../pkg/dist/node.js";
import { httpGuard } from "../../pkg/dist/http.js";
import { redisStore } from "../../pkg/dist/redis.js";
import { startRedis } from "../redis/servers.mjs";

const LIMITS = { api: { kind: "token bucket", rate: 10, period: 60_000 } };
const NOW = 1_700_000_000_000;

/** `count` requests with `x-api-key: key` through a guard on `limiter`: whether each passed, and its policy header. */
async function requests(limiter, key, count) {
  const guard = httpGuard(limiter, "api", { key: (request) => request.headers.get("x-api-key") ?? undefined });
  const seen = [];
  for (let index = 0; index < count; index++) {
    const decision = await guard(new Request("https://api.example/", { headers: { "x-api-key": key } }));
    seen.push({ ok: decision.ok, policy: new Headers(decision.headers).get("ratelimit-policy") });
  }
  return seen;
}

async function scenario(setter, guarded) {
  await setter.setLimit("api", { kind: "token bucket", rate: 2, period: 60_000 }, { key: "acme" });
  const acme = await requests(guarded, "acme", 3);
  assert.deepEqual(acme.map((each) => each.ok), [true, true, false]);
  assert.ok(acme.every((each) => each.policy === '"api";q=2;w=60'), JSON.stringify(acme));
  const other = await requests(guarded, "globex", 3);
  assert.deepEqual(other.map((each) => each.ok), [true, true, true]);
  assert.ok(other.every((each) => each.policy === '"api";q=10;w=60'), JSON.stringify(other));
}

test("on a MemoryStore, the guard's key decides on its stored limit", async () => {
  const store = new MemoryStore();
  const make = () => new RateLimiter(store, LIMITS, { now: () => NOW, storedLimits: true });
  await scenario(make(), make());
});

describe("on a real redis-server", () => {
  let redis;
  const clients = [];
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    await Promise.all(clients.map((client) => client.quit().catch(() => {})));
    redis?.stop();
  });
  test("a limit stored through one client is what the guard on another decides on", async () => {
    for (let index = 0; index < 2; index++) {
      const client = createClient({ url: redis.url });
      client.on("error", () => {});
      await client.connect();
      clients.push(client);
    }
    const [setter, guarded] = clients.map((client) => new RateLimiter(redisStore(client), LIMITS, { now: () => NOW, storedLimits: true }));
    await scenario(setter, guarded);
  });
});
