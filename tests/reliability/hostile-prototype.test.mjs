// Hostile and careless callers (issue 18, item 3): prototype pollution never
// reaches a constructor or a function. Every constructor and public function
// of the package (and of ratebound/preview, ratebound/convex,
// ratebound/deno-kv on @deno/kv's real engine, and ratebound/redis on a real
// redis-server started on a free loopback port) runs a fixed scenario
// with a clean Object.prototype, then again with each option name of every
// call set on Object.prototype, one at a time and all at once: the answers
// must be the same, and a polluted `now` or `random` must never be called.
// Object.prototype is cleaned in `finally`, whatever happens.
import { describe, it, after, before } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openKv } from "@deno/kv";
import * as ratebound from "../../pkg/dist/node.js";
import { RateLimitPreview, estimateServerTimeOffset } from "../../pkg/dist/preview.js";
import * as convexEntry from "../../pkg/dist/convex.js";
import { kvStore, kvTransaction } from "../../pkg/dist/deno-kv.js";
import { redisStore } from "../../pkg/dist/redis.js";
import { CLIENTS, startRedis } from "../redis/servers.mjs";
import { CheckedStore, Tally } from "./helpers.mjs";

const { RateLimiter, MemoryStore, RateLimitError, isRateLimitError, calculateRateLimit, calculateRateLimits, decideRateLimit, withJitter, HOUR, SECOND } = ratebound;
const { rateLimitFigures, ownOptions, invalidArgument } = ratebound;

const tally = new Tally("hostile callers: polluted prototypes");
after(() => tally.flush());

const T = 1_700_000_000_000;
const calls = { now: 0, random: 0, onConflict: 0 };

/** What each field is set to on Object.prototype: values that would change a decision if read. */
const POLLUTANTS = {
  // Constructors' options.
  now: () => ((calls.now += 1), T + (calls.now * 10 * HOUR)),
  random: () => ((calls.random += 1), 0.999),
  maxKeys: 1,
  // Every call's options.
  count: 0,
  reserve: true,
  key: "polluted",
  config: { kind: "token bucket", rate: 1e6, period: 1 },
  throws: true,
  sampleShards: 7,
  name: "polluted",
  // Config fields, preview and adapter options, error data.
  capacity: 1e9,
  maxReserved: 1e9,
  shards: 7,
  start: T + HOUR,
  at: T + 10 * HOUR,
  serverTimeOffset: 10 * HOUR,
  prefix: ["polluted"],
  maxAttempts: 0,
  onConflict: () => (calls.onConflict += 1),
  readOnly: true,
  data: { kind: "RateLimited", name: "polluted", retryAfter: 1 },
};

/** Runs `scenario` with `fields` set on Object.prototype, and always removes them. */
async function polluted(fields, scenario) {
  for (const field of fields) Object.prototype[field] = POLLUTANTS[field];
  try {
    return await settle(scenario);
  } finally {
    for (const field of fields) delete Object.prototype[field];
  }
}

/** The scenario's trace, or the error it failed with (as its code or constructor name). */
async function settle(scenario) {
  try {
    return await scenario();
  } catch (error) {
    return { failed: error?.code ?? error?.constructor?.name ?? String(error) };
  }
}

/** A result, an error or anything else, as plain data for deepEqual. */
async function outcome(promise) {
  try {
    const value = await promise;
    return value === undefined ? "done" : JSON.parse(JSON.stringify(value));
  } catch (error) {
    return { error: error?.code ?? error?.constructor?.name };
  }
}

const bucket = () => ({ kind: "token bucket", rate: 2, period: HOUR });
const sharded = () => ({ kind: "token bucket", rate: 8, period: HOUR, shards: 4 });
const window = () => ({ kind: "fixed window", rate: 2, period: HOUR });
const limits = () => ({ bucket: bucket(), sharded: sharded(), window: window() });

/** A limiter on `store` whose own options fix its clock and randomness. */
const fixedLimiter = (store, Limiter = RateLimiter) => new Limiter(store, limits(), { now: () => T, random: () => 0.25 });

/** Runs `call(limiter)` on a fresh limiter over each store path, three times each. */
const onBothPaths = (call) => async () => {
  const trace = [];
  for (const store of [new MemoryStore(), new CheckedStore()]) {
    const limiter = fixedLimiter(store);
    for (let round = 0; round < 3; round++) trace.push(await outcome(call(limiter)));
  }
  return trace;
};

const snapshot = () => ({ value: 0, ts: T, shard: 0, config: { ...bucket(), capacity: 2, shards: 1 } });

/** Runs `body(kv)` on a fresh Deno KV database (@deno/kv) in a temporary directory, removed after. */
async function withKv(body) {
  const dir = mkdtempSync(join(tmpdir(), "ratebound-pollution-kv-"));
  const kv = await openKv(join(dir, "kv.sqlite"));
  try {
    return await body(kv);
  } finally {
    kv.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A real redis-server on 127.0.0.1 and a free port, in a temporary directory; stopped after the file. */
let redis;
before(async () => {
  redis = await startRedis();
});
after(() => redis?.stop());

/** Each constructor and public function, with a scenario that reads none of its options' fields when they are absent. */
const TARGETS = {
  "new RateLimiter (default clock and randomness)": async () => {
    const limiter = new RateLimiter(new MemoryStore(), { hourly: { kind: "token bucket", rate: 1, period: HOUR }, window: window() });
    const trace = [];
    for (let call = 0; call < 4; call++) trace.push((await limiter.limit("hourly")).ok, (await limiter.limit("window", { count: 2 })).ok);
    return trace;
  },
  "new MemoryStore": async () => {
    const limiter = fixedLimiter(new MemoryStore());
    return [await outcome(limiter.limit("bucket", { key: "a" })), await outcome(limiter.limit("bucket", { key: "b" })), await outcome(limiter.limit("bucket", { key: "c" }))];
  },
  "RateLimiter#limit": onBothPaths((limiter) => limiter.limit("bucket")),
  "RateLimiter#limit with {}": onBothPaths((limiter) => limiter.limit("window", {})),
  "RateLimiter#check": onBothPaths(async (limiter) => [await limiter.limit("bucket", { count: 2 }), await limiter.check("bucket"), await limiter.check("bucket", {})]),
  "RateLimiter#limitAll": onBothPaths((limiter) => limiter.limitAll([{ name: "bucket" }, { name: "sharded" }])),
  "RateLimiter#checkAll": onBothPaths(async (limiter) => [await limiter.limitAll([{ name: "bucket", count: 2 }], {}), await limiter.checkAll([{ name: "bucket" }])]),
  "RateLimiter#getValue": onBothPaths(async (limiter) => [await limiter.limit("sharded", { count: 2 }), await limiter.getValue("sharded"), await limiter.getValue("bucket", {})]),
  "RateLimiter#reset": onBothPaths(async (limiter) => [await limiter.limit("bucket", { count: 2 }), await limiter.reset("bucket"), await limiter.reset("bucket", {}), await limiter.limit("bucket", { count: 2 })]),
  calculateRateLimit: () => [calculateRateLimit({ value: 0, ts: T }, bucket(), T + SECOND), calculateRateLimit(null, { ...window(), start: 0 }, T, 1), calculateRateLimit({ value: 1, ts: T }, bucket(), T)],
  calculateRateLimits: () => [...calculateRateLimits(new Float64Array([0, T, NaN, 0]), bucket(), T + SECOND)],
  decideRateLimit: () => [decideRateLimit({ value: 0, ts: T }, bucket(), T), decideRateLimit({ value: 0, ts: T }, bucket(), T, {}), decideRateLimit(null, { ...window(), start: 0 }, T, {})],
  rateLimitFigures: () => [
    rateLimitFigures({ value: 0, ts: T, shard: 0, config: { ...bucket(), capacity: 2, shards: 1 } }, T + SECOND),
    rateLimitFigures({ value: 1, ts: T, shard: 0, config: { ...bucket(), capacity: 2, shards: 1 } }, T, 5, 1),
  ],
  ownOptions: () => [ownOptions("f", {}, ["count", "key", "now", "name"]), ownOptions("f", { key: "a" }, ["count", "key"]), ownOptions("f", undefined, ["count"])],
  invalidArgument: () => {
    const error = invalidArgument("f", "count", "a number", "x");
    return [error.message, error.code, error.constructor.name];
  },
  withJitter: () => {
    const jittered = withJitter(100, 10);
    return [jittered >= 100 && jittered < 110, withJitter(100, 10, () => 0.5)];
  },
  "new RateLimitError": () => {
    const error = new RateLimitError("bucket", 5);
    return [error.message, error.data, isRateLimitError(error)];
  },
  isRateLimitError: () => [isRateLimitError(new Error("not a refusal")), isRateLimitError({}), isRateLimitError({ data: {} })],
  "new RateLimitPreview (default clock)": () => {
    const preview = new RateLimitPreview({ ...snapshot(), ts: T - 10 * HOUR });
    return [preview.status().ok, preview.serverTimeOffset];
  },
  "RateLimitPreview#status": () => {
    const preview = new RateLimitPreview(snapshot(), { now: () => T });
    return [preview.status(), preview.status({})];
  },
  "RateLimitPreview#consume and #update": () => {
    const preview = new RateLimitPreview({ ...snapshot(), value: 2 }, { now: () => T });
    const trace = [preview.consume(), preview.consume({}), preview.consume()];
    preview.update(snapshot());
    return [...trace, preview.status(), preview.serverTimeOffset];
  },
  "RateLimitPreview#subscribe": () => {
    const preview = new RateLimitPreview({ ...snapshot(), value: 1 }, { now: () => T });
    const heard = [];
    const unsubscribe = preview.subscribe((status) => heard.push(status));
    preview.consume({ count: 1 });
    unsubscribe();
    return heard;
  },
  estimateServerTimeOffset: () => [estimateServerTimeOffset(1_000, 6_100, 1_200)],
  "ratebound/convex RateLimiter": async () => {
    const limiter = fixedLimiter(new MemoryStore(), convexEntry.RateLimiter);
    const trace = [];
    for (let call = 0; call < 3; call++) trace.push(await outcome(limiter.limit("bucket")), await outcome(limiter.check("bucket")));
    trace.push(await outcome(limiter.limitAll([{ name: "sharded" }])), await outcome(limiter.reset("bucket")), await outcome(limiter.limit("bucket")));
    return trace;
  },
  "ratebound/deno-kv kvStore": () =>
    withKv(async (kv) => {
      const limiter = new RateLimiter(kvStore(kv), limits(), { now: () => T, random: () => 0.25 });
      const trace = [];
      for (let call = 0; call < 3; call++) trace.push(await outcome(limiter.limit("bucket")));
      return [...trace, await outcome(limiter.getValue("bucket")), await outcome(limiter.reset("bucket")), await outcome(limiter.limit("bucket"))];
    }),
  "ratebound/redis redisStore (node-redis)": async () => {
    const { client, close } = await CLIENTS["node-redis"].open({ redisUrl: redis.url });
    try {
      await client.flushDb();
      const limiter = new RateLimiter(redisStore(client), limits(), { now: () => T, random: () => 0.25 });
      const trace = [];
      for (let call = 0; call < 3; call++) trace.push(await outcome(limiter.limit("bucket")));
      return [...trace, await outcome(limiter.getValue("bucket")), await outcome(limiter.reset("bucket")), await outcome(limiter.limit("bucket"))];
    } finally {
      await close();
    }
  },
  "ratebound/deno-kv kvTransaction": () =>
    withKv(async (kv) => {
      const trace = [];
      for (let call = 0; call < 3; call++) {
        trace.push(await outcome(kvTransaction(kv, (tx) => new RateLimiter(tx, limits(), { now: () => T, random: () => 0.25 }).limit("bucket"))));
      }
      return trace;
    }),
};

/** Known defects: targets that read a polluted prototype today (issue 18 item 3 not yet fixed there). */
// The adapters' rest-spread copies and ratebound/convex's readOnly were fixed on main:
// no target is expected to fail any more.
const TODO = {};

describe("item 3: prototype pollution never reaches a constructor or a function", () => {
  for (const [target, scenario] of Object.entries(TARGETS)) {
    it(`${target} answers the same with every option name set on Object.prototype, one at a time and all at once`, { todo: TODO[target] }, async () => {
      const clean = await settle(scenario);
      assert.equal(clean?.failed, undefined, `${target} failed with a clean prototype: ${JSON.stringify(clean)}`);
      const differences = [];
      for (const fields of [...Object.keys(POLLUTANTS).map((field) => [field]), Object.keys(POLLUTANTS)]) {
        calls.now = calls.random = calls.onConflict = 0;
        const answer = await polluted(fields, scenario);
        tally.add("polluted prototypes");
        tally.add(`polluted: ${target}`);
        const label = fields.length === 1 ? fields[0] : "all at once";
        if (calls.now + calls.random + calls.onConflict > 0) differences.push(`${label}: called the polluted function(s) ${JSON.stringify(calls)}`);
        try {
          assert.deepEqual(answer, clean);
        } catch {
          differences.push(`${label}: ${JSON.stringify(answer)}`);
        }
      }
      for (const field of Object.keys(POLLUTANTS)) assert.equal(Object.hasOwn(Object.prototype, field), false, `${field} left on Object.prototype`);
      assert.deepEqual(differences, [], `${target} answered ${JSON.stringify(clean)} with a clean prototype, but differently when polluted`);
    });
  }
});

describe("item 3: a polluted Object.prototype.key never redirects a keyless limit", () => {
  const config = { kind: "token bucket", rate: 1, period: HOUR };
  const ways = {
    "a callback store": (limiter) => limiter.limit("hourly"),
    "a MemoryStore, through an inline config": (limiter) => limiter.limit("hourly", { config }),
    "a MemoryStore, through getValue": async (limiter) => ({ ok: (await limiter.getValue("hourly")).value >= 1 }),
  };
  for (const [way, call] of Object.entries(ways)) {
    it(`through ${way}, a drained 1-per-hour limit stays drained when Object.prototype.key is set`, async () => {
      const store = way === "a callback store" ? new CheckedStore() : new MemoryStore();
      const limiter = new RateLimiter(store, { hourly: config }, { now: () => T });
      assert.deepEqual(await limiter.limit("hourly"), { ok: true });
      assert.equal((await call(limiter)).ok, false, "drained before the pollution");
      tally.add("polluted prototypes");
      const answer = await polluted(["key"], () => call(limiter));
      assert.equal(answer.ok, false, `${way}: granted again once Object.prototype.key was set`);
    });
  }
});
