// A stored value that is not a state is never a fresh bucket (issue 24 item 4): on a real
// redis-server, through node-redis, ioredis and @upstash/redis (over the REST bridge, whose client
// decodes replies as JSON), values someone else wrote under ratebound's keys — `null`, a JSON
// string that parses to a state's text, JSON objects, numbers — reach the core as they are, so
// `limit`, `check`, `limitAll` and `getValue` reject with CORRUPT_STATE naming the ref under every
// failure policy (`open` included: a corrupt value is not an outage); the decision script decides
// nothing and writes nothing on them, and a transaction's commit never overwrites them.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createClient } from "redis";
import { RateLimiter } from "../../pkg/dist/node.js";
import { redisKey, redisStore } from "../../pkg/dist/redis.js";
import { CLIENTS, startRedis, startUpstashBridge } from "../redis/servers.mjs";
import { Tally } from "./helpers.mjs";

const tally = new Tally("hostile stored values: Redis values that are not states, on every client");
after(() => tally.flush());

const NOW = 1_700_000_000_000;
const bucket = { kind: "token bucket", rate: 10, period: 60_000 };
/** What others may have stored: each parses as JSON into something, and none is a state. */
const HOSTILE = ["null", '"1,1700000000000"', '"10,1700000000000"', '{"value":1,"ts":1700000000000}', "[1,1700000000000]", "5", "true", '""', "1e999,5", "Infinity,0", "0x10,1", " 1,2"];

describe("a stored value that is not a state is CORRUPT_STATE on every Redis client, never a fresh bucket", () => {
  let redis;
  let bridge;
  let admin;
  before(async () => {
    redis = await startRedis();
    bridge = await startUpstashBridge(redis.url);
    admin = createClient({ url: redis.url });
    admin.on("error", () => {});
    await admin.connect();
  });
  after(async () => {
    await admin?.quit().catch(() => {});
    await bridge?.stop();
    redis?.stop();
  });

  for (const kind of Object.keys(CLIENTS)) {
    it(`through ${kind}: limit, check, limitAll, getValue and a grant reject with CORRUPT_STATE under closed and open, the decision script writes nothing, and a commit leaves the value as it was`, async () => {
      const { client, close } = await CLIENTS[kind].open({ redisUrl: redis.url, bridgeUrl: bridge.url });
      try {
        const store = redisStore(client);
        for (const [index, hostile] of HOSTILE.entries()) {
          const ref = { name: "send", key: `eve${index}`, shard: 0 };
          const key = redisKey(ref);
          await admin.set(key, hostile);
          // The optimistic path (getValue, reset, grants): the raw string, which the core rejects.
          assert.equal(await store.read(ref), hostile, `${kind} read ${JSON.stringify(hostile)}`);
          const read = await store.transaction((tx) => tx.read(ref));
          assert.equal(read, hostile);
          // Every call, under every policy: CORRUPT_STATE naming the ref, never a fresh bucket.
          for (const onStoreError of ["closed", "open"]) {
            const limiter = new RateLimiter(store, { send: { ...bucket, onStoreError } }, { now: () => NOW });
            const calls = {
              limit: () => limiter.limit("send", { key: ref.key }),
              check: () => limiter.check("send", { key: ref.key }),
              limitAll: () => limiter.limitAll([{ name: "send", key: ref.key }]),
              getValue: () => limiter.getValue("send", { key: ref.key }),
              grant: () => limiter.limit("send", { key: ref.key, grant: true }),
            };
            for (const [call, run] of Object.entries(calls)) {
              const outcome = await run().catch((caught) => caught);
              assert.equal(outcome?.code, "CORRUPT_STATE", `${kind}, ${onStoreError}, ${call} on ${JSON.stringify(hostile)}: ${JSON.stringify(outcome) ?? outcome}`);
              assert.match(outcome.message, new RegExp(`eve${index}`));
              tally.add("calls refused as corrupt");
            }
          }
          const answer = await store.decide({
            refs: [ref],
            all: false,
            items: [{ reads: [0], kind: 0, rate: 10, period: 60_000, capacity: 10, maxReserved: null, shards: 1, start: null, count: 1, reserve: false, write: true, now: NOW, fresh: [{ value: 10, ts: NOW }] }],
          });
          assert.deepEqual(answer, { stored: [hostile], wrote: [false], decided: [null], batchSize: 1 });
          // A transaction that read it and writes elsewhere commits; one that rewrites it never sees it as absent.
          await store.transaction(async (tx) => {
            await tx.read(ref);
            tx.write({ ...ref, key: `${ref.key}-other` }, { value: 1, ts: NOW });
          });
          assert.equal(await admin.get(key), hostile, "left as it was");
          tally.add("hostile values");
        }
      } finally {
        await close();
      }
    });
  }

  it("the check can fail: read with GET, @upstash/redis turns a stored null into no state at all and a JSON string into a state's text", async () => {
    const { client } = await CLIENTS["@upstash/redis"].open({ bridgeUrl: bridge.url });
    await admin.set("plain:null", "null");
    await admin.set("plain:text", '"1,1700000000000"');
    assert.equal(await client.get("plain:null"), null);
    assert.equal(await client.get("plain:text"), "1,1700000000000");
  });
});
