// ratebound/postgres among hostile roles on a real server (issue 28 item 1). The table and its
// functions are installed by the database's owner; the app connects as a role of its own with the
// rights docs/postgres.md's "Security" asks for; a second unprivileged role (CREATE ROLE … LOGIN,
// connected as itself) does what PostgreSQL before 15 let every role do in `public`, and what
// any role may do in a schema of its own that the app's search path lists first:
// - impostor overloads of the decision functions in `public` (the exact one of the issue, which
//   the untyped call of version 1 preferred, and others, taking text, unknown-friendly types);
// - in a schema `evil` ahead on the app's search path (`evil, pg_catalog, public`): the helpers
//   (`ratebound_v1_add`, `ratebound_v3_add`, …) and the operators `+ - * /` on double precision
//   and `=` on text, all answering nonsense.
// Every decision stays exact: a bound of 3 admits exactly 3 of 10, through both functions, the
// transactional path (grants, settle, getValue) and pruneStates, on a pool and in the app's own
// transaction. A relation of the table's name in `evil` makes a bare table name ambiguous: the
// store fails closed (42P01) and writes nothing; named with its schema, the table is still exact.
// And an install of version 1 upgrades in place: createTable adds the v3 functions beside v1's.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import pg from "pg";
import { failOnDeprecationWarnings, startPostgres } from "./postgres-server.mjs";
import { NOW, limiterOn, pgHost } from "./postgres-scenarios.mjs";

failOnDeprecationWarnings();

const LIMITS = {
  three: { kind: "token bucket", rate: 3, period: 86_400_000 },
  window: { kind: "fixed window", rate: 3, period: 86_400_000, start: 0 },
  sharded: { kind: "token bucket", rate: 6, period: 86_400_000, shards: 2 },
  llm: { kind: "token bucket", rate: 3, period: 86_400_000 },
  huge: { kind: "token bucket", rate: 3 * 2 ** 70, period: 86_400_000 },
};
const HOSTILE_PATH = "evil, pg_catalog, public";

/** The attacker's statements: impostors in `public`, helpers and operators in `evil`. */
function impostors() {
  const texts = (n) => Array.from({ length: n }, () => "text").join(",");
  const statements = [
    // The impostor, verbatim: 16 text parameters, preferred by an untyped call.
    `CREATE FUNCTION public.ratebound_decide_one_v1(${texts(16)}) RETURNS text LANGUAGE sql AS $$ SELECT 'one - - 1' $$`,
    `CREATE FUNCTION public.ratebound_decide_one_v3(${texts(16)}) RETURNS text LANGUAGE sql AS $$ SELECT 'one - - 1' $$`,
    `CREATE FUNCTION evil.ratebound_decide_one_v3(text, text, integer, text, ${Array.from({ length: 12 }, () => "float8").join(",")}) RETURNS text LANGUAGE sql AS $$ SELECT 'one - - 1' $$`,
    `CREATE FUNCTION public.ratebound_decide_v1(${texts(6)}) RETURNS text LANGUAGE sql AS $$ SELECT 'error 40001 impostor' $$`,
    `CREATE FUNCTION public.ratebound_decide_v3(${texts(6)}) RETURNS text LANGUAGE sql AS $$ SELECT 'error 40001 impostor' $$`,
    `CREATE FUNCTION public.ratebound_decide_v3(text[], text[], text[], text[], text[], text) RETURNS text LANGUAGE sql AS $$ SELECT 'error 40001 impostor' $$`,
    `CREATE FUNCTION public.ratebound_decide_many_v3(${texts(6)}) RETURNS text LANGUAGE sql AS $$ SELECT 'error 40001 impostor' $$`,
    `CREATE FUNCTION evil.ratebound_decide_many_v3(text[], text[], integer[], text[], float8[], integer[]) RETURNS text LANGUAGE sql AS $$ SELECT 'error 40001 impostor' $$`,
    // Nonsense arithmetic, ahead of pg_catalog on the app's path.
    "CREATE FUNCTION evil.nonsense(float8, float8) RETURNS float8 LANGUAGE sql AS $$ SELECT 1e9::pg_catalog.float8 $$",
    "CREATE FUNCTION evil.always(text, text) RETURNS boolean LANGUAGE sql AS $$ SELECT true $$",
  ];
  for (const version of [1, 2]) {
    for (const helper of ["add", "mul", "div", "min", "max"]) {
      statements.push(`CREATE FUNCTION evil.ratebound_v${version}_${helper}(float8, float8) RETURNS float8 LANGUAGE sql AS $$ SELECT 1e9::pg_catalog.float8 $$`);
    }
  }
  for (const operator of ["+", "-", "*", "/"]) {
    statements.push(`CREATE OPERATOR evil.${operator} (LEFTARG = float8, RIGHTARG = float8, FUNCTION = evil.nonsense)`);
  }
  statements.push("CREATE OPERATOR evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.always)");
  return statements;
}

describe("ratebound/postgres among hostile roles", () => {
  let server;
  let admin;
  let attacker;
  let app;
  const as = (user, options = {}) => new pg.Pool({ connectionString: server.connectionString.replace("postgres@", `${user}@`), max: 4, ...options });
  const rowsOf = async (text, params = []) => (await admin.query(text, params)).rows;

  before(async () => {
    server = await startPostgres();
    admin = new pg.Pool({ connectionString: server.connectionString, max: 4 });
    // The owner installs; the app gets what docs/postgres.md's "Security" lists.
    await admin.query("CREATE ROLE app LOGIN; CREATE ROLE attacker LOGIN");
    await pgHost.createTable(admin);
    await admin.query("GRANT SELECT, INSERT, UPDATE, DELETE ON public.ratebound TO app");
    // What PostgreSQL before 15 granted every role, and a schema of its own ahead on the app's path.
    await admin.query("GRANT CREATE ON SCHEMA public TO PUBLIC; CREATE SCHEMA evil AUTHORIZATION attacker; GRANT USAGE ON SCHEMA evil TO app");
    attacker = as("attacker");
    for (const statement of impostors()) await attacker.query(statement);
    app = as("app", { options: `-c search_path=${HOSTILE_PATH.replaceAll(" ", "")}` });
    const [{ user, path }] = (await app.query("SELECT current_user AS user, current_setting('search_path') AS path")).rows;
    assert.deepEqual([user, path], ["app", "evil,pg_catalog,public"]);
  });
  after(async () => {
    await Promise.all([app?.end(), attacker?.end(), admin?.end()]);
    server?.stop();
  });

  test("the attacker cannot replace the functions themselves (only their owner can)", async () => {
    const signature = `public.ratebound_decide_one_v3(text, text, integer, text, ${Array.from({ length: 12 }, () => "float8").join(", ")})`;
    const error = await attacker.query(`CREATE OR REPLACE FUNCTION ${signature} RETURNS text LANGUAGE sql AS $$ SELECT 'one - - 1' $$`).catch((caught) => caught);
    assert.equal(error.code, "42501", `must be owner (got ${error.code}: ${error.message})`);
  });

  test("the impostors are there, and would answer: the app's own unqualified, untyped call reaches them", async () => {
    const [{ answer }] = (await app.query(`SELECT ratebound_decide_one_v3(${Array.from({ length: 16 }, (_, index) => `$${index + 1}`).join(", ")}) AS answer`, Array(16).fill("1"))).rows;
    assert.equal(answer, "one - - 1");
    const [{ sum }] = (await app.query("SELECT 1::float8 + 1::float8 AS sum")).rows;
    assert.equal(sum, 1e9, "and the app's own arithmetic is the attacker's");
  });

  /** `calls` calls of `run`, one after another; how many were admitted. */
  async function admitted(calls, run) {
    let count = 0;
    for (let call = 0; call < calls; call++) if ((await run()).ok) count++;
    return count;
  }
  /** What a limit's states hold, together (for limits that take no grants: a grant's records are states too). */
  const valueOf = async (name, key) => (await rowsOf("SELECT coalesce(sum(value), 0)::float8 AS value FROM public.ratebound WHERE name = $1 AND key = $2", [name, key]))[0].value;

  test("limit: a bound of 3 admits exactly 3 of 10 on the pool, both kinds, and leaves 0", async () => {
    const limiter = limiterOn(pgHost.postgresStore(app), LIMITS);
    assert.equal(await admitted(10, () => limiter.limit("three", { key: "pool" })), 3);
    assert.equal(await valueOf("three", "pool"), 0);
    assert.equal(await admitted(10, () => limiter.limit("window", { key: "pool" })), 3);
    assert.equal(await valueOf("window", "pool"), 0);
    assert.equal((await limiter.check("three", { key: "pool" })).ok, false);
  });

  test("the batch function: limitAll and a 2-shard limit stay exact", async () => {
    const limiter = limiterOn(pgHost.postgresStore(app), LIMITS);
    const both = () => limiter.limitAll([{ name: "three", key: "batch" }, { name: "window", key: "batch" }]);
    assert.equal(await admitted(10, both), 3);
    assert.equal(await valueOf("three", "batch"), 0);
    const sharded = await admitted(20, () => limiter.limit("sharded", { key: "batch" }));
    assert.ok(sharded <= 6, `admitted ${sharded} of a bound of 6`);
    assert.equal(await valueOf("sharded", "batch"), 6 - sharded, "the shards hold what was not admitted");
  });

  test("group commit: 10 calls at once on the pool, in one statement of the many-calls function, admit exactly 3", async () => {
    const limiter = limiterOn(pgHost.postgresStore(app), LIMITS);
    await limiter.check("three", { key: "group" }); // the bare name's schema, looked up before the calls
    const outcomes = await Promise.all(Array.from({ length: 10 }, () => limiter.limit("three", { key: "group" })));
    assert.deepEqual(outcomes.map((outcome) => outcome.ok), [true, true, true, false, false, false, false, false, false, false]);
    assert.equal(await valueOf("three", "group"), 0);
  });

  test("numbers past 1e20 (2^70), which the one-item function hands to the batch function, stay exact", async () => {
    const limiter = limiterOn(pgHost.postgresStore(app), LIMITS);
    assert.equal(await admitted(10, () => limiter.limit("huge", { key: "huge", count: 2 ** 70 })), 3);
    assert.equal(await valueOf("huge", "huge"), 0);
  });

  test("in the app's own transaction: exactly 3 of 10 commit", async () => {
    const client = await app.connect();
    try {
      let count = 0;
      for (let call = 0; call < 10; call++) {
        await client.query("BEGIN");
        if ((await limiterOn(pgHost.postgresStore(client), LIMITS).limit("three", { key: "tx" })).ok) count++;
        await client.query("COMMIT");
      }
      assert.equal(count, 3);
      assert.equal(await valueOf("three", "tx"), 0);
    } finally {
      client.release();
    }
  });

  test("grants, settle, getValue and pruneStates (the transactional path) stay exact", async () => {
    const limiter = limiterOn(pgHost.postgresStore(app), LIMITS);
    const grants = [];
    for (let call = 0; call < 10; call++) grants.push(await limiter.limit("llm", { key: "grant", grant: true }));
    assert.equal(grants.filter((status) => status.ok).length, 3);
    assert.equal((await limiter.getValue("llm", { key: "grant" })).value, 0);
    await grants[0].grant.settle(0);
    assert.equal((await limiter.getValue("llm", { key: "grant" })).value, 1, "the cancel refunded exactly its 1");
    const shardZero = async () => (await rowsOf("SELECT value FROM public.ratebound WHERE name = 'llm' AND key = 'grant' AND shard = 0"))[0].value;
    assert.equal(await shardZero(), 1);
    assert.equal(await pgHost.pruneStates(app, { now: NOW }), 0, "nothing is full at NOW");
    assert.equal(await shardZero(), 1, "and nothing was deleted");
    const [{ n }] = await rowsOf("SELECT count(*)::int AS n FROM public.ratebound");
    assert.equal(await pgHost.pruneStates(app, { now: NOW + 100 * 86_400_000 }), n, "100 days on, every state is full");
  });

  test("an install of version 1 upgrades: createTable keeps its rows and its v1 function, and adds the v3 ones, which decide on those rows", async () => {
    // Version 1's table (the same columns) with a row on it, and a function of v1's name standing in for its own.
    await admin.query(`CREATE SCHEMA legacy;
      CREATE TABLE legacy.ratebound (name text NOT NULL, key text NOT NULL, shard integer NOT NULL, value double precision NOT NULL,
        ts double precision NOT NULL, full_at double precision NOT NULL DEFAULT 'Infinity', PRIMARY KEY (name, key, shard));
      CREATE FUNCTION legacy.ratebound_decide_v1(text[], text[], integer[], text[], float8[], boolean) RETURNS text LANGUAGE sql AS $$ SELECT 'v1' $$;
      GRANT USAGE ON SCHEMA legacy TO app; GRANT SELECT, INSERT, UPDATE, DELETE ON legacy.ratebound TO app`);
    await admin.query("INSERT INTO legacy.ratebound (name, key, shard, value, ts) VALUES ('three', 'old', 0, 1, $1)", [NOW]);
    await pgHost.createTable(admin, { table: "legacy.ratebound" });
    await pgHost.createTable(admin, { table: "legacy.ratebound" }); // (idempotent)
    const functions = await rowsOf("SELECT proname FROM pg_proc WHERE pronamespace = 'legacy'::regnamespace AND proname LIKE 'ratebound_decide%' ORDER BY proname");
    assert.deepEqual(functions.map((row) => row.proname), ["ratebound_decide_limits_v3", "ratebound_decide_many_v3", "ratebound_decide_one_v3", "ratebound_decide_v1", "ratebound_decide_v3"]);
    const limiter = limiterOn(pgHost.postgresStore(app, { table: "legacy.ratebound" }), LIMITS);
    assert.equal(await admitted(3, () => limiter.limit("three", { key: "old" })), 1, "the 1 token the old row held, and no more");
    assert.deepEqual(await rowsOf("SELECT value FROM legacy.ratebound WHERE key = 'old'"), [{ value: 0 }]);
  });

  test("a relation of the table's name in a schema ahead makes a bare name fail closed (42P01); named with its schema, it stays exact", async () => {
    await attacker.query("CREATE TABLE evil.ratebound (name text, key text, shard integer, value float8, ts float8, full_at float8, PRIMARY KEY (name, key, shard))");
    const fresh = as("app", { options: `-c search_path=${HOSTILE_PATH.replaceAll(" ", "")}` });
    try {
      const error = await limiterOn(pgHost.postgresStore(fresh), LIMITS).limit("three", { key: "ambiguous" }).catch((caught) => caught);
      assert.equal(error.code, "42P01", `${error.code}: ${error.message}`);
      assert.match(error.message, /2 schemas of the search path \((evil, public|public, evil)\) hold a relation named "ratebound"/);
      await pgHost.createTable(admin); // (the owner's own path does not list evil: still one table)
      const limiter = limiterOn(pgHost.postgresStore(fresh, { table: "public.ratebound" }), LIMITS);
      assert.equal(await admitted(10, () => limiter.limit("three", { key: "ambiguous" })), 3);
      assert.equal(await valueOf("three", "ambiguous"), 0);
      assert.deepEqual((await attacker.query("SELECT count(*)::int AS n FROM evil.ratebound")).rows, [{ n: 0 }], "the stand-in got nothing");
    } finally {
      await fresh.end();
    }
  });
});
