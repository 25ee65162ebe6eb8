// acquire / acquireAll on a real redis-server (issue 31, item 1): the scenarios of
// tests/js/acquire-scenarios.mjs through node-redis, each worker on its own connection. Round
// trips are counted by a wrapper around the client (every GET, EVALSHA and EVAL it is asked for).
import { after, before, describe, test } from "node:test";
import { RateLimiter } from "../../pkg/dist/node.js";
import { redisStore } from "../../pkg/dist/redis.js";
import { CLIENTS, startRedis } from "./servers.mjs";
import { scenariosFor } from "../js/acquire-scenarios.mjs";

const KINDS = ["token bucket", "fixed window"];

/** node-redis as redisStore takes it, counting each command it sends in `counter.trips`. */
export function countingNodeRedis(client, counter) {
  return {
    get: (key) => (counter.trips++, client.get(key)),
    evalSha: (sha, options) => (counter.trips++, client.evalSha(sha, options)),
    eval: (script, options) => (counter.trips++, client.eval(script, options)),
  };
}

describe("acquire on a real redis-server", () => {
  let redis;
  const opened = [];
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    await Promise.all(opened.map(({ close }) => close().catch(() => {})));
    redis?.stop();
  });

  for (const kind of KINDS) {
    describe(`through node-redis, ${kind}`, () => {
      for (const [name, scenario] of scenariosFor(kind)) {
        test(name, async () => {
          const counter = { trips: 0 };
          // Each scenario on its own prefix: its keys start empty.
          const prefix = `acquire:${kind}:${name}:`;
          const connect = async (limits, options) => {
            const connected = await CLIENTS["node-redis"].open({ redisUrl: redis.url });
            opened.push(connected);
            return new RateLimiter(redisStore(countingNodeRedis(connected.client, counter), { prefix }), limits, options);
          };
          await scenario({ kind, connect, roundTrips: () => counter.trips });
        });
      }
    });
  }
});
