// The scenarios every PostgreSQL backend runs (PGlite in-process, and a real server through pg):
// registered with node:test by `postgresScenarios(backend)`. Not a test file itself.
import { test } from "node:test";
import assert from "node:assert/strict";
import { COLLIDING_REFS, stateFor } from "../hosts/collisions.mjs";

const ratebound = await import("../../pkg/dist/node.js");
export const pgHost = await import("../../pkg/dist/postgres.js");
export const { RateLimiter } = ratebound;

/** A clock that never moves, so every count is exact. */
export const NOW = 1_700_000_000_000;
export const LIMITS = {
  daily: { kind: "token bucket", rate: 10, period: 86_400_000 },
  perUser: { kind: "token bucket", rate: 3, period: 86_400_000 },
  global: { kind: "fixed window", rate: 2, period: 86_400_000, start: 0 },
};
export const limiterOn = (store, limits = LIMITS) => new RateLimiter(store, limits, { now: () => NOW });

/**
 * Registers the scenarios. `backend` gives:
 * - `db()`: what the app hands postgresStore for calls of their own (a pg Pool, or PGlite);
 * - `inTransaction(fn)`: runs `fn(tx)` in the app's own transaction (BEGIN … COMMIT, ROLLBACK
 *   when fn throws) and returns what it returns; `tx` has `query(text, params)`;
 * - optionally `query(text, params)`: the rows of a statement, when `db()` has no `query`.
 */
export function postgresScenarios(backend) {
  const query = backend.query ?? (async (text, params = []) => (await backend.db().query(text, params)).rows);
  const stored = (ref) => limiterOn(pgHost.postgresStore(backend.db())).getValue(ref.name, { key: ref.key });
  const rowOf = async (name, key) => (await query("SELECT value, ts FROM ratebound WHERE name = $1 AND key = $2", [name, key]))[0] ?? null;
  const posts = async (author) => (await query("SELECT body FROM posts WHERE author = $1 ORDER BY id", [author])).map((row) => row.body);

  test("createTable is idempotent and makes the table with its primary key", async () => {
    await pgHost.createTable(backend.db());
    await pgHost.createTable(backend.db());
    const columns = await query(
      "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'ratebound' ORDER BY ordinal_position",
    );
    assert.deepEqual(
      columns.map((column) => `${column.column_name} ${column.data_type}`),
      ["name text", "key text", "shard integer", "value double precision", "ts double precision", "full_at double precision"],
    );
    const [primary] = await query(
      "SELECT array_agg(a.attname::text ORDER BY a.attnum) AS columns FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) WHERE i.indrelid = 'ratebound'::regclass AND i.indisprimary",
    );
    assert.deepEqual(primary.columns, ["name", "key", "shard"]);
  });

  test("a sliding window in the app's transaction: its two windows are two rows, the previous counted by its weight, and a rollback consumes nothing", async () => {
    const DAY = 86_400_000;
    const start = Math.floor(NOW / DAY) * DAY;
    let now = start + DAY / 2;
    const on = (store) => new RateLimiter(store, { slide: { kind: "sliding window", rate: 4, period: DAY } }, { now: () => now });
    for (let call = 0; call < 4; call++) assert.equal((await backend.inTransaction((tx) => on(pgHost.postgresStore(tx)).limit("slide", { key: "w" }))).ok, true);
    assert.equal((await on(pgHost.postgresStore(backend.db())).limit("slide", { key: "w" })).ok, false);
    // A quarter into the next window: floor(0.75 × 4) = 3 counted, so one more fits.
    now = start + DAY + DAY / 4;
    const thrown = await backend
      .inTransaction(async (tx) => {
        assert.equal((await on(pgHost.postgresStore(tx)).limit("slide", { key: "w" })).ok, true);
        throw new Error("rolled back");
      })
      .catch((error) => error.message);
    assert.equal(thrown, "rolled back");
    assert.equal((await on(pgHost.postgresStore(backend.db())).limit("slide", { key: "w" })).ok, true, "the rolled-back call took nothing");
    // 3 + 1 counted: refused until the weight falls under 3, the next millisecond.
    assert.deepEqual(await on(pgHost.postgresStore(backend.db())).limit("slide", { key: "w" }), { ok: false, retryAfter: 1 });
    const rows = await query("SELECT shard, value, ts FROM ratebound WHERE name = 'slide' AND key = 'w' ORDER BY ts");
    const window = start / DAY;
    assert.deepEqual(rows.map((row) => [row.shard, row.value, row.ts]), [[window % 2, 4, start], [1 - (window % 2), 1, start + DAY]]);
    await on(pgHost.postgresStore(backend.db())).reset("slide", { key: "w" });
    assert.deepEqual(await query("SELECT shard FROM ratebound WHERE name = 'slide' AND key = 'w'"), [], "reset deletes both windows");
  });

  test("a rolled-back transaction consumes nothing and its insert is gone too", async () => {
    const thrown = await backend
      .inTransaction(async (tx) => {
        assert.equal((await limiterOn(pgHost.postgresStore(tx)).limit("daily", { key: "rolled", count: 4 })).ok, true);
        await tx.query("INSERT INTO posts (author, body) VALUES ($1, $2)", ["rolled", "never"]);
        throw new Error("the app failed after the limit granted");
      })
      .catch((error) => error.message);
    assert.equal(thrown, "the app failed after the limit granted");
    assert.equal(await rowOf("daily", "rolled"), null);
    assert.deepEqual(await posts("rolled"), []);
    assert.equal((await stored({ name: "daily", key: "rolled" })).value, 10);
  });

  test("the app's own insert and the limit commit together, and a refused call inserts nothing", async () => {
    const send = (id) =>
      backend.inTransaction(async (tx) => {
        const status = await limiterOn(pgHost.postgresStore(tx)).limit("perUser", { key: "ada" });
        if (status.ok) await tx.query("INSERT INTO posts (author, body) VALUES ($1, $2)", ["ada", `post ${id}`]);
        return status.ok;
      });
    const sent = [];
    for (const id of [1, 2, 3, 4]) sent.push(await send(id));
    assert.deepEqual(sent, [true, true, true, false]);
    assert.deepEqual(await posts("ada"), ["post 1", "post 2", "post 3"]);
    assert.deepEqual(await rowOf("perUser", "ada"), { value: 0, ts: NOW });
    // The write hint: refilling 3 tokens at 3 a day, the state is full again a day later.
    const [{ full_at: fullAt }] = await query("SELECT full_at FROM ratebound WHERE name = 'perUser' AND key = 'ada'");
    assert.equal(fullAt, NOW + 86_400_000);
  });

  test("several calls in one transaction see each other's writes", async () => {
    const answers = await backend.inTransaction(async (tx) => {
      const limiter = limiterOn(pgHost.postgresStore(tx));
      const first = await limiter.limit("daily", { key: "rw", count: 6 });
      const second = await limiter.limit("daily", { key: "rw", count: 6 });
      return [first.ok, second.ok, (await limiter.getValue("daily", { key: "rw" })).value];
    });
    assert.deepEqual(answers, [true, false, 4]);
    assert.deepEqual(await rowOf("daily", "rw"), { value: 4, ts: NOW });
  });

  test("limitAll takes two limits together or not at all", async () => {
    const limiter = limiterOn(pgHost.postgresStore(backend.db()));
    const batch = (user) => limiter.limitAll([{ name: "perUser", key: user }, { name: "global", key: "all" }]);
    assert.deepEqual(await batch("u1"), { ok: true });
    assert.deepEqual(await batch("u2"), { ok: true });
    assert.equal((await batch("u3")).ok, false); // global is used up
    assert.equal(await rowOf("perUser", "u3"), null, "u3's perUser is untouched");
    assert.equal((await rowOf("global", "all")).value, 0);
  });

  test("a limitAll whose second write breaks a constraint writes neither state, and rejects with the SQLSTATE", async () => {
    await query("ALTER TABLE ratebound ADD CONSTRAINT no_bad_key CHECK (key <> 'forbidden')");
    try {
      const limiter = limiterOn(pgHost.postgresStore(backend.db()));
      const error = await limiter.limitAll([{ name: "perUser", key: "fine" }, { name: "perUser", key: "forbidden" }]).catch((caught) => caught);
      assert.ok(error instanceof Error);
      assert.equal(error.code, "23514");
      assert.equal(await rowOf("perUser", "fine"), null);
    } finally {
      await query("ALTER TABLE ratebound DROP CONSTRAINT no_bad_key");
    }
  });

  test("every colliding (name, key, shard) keeps its own state", async () => {
    const store = pgHost.postgresStore(backend.db());
    await store.transaction(async (tx) => {
      for (const [index, ref] of COLLIDING_REFS.entries()) await tx.write(ref, stateFor(index));
    });
    const states = await store.transaction(async (tx) => {
      const all = [];
      for (const ref of COLLIDING_REFS) all.push(await tx.read(ref));
      return all;
    });
    assert.deepEqual(states, COLLIDING_REFS.map((_, index) => stateFor(index)));
    const [{ n }] = await query("SELECT count(*)::int AS n FROM ratebound WHERE ts BETWEEN 1000 AND 1100");
    assert.equal(n, COLLIDING_REFS.length);
    const config = { kind: "token bucket", rate: 1, period: 86_400_000 };
    const limiter = limiterOn(store, {});
    const take = async (name, key) => (await limiter.limit(name, { key, config })).ok;
    assert.deepEqual([await take("x:y", "z"), await take("x", "y:z"), await take("x:y", "z")], [true, true, false]);
  });

  test("a state makes an exact round trip through double precision", async () => {
    const store = pgHost.postgresStore(backend.db());
    const ref = { name: "exact", key: "k", shard: 0 };
    const state = { value: 0.1 + 0.2, ts: NOW + 1 / 3 };
    await store.write(ref, state);
    const back = await store.read(ref);
    assert.ok(Object.is(back.value, state.value) && Object.is(back.ts, state.ts), `got ${JSON.stringify(back)}`);
  });

  test("a corrupt row fails the call with CORRUPT_STATE naming the ref, writes nothing, and stays as it was", async () => {
    await query("INSERT INTO ratebound (name, key, shard, value, ts) VALUES ('daily', 'corrupt', 0, 'NaN', $1)", [NOW]);
    const error = await backend
      .inTransaction(async (tx) => {
        await tx.query("INSERT INTO posts (author, body) VALUES ($1, $2)", ["corrupt", "before"]);
        const failed = await limiterOn(pgHost.postgresStore(tx))
          .limitAll([{ name: "perUser", key: "corrupt" }, { name: "daily", key: "corrupt" }])
          .catch((caught) => caught);
        // The caller's transaction is still usable: the failed call rolled back to its savepoint.
        await tx.query("INSERT INTO posts (author, body) VALUES ($1, $2)", ["corrupt", "after"]);
        return failed;
      });
    assert.ok(error instanceof Error);
    assert.equal(error.code, "CORRUPT_STATE");
    assert.match(error.message, /daily/);
    assert.match(error.message, /corrupt/);
    const [row] = await query("SELECT value::text AS value, ts FROM ratebound WHERE name = 'daily' AND key = 'corrupt'");
    assert.deepEqual(row, { value: "NaN", ts: NOW });
    assert.equal(await rowOf("perUser", "corrupt"), null);
    assert.deepEqual(await posts("corrupt"), ["before", "after"]);
  });

  test("reset deletes the state, and pruneStates deletes only states that are full", async () => {
    const limiter = limiterOn(pgHost.postgresStore(backend.db()));
    await limiter.limit("daily", { key: "reset-me" });
    await limiter.reset("daily", { key: "reset-me" });
    assert.equal(await rowOf("daily", "reset-me"), null);
    await query("INSERT INTO ratebound (name, key, shard, value, ts, full_at) VALUES ('prune', 'full', 0, 1, 0, 10), ('prune', 'later', 0, 1, 0, 1e15)");
    assert.equal(await pgHost.pruneStates(backend.db(), { now: 100 }), 1);
    assert.deepEqual((await query("SELECT key FROM ratebound WHERE name = 'prune'")).map((row) => row.key), ["later"]);
  });
}
