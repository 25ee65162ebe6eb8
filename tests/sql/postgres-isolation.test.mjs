// ratebound/postgres at every isolation level on a real server (issue 28 item 2): bursts of 60
// concurrent calls on unsharded, 2-shard and 10-shard limits, through a pool of 8 whose sessions
// default to the level (decisions, and grants, which take the transactional path), and inside
// callers' own transactions (BEGIN ISOLATION LEVEL …; limit; COMMIT, the caller retrying its
// 40001s). ratebound's own calls never deadlock (no 40P01, retried or not) and never admit past
// the bound. Before the fix the functions locked a missing state's advisory lock and a stored
// state's row: two locks for one state, so under a snapshot that could not see a row just
// created, a call wrote (and waited) out of order, and two calls deadlocked in 6 of 6 runs. And
// grants read their states at once on one client: when one read failed (a state only tried was
// taken), the rest still ran, after the rollback and on the connection handed to the next call
// (40P01 and 25P02 under READ COMMITTED too, with pg's DeprecationWarning).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import pg from "pg";
import { startPostgres, failOnDeprecationWarnings } from "./postgres-server.mjs";
import { NOW, limiterOn, pgHost } from "./postgres-scenarios.mjs";

failOnDeprecationWarnings();

const LIMITS = {
  single: { kind: "token bucket", rate: 20, period: 86_400_000 },
  two: { kind: "token bucket", rate: 20, period: 86_400_000, shards: 2 },
  ten: { kind: "fixed window", rate: 20, period: 86_400_000, start: 0, shards: 10 },
};
const BURST = 60;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

describe("SERIALIZABLE, REPEATABLE READ and READ COMMITTED on a real PostgreSQL server", () => {
  let server;
  let admin;
  before(async () => {
    server = await startPostgres();
    admin = new pg.Pool({ connectionString: server.connectionString, max: 4 });
    await pgHost.createTable(admin);
  });
  after(async () => {
    await admin?.end();
    server?.stop();
  });

  /** What a burst left: how many were admitted, what the shards hold, which codes were met. */
  async function outcome(name, key, statuses, codes) {
    const errors = statuses.filter((status) => status instanceof Error);
    assert.deepEqual(errors.map((error) => `${error.code}: ${error.message}`), [], "no call failed");
    const admitted = statuses.filter((status) => status.ok).length;
    const [{ left }] = (await admin.query("SELECT coalesce(sum(value), 0)::float8 AS left FROM ratebound WHERE name = $1 AND key = $2", [name, key])).rows;
    assert.equal(codes.filter((code) => code === "40P01").length, 0, `no deadlock (codes met: ${codes.join(" ") || "none"})`);
    assert.ok(admitted <= 20, `the bound of 20 holds (admitted ${admitted})`);
    assert.ok(Math.abs(20 - admitted - left) < 1e-9, `the shards hold 20 - ${admitted} (got ${left})`);
    return admitted;
  }

  for (const isolation of ["serializable", "repeatable read", "read committed"]) {
    for (const name of Object.keys(LIMITS)) {
      test(`${isolation}: ${BURST} concurrent calls on "${name}" through a pool of 8 never deadlock and never exceed 20`, async () => {
        const pool = new pg.Pool({ connectionString: server.connectionString, max: 8, options: `-c default_transaction_isolation=${isolation.replace(" ", "\\ ")}` });
        try {
          const [{ level }] = (await pool.query("SELECT current_setting('transaction_isolation') AS level")).rows;
          assert.equal(level, isolation);
          const codes = [];
          const store = pgHost.postgresStore(pool, { maxAttempts: 200, onRetry: (_attempt, reason) => codes.push(reason) });
          const limiter = limiterOn(store, LIMITS);
          const key = `pool-${isolation}`;
          const statuses = await Promise.all(Array.from({ length: BURST }, () => limiter.limit(name, { key }).catch((error) => error)));
          const admitted = await outcome(name, key, statuses, codes);
          if (name === "single") assert.equal(admitted, 20, "one state: exactly the bound");
        } finally {
          await pool.end();
        }
      });

      test(`${isolation}: ${BURST} concurrent grants (the transactional path) on "${name}" through a pool of 8 never deadlock and never exceed 20`, async () => {
        const pool = new pg.Pool({ connectionString: server.connectionString, max: 8, options: `-c default_transaction_isolation=${isolation.replace(" ", "\\ ")}` });
        try {
          const codes = [];
          const store = pgHost.postgresStore(pool, { maxAttempts: 500, onRetry: (_attempt, reason) => codes.push(reason) });
          const limiter = limiterOn(store, LIMITS);
          const key = `grant-${isolation}`;
          const statuses = await Promise.all(Array.from({ length: BURST }, () => limiter.limit(name, { key, grant: true }).catch((error) => error)));
          assert.deepEqual(statuses.filter((status) => status instanceof Error).map((error) => `${error.code}: ${error.message}`), [], "no call failed");
          assert.equal(codes.filter((code) => code === "40P01").length, 0, `no deadlock (codes met: ${[...new Set(codes)].join(" ") || "none"})`);
          const admitted = statuses.filter((status) => status.ok).length;
          assert.ok(admitted <= 20, `the bound of 20 holds (admitted ${admitted})`);
          assert.equal((await limiter.getValue(name, { key })).value, 20 - admitted, "what is left accounts for every grant");
          if (name === "single") assert.equal(admitted, 20, "one state: exactly the bound");
        } finally {
          await pool.end();
        }
      });

      test(`${isolation}: ${BURST} callers' own transactions on "${name}" never deadlock and never exceed 20`, async () => {
        const pool = new pg.Pool({ connectionString: server.connectionString, max: 30 });
        try {
          const codes = [];
          const key = `tx-${isolation}`;
          /** The caller: its transaction takes the limit and commits; a 40001 is its to retry. */
          async function caller() {
            for (let attempt = 1; attempt <= 500; attempt++) {
              const client = await pool.connect();
              try {
                await client.query(`BEGIN ISOLATION LEVEL ${isolation.toUpperCase()}`);
                const status = await limiterOn(pgHost.postgresStore(client), LIMITS).limit(name, { key });
                await client.query("COMMIT");
                return status;
              } catch (error) {
                await client.query("ROLLBACK").catch(() => {});
                codes.push(error.code);
                if (error.code !== "40001") return error;
                await sleep(Math.random() * 10);
              } finally {
                client.release();
              }
            }
            return new Error("500 serialization failures in a row");
          }
          const statuses = await Promise.all(Array.from({ length: BURST }, caller));
          const admitted = await outcome(name, key, statuses, codes);
          if (name === "single") assert.equal(admitted, 20, "one state: exactly the bound");
        } finally {
          await pool.end();
        }
      });
    }
  }
});
