// The rows of `npm run bench:hosts`: ratebound on each networked host against the peer a user of
// that host would pick, each used as its README says, over the same loopback servers. Each
// contender is `{ open() → { call(key) → Promise<boolean>, close() } }`: `open` connects its own
// client (or pool), `call` makes one decision (true granted, false refused; a rejection is a
// failed call).
import pg from "pg";
import { createClient } from "redis";
import IORedis from "ioredis";
import { Redis as UpstashRedis } from "@upstash/redis";
import { Ratelimit } from "@upstash/ratelimit";
import flexible from "rate-limiter-flexible";

const { RateLimiterRedis, RateLimiterPostgres, RateLimiterRes } = flexible;

/**
 * Limits no run can exhaust, so every call is a decision that writes (contention comes from
 * writers): ratebound's token bucket and @upstash/ratelimit's hold 10⁹ tokens refilled every
 * minute; rate-limiter-flexible's counters allow 10⁹ points a minute (a fixed window).
 */
export const PLENTY = 1e9;
const MINUTE_MS = 60_000;
const RATEBOUND_LIMIT = { bench: { kind: "token bucket", rate: PLENTY, period: MINUTE_MS } };

/** rate-limiter-flexible refuses by rejecting with a RateLimiterRes: a decision, not a failure. */
const consumed = (promise) =>
  promise.then(
    () => true,
    (reason) => {
      if (reason instanceof RateLimiterRes) return false;
      throw reason;
    },
  );

/** How each Redis client connects (the same way for ratebound and the peer). */
const REDIS_CLIENTS = {
  "node-redis": async (url) => {
    const client = createClient({ url });
    client.on("error", () => {});
    await client.connect();
    return { client, close: () => client.quit().catch(() => client.destroy?.()) };
  },
  ioredis: async (url) => {
    // As rate-limiter-flexible's wiki connects it: no offline queue.
    const client = new IORedis(url, { enableOfflineQueue: false, lazyConnect: true });
    client.on("error", () => {});
    await client.connect();
    return { client, close: () => client.quit().catch(() => client.disconnect()) };
  },
};

/**
 * The contenders of one Redis row.
 * @param {{ RateLimiter: Function, redisStore: Function }} ratebound The package's API.
 * @param {"node-redis" | "ioredis"} clientName
 * @param {string} url The redis-server.
 */
export function redisContenders(ratebound, clientName, url) {
  const connect = REDIS_CLIENTS[clientName];
  return {
    ratebound: {
      how: `\`new RateLimiter(redisStore(client), …)\`, \`limit()\` (token bucket)`,
      open: async () => {
        const { client, close } = await connect(url);
        const limiter = new ratebound.RateLimiter(ratebound.redisStore(client), RATEBOUND_LIMIT);
        return { call: (key) => limiter.limit("bench", { key }).then((result) => result.ok), close };
      },
    },
    peer: {
      name: "rate-limiter-flexible `RateLimiterRedis`",
      how: `\`new RateLimiterRedis({ storeClient: client${clientName === "node-redis" ? ", useRedisPackage: true" : ""}, points, duration })\`, \`consume()\``,
      open: async () => {
        const { client, close } = await connect(url);
        // node-redis 4+ needs useRedisPackage (the class name test in rate-limiter-flexible fails on v5+).
        const limiter = new RateLimiterRedis({
          storeClient: client,
          useRedisPackage: clientName === "node-redis",
          points: PLENTY,
          duration: MINUTE_MS / 1000,
          keyPrefix: "rlflx",
        });
        return { call: (key) => consumed(limiter.consume(key)), close };
      },
    },
  };
}

/**
 * The contenders of one Upstash row: both over `@upstash/redis` pointed at the same bridge, made
 * as its README makes it (`new Redis({ url, token })`, the defaults: auto-pipelining on).
 * @param {{ RateLimiter: Function, redisStore: Function }} ratebound
 * @param {string} bridgeUrl
 * @param {object} [clientOptions] More options for both sides' `new Redis(…)` (a diagnostic's
 *   variants, e.g. `{ responseEncoding: false }`); the bench passes none.
 */
export function upstashContenders(ratebound, bridgeUrl, clientOptions = {}) {
  const client = () => new UpstashRedis({ url: bridgeUrl, token: "the-bridge-ignores-it", ...clientOptions });
  return {
    ratebound: {
      how: "`new RateLimiter(redisStore(new Redis({ url, token })), …)`, `limit()` (token bucket)",
      open: async () => {
        const limiter = new ratebound.RateLimiter(ratebound.redisStore(client()), RATEBOUND_LIMIT);
        return { call: (key) => limiter.limit("bench", { key }).then((result) => result.ok), close: async () => {} };
      },
    },
    peer: {
      name: "`@upstash/ratelimit` token bucket",
      how: '`new Ratelimit({ redis: new Redis({ url, token }), limiter: Ratelimit.tokenBucket(refill, "60 s", max) })`, `limit()`',
      open: async () => {
        const limiter = new Ratelimit({ redis: client(), limiter: Ratelimit.tokenBucket(PLENTY, "60 s", PLENTY) });
        return {
          call: (key) =>
            limiter.limit(key).then((result) => {
              // After its timeout (5 s) @upstash/ratelimit allows without deciding: not a decision.
              if (result.reason === "timeout") throw Object.assign(new Error("allowed by timeout, without a decision"), { code: "TIMEOUT" });
              return result.success;
            }),
          close: async () => {},
        };
      },
    },
  };
}

const pool = (connectionString) => {
  const created = new pg.Pool({ connectionString, max: 10 });
  created.on("error", () => {}); // an idle client's backend ending must not crash the bench
  return created;
};

/**
 * The contenders of one PostgreSQL row: each on its own `pg.Pool` of 10 connections.
 * @param {{ RateLimiter: Function, postgresStore: Function, createTable: Function }} ratebound
 * @param {string} connectionString
 */
export function postgresContenders(ratebound, connectionString) {
  return {
    ratebound: {
      how: "`createTable(pool)`, `new RateLimiter(postgresStore(pool), …)`, `limit()` (token bucket)",
      open: async () => {
        const db = pool(connectionString);
        await ratebound.createTable(db);
        const limiter = new ratebound.RateLimiter(ratebound.postgresStore(db), RATEBOUND_LIMIT);
        return { call: (key) => limiter.limit("bench", { key }).then((result) => result.ok), close: () => db.end() };
      },
    },
    peer: {
      name: "rate-limiter-flexible `RateLimiterPostgres`",
      how: "`new RateLimiterPostgres({ storeClient: pool, points, duration, tableName }, ready)`, `consume()`",
      open: async () => {
        const db = pool(connectionString);
        const limiter = await new Promise((resolve, reject) => {
          const created = new RateLimiterPostgres({ storeClient: db, points: PLENTY, duration: MINUTE_MS / 1000, tableName: "rlflx_bench" }, (error) =>
            error ? reject(error) : resolve(created),
          );
        });
        return { call: (key) => consumed(limiter.consume(key)), close: () => db.end() };
      },
    },
  };
}
