// A database client passed where a store belongs (issue 25, item 16): the RateLimiter refuses it
// with INVALID_ARGUMENT and says what to wrap it in. Real clients, none connected: constructing
// them opens nothing, and the limiter only looks at their methods.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createClient } from "redis";
import { createClient as createClient5 } from "redis-5";
import { Redis } from "ioredis";
import { Redis as Redis5 } from "ioredis-5";
import { Redis as UpstashRedis } from "@upstash/redis";
import pg from "pg";
import postgres from "postgres";
import Database from "better-sqlite3";
import { openKv } from "@deno/kv";
import { RateLimiter, RateboundTypeError } from "../../pkg/dist/node.js";

const LIMITS = { login: { kind: "token bucket", rate: 5, period: 60_000 } };
const closers = [];
after(async () => {
  for (const close of closers) await close();
});

/** Asserts that `client` as a store is refused, naming the wrapper. */
function refusedWithHint(client, hint) {
  assert.throws(
    () => new RateLimiter(client, LIMITS),
    (error) => {
      assert.ok(error instanceof RateboundTypeError, `a RateboundTypeError, not ${error?.constructor?.name}: ${error}`);
      assert.equal(error.code, "INVALID_ARGUMENT");
      assert.equal(error.field, "store");
      assert.match(error.message, /^RateLimiter: store must be an object with read\(ref\) and write\(ref, state\) methods \(got /);
      assert.ok(error.message.includes(hint), `${error.message} should say: ${hint}`);
      return true;
    },
  );
}

describe("a database client passed as the limiter's store says what to wrap it in", () => {
  const redis = "wrap it in redisStore(client) from ratebound/redis";
  it("node-redis 6 and 5", () => {
    refusedWithHint(createClient({ url: "redis://127.0.0.1:1" }), redis);
    refusedWithHint(createClient5({ url: "redis://127.0.0.1:1" }), redis);
  });
  it("ioredis 6 and 5", () => {
    for (const Client of [Redis, Redis5]) {
      const client = new Client({ port: 1, lazyConnect: true });
      closers.push(() => client.disconnect());
      refusedWithHint(client, redis);
    }
  });
  it("@upstash/redis", () => refusedWithHint(new UpstashRedis({ url: "http://127.0.0.1:1", token: "token" }), redis));

  const postgresHint = "wrap it in postgresStore(db) from ratebound/postgres";
  it("a pg Pool and a pg Client", () => {
    const pool = new pg.Pool({ port: 1 });
    closers.push(() => pool.end());
    refusedWithHint(pool, postgresHint);
    refusedWithHint(new pg.Client({ port: 1 }), postgresHint);
  });
  it("postgres.js's sql (a function)", () => {
    const sql = postgres({ port: 1 });
    closers.push(() => sql.end());
    refusedWithHint(sql, postgresHint);
  });

  it("a better-sqlite3 Database", () => {
    const db = new Database(":memory:");
    closers.push(() => db.close());
    refusedWithHint(db, "wrap it in sqliteStore(db) from ratebound/sqlite");
  });

  it("a Deno KV (@deno/kv)", async () => {
    const kv = await openKv();
    closers.push(() => kv.close());
    refusedWithHint(kv, "wrap it in kvStore(kv) from ratebound/deno-kv");
  });

  it("anything else is refused with no hint", () => {
    assert.throws(() => new RateLimiter({ get() {} }, LIMITS), (error) => error.code === "INVALID_ARGUMENT" && error.message.endsWith("(got an object)"));
  });
});
