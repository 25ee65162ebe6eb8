// onDecision on a store that decides next to its data (issue 33 item 4): the Redis script's round
// trip is the event's storeMs, and a store that says how many calls shared its round trip
// (RemoteAnswer.batchSize, as a grouping store answers it) has that reported as the event's
// batchSize; one that does not says nothing, and the call is reported alone.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createClient } from "redis";
import { RateLimiter } from "../../pkg/dist/node.js";
import { redisStore } from "../../pkg/dist/redis.js";
import { startRedis } from "./servers.mjs";

const NOW = 1_700_000_000_000;
const LIMITS = { api: { kind: "token bucket", rate: 2, period: 60_000 } };

describe("onDecision on a real redis-server", () => {
  let server;
  let client;
  before(async () => {
    server = await startRedis();
    client = createClient({ url: server.url });
    await client.connect();
  });
  after(() => {
    if (client?.isOpen) client.destroy();
    server?.stop();
  });

  test("each call is one event with the script's round trip as storeMs, batchSize 1", async () => {
    const events = [];
    const limiter = new RateLimiter(redisStore(client, { prefix: "plain:" }), LIMITS, { now: () => NOW, onDecision: (event) => events.push(event) });
    for (let call = 0; call < 3; call++) await limiter.limit("api", { key: "ada" });
    assert.deepEqual(
      events.map(({ outcome, batchSize, retryAfter }) => ({ outcome, batchSize, retryAfter })),
      [
        { outcome: "allowed", batchSize: 1, retryAfter: undefined },
        { outcome: "allowed", batchSize: 1, retryAfter: undefined },
        { outcome: "refused", batchSize: 1, retryAfter: 30_000 },
      ],
    );
    for (const { storeMs } of events) assert.ok(storeMs > 0 && storeMs < 1_000, `storeMs ${storeMs}`);
  });

  test("calls group-committed into one EVALSHA each report the group's size", async () => {
    const events = [];
    const limiter = new RateLimiter(redisStore(client, { prefix: "group:" }), { api: { kind: "token bucket", rate: 100, period: 60_000 } }, { now: () => NOW, onDecision: (event) => events.push(event) });
    await limiter.limit("api", { key: "warm-up" }); // alone: the script is loaded
    events.length = 0;
    await Promise.all(["a", "b", "c", "d", "e"].map((key) => limiter.limit("api", { key })));
    assert.deepEqual(events.map(({ batchSize }) => batchSize), [5, 5, 5, 5, 5]);
  });

  test("a store's answer that says how many calls shared its round trip is the events' batchSize", async () => {
    const inner = redisStore(client, { prefix: "grouped:" });
    // A store whose decide answers as a grouping one would: the same answer, and the group's size.
    const grouped = { read: inner.read.bind(inner), write: inner.write.bind(inner), decide: async (batch) => ({ ...(await inner.decide(batch)), batchSize: 4 }) };
    const events = [];
    const limiter = new RateLimiter(grouped, LIMITS, { now: () => NOW, onDecision: (event) => events.push(event) });
    await limiter.limit("api", { key: "ada" });
    // A limitAll's events say the store's group too (it counts calls, the limitAll's among them).
    await limiter.limitAll([{ name: "api", key: "grace" }, { name: "api", key: "alan" }]);
    assert.deepEqual(
      events.map(({ key, outcome, batchSize }) => ({ key, outcome, batchSize })),
      [
        { key: "ada", outcome: "allowed", batchSize: 4 },
        { key: "grace", outcome: "allowed", batchSize: 4 },
        { key: "alan", outcome: "allowed", batchSize: 4 },
      ],
    );
  });
});
