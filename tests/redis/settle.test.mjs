// Settle on a real redis-server (tests/settle/scenarios.mjs) through node-redis, ioredis and
// @upstash/redis over the REST bridge: every settle is one optimistic transaction (GETs, then the
// commit script); each limiter has its own connection. The same concurrent settles through the
// store's bare read and write, without the transaction, refund more than once.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { RateLimiter } from "../../pkg/dist/node.js";
import { redisStore } from "../../pkg/dist/redis.js";
import { CLIENTS, startRedis, startUpstashBridge } from "./servers.mjs";
import { SCENARIOS, bareStore, concurrentSettlesWithoutTransaction, grantFiguresAreLimitFigures } from "../settle/scenarios.mjs";

const KINDS = ["token bucket", "fixed window"];

describe("settle on a real redis-server", () => {
  let redis;
  let bridge;
  const opened = [];
  before(async () => {
    redis = await startRedis();
    bridge = await startUpstashBridge(redis.url);
  });
  after(async () => {
    await Promise.all(opened.map(({ close }) => close().catch(() => {})));
    await bridge?.stop();
    redis?.stop();
  });

  for (const client of Object.keys(CLIENTS)) {
    for (const kind of KINDS) {
      describe(`through ${client}, ${kind}`, () => {
        const clock = { now: 1_700_000_000_000 };
        /** A new connection of this client library, closed after the suite. */
        const connection = async () => {
          const connected = await CLIENTS[client].open({ redisUrl: redis.url, bridgeUrl: bridge.url });
          opened.push(connected);
          return connected.client;
        };
        const harness = {
          kind,
          clock,
          connect: async (limits) => new RateLimiter(redisStore(await connection(), { maxAttempts: 200, maxDelayMs: 20 }), limits, { now: () => clock.now }),
          bare: async (limits) => new RateLimiter(bareStore(redisStore(await connection())), limits, { now: () => clock.now }),
        };
        for (const [name, scenario] of Object.entries(SCENARIOS)) test(name, () => scenario(harness));
        test("a grant answers the figures limit answers (issue 28 item 7)", () => grantFiguresAreLimitFigures(harness));
        test("the same concurrent settles through the store's bare read and write, without its transaction, refund more than once", async () => {
          const seen = await concurrentSettlesWithoutTransaction(harness);
          assert.ok(seen.refunded > 300);
        });
      });
    }
  }
});
