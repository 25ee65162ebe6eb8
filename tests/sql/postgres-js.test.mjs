// ratebound/postgres with postgres.js (`postgres`) on a real PostgreSQL server: the shared
// scenarios with `sql` for calls of their own (each in sql.begin) and a transaction's `tx` for the
// app's transaction (each call in tx.savepoint), and 120 concurrent transactions on one key.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import postgres from "postgres";
import { startPostgres, failOnDeprecationWarnings } from "./postgres-server.mjs";
import { limiterOn, pgHost, postgresScenarios } from "./postgres-scenarios.mjs";

failOnDeprecationWarnings();

describe("postgres.js on a real PostgreSQL server", () => {
  let server;
  let sql;
  const query = async (text, params = []) => [...(await sql.unsafe(text, params))];
  /** The app's transaction: postgres.js's `tx`, with a `query` for the scenarios' own statements. */
  const inTransaction = (fn) =>
    sql.begin((tx) => {
      tx.query = async (text, params = []) => ({ rows: [...(await tx.unsafe(text, params))] });
      return fn(tx);
    });

  before(async () => {
    server = await startPostgres();
    sql = postgres(server.connectionString, { max: 20, onnotice: () => {} });
    await pgHost.createTable(sql);
    await sql.unsafe("CREATE TABLE posts (id serial PRIMARY KEY, author text NOT NULL, body text NOT NULL)");
  });
  after(async () => {
    await sql?.end();
    server?.stop();
  });

  postgresScenarios({ db: () => sql, query, inTransaction });

  test("120 calls at once on postgres.js's sql (a pool: group commit) admit exactly 50, in far fewer statements than calls", async () => {
    const limits = { burst: { kind: "token bucket", rate: 50, period: 86_400_000 } };
    const decisions = [];
    const counted = Object.assign(Object.create(sql), {
      unsafe: (text, params) => (/_decide_/.test(text) && decisions.push(text), sql.unsafe(text, params)),
      begin: (...args) => sql.begin(...args),
    });
    const limiter = limiterOn(pgHost.postgresStore(counted), limits);
    const outcomes = await Promise.all(Array.from({ length: 120 }, () => limiter.limit("burst", { key: "js-group" })));
    assert.equal(outcomes.filter((outcome) => outcome.ok).length, 50);
    assert.deepEqual(outcomes.map((outcome) => outcome.ok), Array.from({ length: 120 }, (_, index) => index < 50), "in the order they were made");
    assert.ok(decisions.length < 10 && decisions.some((text) => /_decide_many_v3"\(/.test(text)), `${decisions.length} statements`);
    assert.deepEqual(await query("SELECT value FROM ratebound WHERE name = 'burst' AND key = 'js-group'"), [{ value: 0 }]);
  });

  test("120 concurrent postgres.js transactions on one key admit exactly the capacity of 50 and leave 0", async () => {
    const limits = { burst: { kind: "token bucket", rate: 50, period: 86_400_000 } };
    const outcomes = await Promise.all(
      Array.from({ length: 120 }, () =>
        sql.begin(async (tx) => {
          const { ok } = await limiterOn(pgHost.postgresStore(tx), limits).limit("burst", { key: "js" });
          if (ok) await tx.unsafe("INSERT INTO posts (author, body) VALUES ('js', 'burst')");
          return { ok };
        }),
      ),
    );
    assert.equal(outcomes.filter((outcome) => outcome.ok).length, 50);
    assert.deepEqual(await query("SELECT value FROM ratebound WHERE name = 'burst' AND key = 'js'"), [{ value: 0 }]);
    assert.deepEqual(await query("SELECT count(*)::int AS n FROM posts WHERE author = 'js'"), [{ n: 50 }]);
  });
});
