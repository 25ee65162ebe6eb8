// The scenarios a Redis client that redisStore takes as it is must pass, in any runtime: run by
// tests/redis/clients.test.mjs with valkey-glide in Node and, through tests/redis/bun-client.mjs,
// with Bun's RedisClient in Bun. No test framework: each scenario throws when it fails.
import assert from "node:assert/strict";

const NOW = 1_700_000_000_000;

/**
 * Runs every scenario on `client` (connected to an empty server) with `ratebound`'s
 * `RateLimiter` and `ratebound/redis`'s `redisStore`; resolves with the scenarios' names.
 */
export async function runClientScenarios(client, { RateLimiter, redisStore }) {
  const limits = { burst: { kind: "token bucket", rate: 5, period: 60_000 }, hourly: { kind: "fixed window", rate: 3, period: 3_600_000 } };
  const limiter = new RateLimiter(redisStore(client, { prefix: "clients:" }), limits, { now: () => NOW });
  const passed = [];
  const scenario = async (name, body) => {
    await body();
    passed.push(name);
  };
  await scenario("40 concurrent calls on one key admit exactly the capacity of 5", async () => {
    const outcomes = await Promise.all(Array.from({ length: 40 }, () => limiter.limit("burst", { key: "ada" })));
    assert.equal(outcomes.filter((outcome) => outcome.ok).length, 5);
  });
  await scenario("a refusal says when to retry: one token back at 5 a minute is 12 s", async () => {
    const refused = await limiter.limit("burst", { key: "ada" });
    assert.equal(refused.ok, false);
    assert.equal(refused.retryAfter, 12_000);
  });
  await scenario("getValue reads the state the calls wrote, and a fresh key is full", async () => {
    assert.equal((await limiter.getValue("burst", { key: "ada" })).value, 0);
    assert.equal((await limiter.getValue("burst", { key: "grace" })).value, 5);
  });
  await scenario("a fixed window counts across calls and limitAll takes both limits or neither", async () => {
    assert.deepEqual(await limiter.limitAll([{ name: "hourly", key: "bo", count: 2 }, { name: "burst", key: "bo" }]), { ok: true });
    assert.equal((await limiter.limitAll([{ name: "hourly", key: "bo", count: 2 }, { name: "burst", key: "bo" }])).ok, false);
    assert.equal((await limiter.getValue("burst", { key: "bo" })).value, 4, "the refused batch took nothing");
  });
  await scenario("reset makes the key full again", async () => {
    await limiter.reset("burst", { key: "ada" });
    assert.equal((await limiter.getValue("burst", { key: "ada" })).value, 5);
    assert.equal((await limiter.limit("burst", { key: "ada", count: 5 })).ok, true);
  });
  return passed;
}
