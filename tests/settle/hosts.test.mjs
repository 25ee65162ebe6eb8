// Grants that settle, on every host that runs in Node here, each inside the host's own
// transaction: MemoryStore; Redis (a real redis-server through node-redis, ioredis and Upstash's
// REST protocol over the bridge); PostgreSQL (a real server through pg, and PGlite); SQLite
// (better-sqlite3); Deno KV (@deno/kv's engine). The scenarios are in scenario.mjs.
import { after, before, describe } from "node:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { PGlite } from "@electric-sql/pglite";
import Database from "better-sqlite3";
import { openKv } from "@deno/kv";
import { MemoryStore } from "../../pkg/dist/node.js";
import { redisStore } from "../../pkg/dist/redis.js";
import { postgresStore, createTable as createPostgresTable } from "../../pkg/dist/postgres.js";
import { sqliteStore, createTable as createSqliteTable } from "../../pkg/dist/sqlite.js";
import { kvStore } from "../../pkg/dist/deno-kv.js";
import { CLIENTS, startRedis, startUpstashBridge } from "../redis/servers.mjs";
import { startPostgres } from "../sql/postgres-server.mjs";
import { settleScenarios } from "./scenario.mjs";

/** The store's read and write alone: what its transaction protects. */
const bare = (store) => ({ read: (ref) => store.read(ref), write: (ref, state, info) => store.write(ref, state, info) });

describe("MemoryStore", () => {
  const store = new MemoryStore();
  settleScenarios({ store: () => store });
});

describe("Redis", () => {
  let server;
  let bridge;
  const open = [];
  before(async () => {
    server = await startRedis();
    bridge = await startUpstashBridge(server.url);
  });
  after(async () => {
    await Promise.all(open.map((close) => close()));
    await bridge?.stop?.();
    server?.stop();
  });
  for (const kind of Object.keys(CLIENTS)) {
    describe(kind, () => {
      const connect = async () => {
        const { client, close } = await CLIENTS[kind].open({ redisUrl: server.url, bridgeUrl: bridge.url });
        open.push(close);
        return client;
      };
      // Every limiter gets its own connection, and its own prefix per client library.
      settleScenarios({ store: async () => redisStore(await connect(), { prefix: `${kind}:` }), bare });
    });
  }
});

describe("PostgreSQL server (pg)", () => {
  let server;
  let pool;
  before(async () => {
    server = await startPostgres();
    pool = new pg.Pool({ connectionString: server.connectionString, max: 12 });
    pool.on("error", () => {});
    await createPostgresTable(pool);
  });
  after(async () => {
    await pool?.end();
    server?.stop();
  });
  settleScenarios({ store: () => postgresStore(pool), bare });
});

describe("PGlite", () => {
  const db = new PGlite();
  before(() => createPostgresTable(db));
  after(() => db.close());
  settleScenarios({ store: () => postgresStore(db), bare });
});

describe("SQLite (better-sqlite3)", () => {
  const dir = mkdtempSync(join(tmpdir(), "ratebound-settle-sqlite-"));
  const db = new Database(join(dir, "app.db"));
  before(() => createSqliteTable(db));
  after(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  // better-sqlite3 answers synchronously: calls cannot interleave, in or out of a transaction.
  settleScenarios({ store: () => sqliteStore(db) });
});

describe("Deno KV (@deno/kv)", () => {
  const dir = mkdtempSync(join(tmpdir(), "ratebound-settle-kv-"));
  const kvs = [];
  after(() => {
    kvs.forEach((kv) => kv.close());
    rmSync(dir, { recursive: true, force: true });
  });
  const store = async () => {
    const kv = await openKv(join(dir, "kv.sqlite"));
    kvs.push(kv);
    return kvStore(kv);
  };
  settleScenarios({ store, bare });
});
