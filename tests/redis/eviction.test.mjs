// Eviction (issue 28 item 6): under maxmemory with an allkeys-* policy Redis may evict a limit's
// state, and a key whose state is gone starts full again (over-admission). A redis store asks the
// server's maxmemory-policy once, on its first command and beside it, and emits ONE warning per
// store (process.emitWarning, code RATEBOUND_REDIS_EVICTION) when it is allkeys-*; never with
// noeviction; never a failed call, also where CONFIG (and INFO) are renamed away. Real
// redis-servers, every client library (the Upstash client through the REST bridge).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { RateLimiter } from "../../pkg/dist/node.js";
import { redisStore } from "../../pkg/dist/redis.js";
import { CLIENTS, startRedis, startUpstashBridge } from "./servers.mjs";

const LIMITS = { api: { kind: "token bucket", rate: 3, period: 60_000 } };
const CODE = "RATEBOUND_REDIS_EVICTION";
const NOW = 1_700_000_000_000;

/** The eviction warnings emitted while `work` runs, and a while after (the check is not awaited by any call). */
async function warningsDuring(work) {
  const seen = [];
  const listener = (warning) => {
    if (warning.code === CODE) seen.push(warning);
  };
  process.on("warning", listener);
  try {
    await work();
    await new Promise((resolve) => setTimeout(resolve, 150));
  } finally {
    process.off("warning", listener);
  }
  return seen;
}

/**
 * The servers: the two the issue names (maxmemory 1mb, under which redis-server 7.0's own baseline
 * leaves so little room that it may refuse a write with OOM: a store error, the call fails closed),
 * and roomier ones (64mb) where every call must be decided as usual.
 */
const SERVERS = {
  "allkeys-lru": { args: ["--maxmemory", "1mb", "--maxmemory-policy", "allkeys-lru"], warns: true, tight: true },
  noeviction: { args: ["--maxmemory", "1mb", "--maxmemory-policy", "noeviction"], warns: false, tight: true },
  "allkeys-lfu, CONFIG renamed away (INFO answers)": { args: ["--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lfu", "--rename-command", "CONFIG", ""], warns: true },
  // ioredis's own ready check sends INFO, so it cannot connect here: the other clients can.
  "allkeys-random, CONFIG and INFO renamed away": { args: ["--maxmemory", "64mb", "--maxmemory-policy", "allkeys-random", "--rename-command", "CONFIG", "", "--rename-command", "INFO", ""], warns: false, skip: /^ioredis/ },
  "volatile-lru": { args: ["--maxmemory", "64mb", "--maxmemory-policy", "volatile-lru"], warns: false },
};

for (const [policy, { args, warns, tight = false, skip = /^$/ }] of Object.entries(SERVERS)) {
  describe(`a redis-server with ${policy}`, () => {
    let server;
    let bridge;
    before(async () => {
      server = await startRedis({ args });
      bridge = await startUpstashBridge(server.url);
    });
    after(async () => {
      await bridge?.stop();
      server?.stop();
    });

    for (const library of Object.keys(CLIENTS).filter((name) => !skip.test(name))) {
      const calls = tight ? "every call decided as usual or refused by Redis for memory (OOM: it fails closed)" : "every call decided as usual";
      test(`${library}: ${warns ? "one warning per store, however many calls" : "no warning"}, and ${calls}`, async () => {
        const { client, close } = await CLIENTS[library].open({ redisUrl: server.url, bridgeUrl: bridge.url });
        try {
          const key = `${library}-${Math.random()}`;
          // A call's answer; on a tight server, a write Redis refused for memory (OOM) fails closed instead.
          const answer = (promise) =>
            promise.then(undefined, (error) => {
              if (tight && error.code === "REDIS_ERROR" && /OOM/.test(error.message)) return "OOM";
              throw error;
            });
          const warnings = await warningsDuring(async () => {
            const limiter = new RateLimiter(redisStore(client), LIMITS, { now: () => NOW });
            const first = await Promise.all([1, 2, 3].map(() => answer(limiter.limit("api", { key }))));
            const refused = [];
            for (let index = 0; index < 5; index++) refused.push(await answer(limiter.limit("api", { key })));
            // A second store over the same client is another store: its own warning.
            const other = new RateLimiter(redisStore(client), LIMITS, { now: () => NOW });
            const checked = await answer(other.check("api", { key }));
            if (!tight || !first.includes("OOM")) {
              assert.deepEqual(first, [{ ok: true }, { ok: true }, { ok: true }]);
              assert.deepEqual(refused.map((result) => result.ok), [false, false, false, false, false]);
              assert.equal(checked.ok, false);
            }
          });
          assert.equal(warnings.length, warns ? 2 : 0, warnings.map((warning) => warning.message).join("\n"));
          for (const warning of warnings) {
            assert.equal(warning.name, "RateboundWarning");
            assert.match(warning.message, new RegExp(`maxmemory-policy is ${policy.split(",")[0]}:.*starts full again`));
          }
        } finally {
          await close();
        }
      });
    }
  });
}
