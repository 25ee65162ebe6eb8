/**
 * The decision, next to the data: the Rust core's `decide_batch`
 * (`src/batch.rs`; `decide_planned` in `src/limiter.rs`; `decide` and
 * `honest_wait` in `src/decision.rs`; `combine` in `src/shard.rs`;
 * `src/token_bucket.rs`, `src/fixed_window.rs`; `full_at` in
 * `src/transition.rs`) ported to PL/pgSQL, installed by `createTable` beside
 * the table and run by ONE statement per call: it locks every state the call
 * reads, decides, and writes, inside the server.
 *
 * Only what needs the stored states is here. The core validated the call,
 * drew its random numbers, chose the shards, divided the limit per shard and
 * fixed the state a missing shard starts from; after the statement it replays
 * the same batch on what the function read and answers (messages, figures and
 * errors come from the core). `tests/sql/postgres-differential.test.mjs` runs
 * 100,000+ random decisions through both and compares every answer and every
 * stored number with `Object.is`.
 *
 * **Arithmetic** is the helpers' (`postgres-helpers.ts`): IEEE 754's results
 * where PostgreSQL's operators would raise.
 *
 * **Numbers in and out.** Numbers arrive as `float8[]` literal text
 * (JavaScript's shortest form, `-0` as `-0`), which `float8in` reads back
 * exactly; they leave as text under the function's own
 * `SET extra_float_digits = 3` (the shortest exact form), whatever the
 * session's setting.
 *
 * **Locks.** A state has ONE lock: a transaction-scoped advisory lock on its
 * ref (`hashtextextended(p_locks[ref], 0)`), the same the transactional path
 * takes. Every ref's is taken before the ref is read, in one global order
 * (name, key, then shard, bytewise: `COLLATE "C"`), and only then its row
 * (`SELECT … FOR UPDATE`, a statement of its own: under READ COMMITTED each
 * statement of a VOLATILE function sees every commit made before it started).
 * A row is only ever locked or written by a transaction holding its state's
 * lock, so among ratebound's calls no row lock is ever waited for and every
 * wait is on an advisory lock taken in the global order: no cycle, at any
 * isolation level. (Before version 2 a stored row was locked by its row alone
 * and a missing one by the advisory lock: under REPEATABLE READ or SERIALIZABLE
 * a call whose snapshot missed a row just created held the advisory lock, went
 * on to its next ref, and waited for the row only when it wrote it, out of
 * order; two such calls deadlocked.) A snapshot that cannot see the row, or an
 * older version of it, fails with `40001` when the call locks or writes it.
 *
 * **Security.** Every PL/pgSQL function runs with {@link PINNED}'s
 * `search_path` (`pg_catalog, pg_temp`), and the SQL-language helpers are
 * inlined under it; every function names the table and the helpers with their
 * schema, so no function, operator or type another role creates in a schema
 * on the caller's search path is ever called. The store calls the two entry points by their
 * schema with every parameter cast to its declared type (`postgres-call.ts`),
 * so no overload can win.
 *
 * **Failures.** The body runs in an exception block (a subtransaction): any
 * error (a lock timeout, a deadlock, a serialization failure, a cancelled
 * statement) rolls back what the call did and comes back as data, so the
 * statement itself succeeds and a caller's transaction stays usable, as it
 * did with the savepoint of the transactional path.
 * @module
 */

import { helperFunctionsSql, type Helpers } from "./postgres-helpers.js";
import { decideOneSql } from "./postgres-decide-one.js";
import { decideManySql } from "./postgres-decide-many.js";

/**
 * The version in the functions' names: a driver never calls a function of another version.
 * Version 2: every PL/pgSQL function's `search_path` pinned, the table and helpers named with their schema,
 * and a state's advisory lock taken before its row (see the module's "Locks"). Version 3: an item
 * carries a calendar period's window (20 numbers an item), which the helpers take.
 */
export const DECIDE_VERSION = 3;

/**
 * The `search_path` every PL/pgSQL function runs with, whatever the caller's: PostgreSQL's own
 * first, then nothing another role can create in (`pg_temp` last, so no temporary function or
 * operator is ever found). The table and the helpers are named with their schema. The five
 * SQL-language helpers (`_add`, `_mul`, `_div`, `_min`, `_max`) carry no setting, so that
 * PostgreSQL inlines them: inlined, they resolve under the pinned path of the function calling
 * them (a role calling one itself only changes its own arithmetic).
 */
export const PINNED = "SET search_path = pg_catalog, pg_temp";

/** An identifier, quoted for SQL (`"app"`; a `"` inside doubled). */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/**
 * The names a table's statements use, every one with its schema: the schema as a prefix
 * (`"app".`), the table (`"app"."limits"`), and the two decision functions
 * (`"app"."limits_decide_v3"`, `"app"."limits_decide_one_v3"`), which live beside the table.
 *
 * @param schema The schema that holds the table, unquoted.
 * @param table The table's name, unquoted.
 * @returns The quoted names.
 */
export function decideFunctionName(
  schema: string,
  table: string,
): { schema: string; table: string; decide: string; decideOne: string; decideMany: string; decideLimits: string } {
  const prefix = `${quoteIdentifier(schema)}.`;
  return {
    schema: prefix,
    table: `${prefix}${quoteIdentifier(table)}`,
    decide: `${prefix}${quoteIdentifier(`${table}_decide_v${DECIDE_VERSION}`)}`,
    decideOne: `${prefix}${quoteIdentifier(`${table}_decide_one_v${DECIDE_VERSION}`)}`,
    decideMany: `${prefix}${quoteIdentifier(`${table}_decide_many_v${DECIDE_VERSION}`)}`,
    decideLimits: `${prefix}${quoteIdentifier(`${table}_decide_limits_v${DECIDE_VERSION}`)}`,
  };
}

/** Numbers per item in the function's `p_items` (see {@link decideFunctionSql}). */
export const ITEM_STRIDE = 20;

/**
 * The SQL of the helpers and the decision function of one table: `CREATE OR
 * REPLACE FUNCTION` statements, in order.
 *
 * `<table>_decide_v3(p_names text[], p_keys text[], p_shards integer[],
 * p_locks text[], p_items float8[], p_all boolean) → text`:
 *
 * - Refs `1..R`: the `name`, `key` and `shard` columns of each state the
 *   batch reads, and the text of its advisory lock (hashed with
 *   `hashtextextended(…, 0)`).
 * - `p_items`: 20 numbers per item, in order: kind (0 token bucket, 1 fixed
 *   window), rate, period, capacity, maxReserved (NULL: unlimited; 0: no
 *   reservation at all), shards, start (NULL: none), count, reserve (0/1),
 *   write (0/1), now, the first read (a ref, 1-based), the second read (0:
 *   none), the value and ts each read starts from when it has no state, and
 *   for a calendar period (NULL otherwise) the start and end of the window
 *   that holds now and the unit's longest window, as the core computed them
 *   (the functions do no calendar arithmetic; the period is the unit's mean
 *   length). Rate, capacity and maxReserved are the shard's; shards is the
 *   limit's count.
 * - `p_all`: all or nothing (`limitAll`, `checkAll`), else each item is its
 *   own call, decided after the ones before it.
 *
 * Returns one text, so that no driver's array parsing stands between it and
 * the store: `error SQLSTATE message` when the call failed (and did
 * nothing), else `ok`, then the value and ts each ref held when read (`- -`:
 * no row), then one digit per item, `1` when its grant was written (only a
 * `write` item's is), all separated by single spaces (no number's text has
 * one). A stored row that is not two finite numbers is decided on by nothing
 * and overwritten by nothing: the function writes nothing and returns it as
 * it is. An item whose wait is
 * not finite, or whose state would not be, writes nothing (and, all or
 * nothing, neither does the batch). Each written row's `full_at` is when it
 * is full again (`Infinity`: never certain).
 *
 * @param schema The table's schema, quoted with a trailing dot (`"app".`).
 * @param table The table's quoted name, as in SQL (`"app"."limits"`).
 * @param decide The decision function's quoted name (`"app"."limits_decide_v3"`).
 * @returns The statements.
 */
export function decideFunctionSql(schema: string, table: string, decide: string, decideOne: string, decideMany: string, decideLimits: string): string[] {
  const fn = (name: string) => `${schema}"ratebound_v${DECIDE_VERSION}_${name}"`;
  const { statements, helpers } = helperFunctionsSql(fn);
  return [
    ...statements,
    decideSql(table, decide, helpers),
    decideOneSql(table, decide, decideOne),
    decideManySql(table, decideMany, helpers),
    decideSql(table, decideLimits, helpers, true),
  ];
}

/**
 * The decision's pieces of PL/pgSQL, shared by the batch function (one call) and the many-calls
 * function (`postgres-decide-many.ts`): one definition of the lock order and of an item's
 * decision. `declarations`: the variables both use; `lockOrder`: the refs in the global order
 * (into `lock_order`); `lockAndRead`: every ref locked and read, in
 * the global order (into `stored_value`, `stored_ts`; `corrupt` set when a row is not two finite
 * numbers); `itemLoop(from, to, all)`: the items `from .. to` (0-based) decided in order on
 * `pending_*`, else `stored_*`, else each read's fresh state, as one call that is all or nothing
 * when the SQL boolean `all` is true.
 */
export function decideParts(table: string, h: Helpers): { declarations: string; lockOrder: string; lockAndRead: string; itemLoop(from: string, to: string, all: string): string } {
  const call = (state: string, count: string, honest: boolean) =>
    `${h.shard}(kind, rate, period, capacity, max_reserved, reserve, ${state}[1], ${state}[2], now, ${count}, ${honest}, calendar)`;
  // The state a read starts from: what this batch wrote there, else what it held, else its fresh state.
  const current = (ref: string, fresh: number) => `CASE WHEN pending_value[${ref}] IS NOT NULL THEN ARRAY[pending_value[${ref}], pending_ts[${ref}]]
          WHEN stored_value[${ref}] IS NOT NULL THEN ARRAY[stored_value[${ref}], stored_ts[${ref}]]
          ELSE ARRAY[p_items[at + ${fresh}], p_items[at + ${fresh + 1}]] END`;
  // What writing `state` (a decision: value at [3], ts at [4]) to `ref` leaves pending; full_at is
  // Infinity without a look at the state for 3+ shards and a fixed window with a random start.
  const pend = (ref: string, state: string) => `pending_value[${ref}] := ${state}[3];
            pending_ts[${ref}] := ${state}[4];
            pending_full_at[${ref}] := CASE WHEN shards >= 3 OR (kind = 1 AND NOT has_start) THEN 'Infinity'::float8
              ELSE ${h.fullAt}(kind, rate, period, capacity, shards, has_start, ${state}[3], ${state}[4], calendar) END;
            wrote[item + 1] := writes;`;
  const declarations = `  refs integer := coalesce(cardinality(p_names), 0);
  items integer := coalesce(cardinality(p_items), 0) / ${ITEM_STRIDE};
  -- Per ref (NULL: none): the state it held, and the one this batch will write there with its full_at.
  stored_value float8[] := '{}';
  stored_ts float8[] := '{}';
  pending_value float8[] := '{}';
  pending_ts float8[] := '{}';
  pending_full_at float8[] := '{}';
  -- Per item: whether its grant is written.
  wrote boolean[] := '{}';
  corrupt boolean := false;
  all_ok boolean := true;
  any_write boolean := false;
  failed boolean := false;
  answer text := 'ok';
  ref integer;
  lock_order integer[] := ARRAY[1];
  row_value float8;
  row_ts float8;
  at integer;
  kind float8; rate float8; period float8; capacity float8; max_reserved float8; shards float8; has_start boolean;
  count float8; reserve boolean; writes boolean; now float8; first_ref integer; second_ref integer; calendar float8[];
  state_first float8[]; state_second float8[]; fresh_first boolean;
  alone_first float8[]; alone_second float8[]; shared_first float8[]; shared_second float8[];
  balance float8; half float8; share float8; result_ok boolean; result_wait float8; write_first float8[]; write_second float8[];`;
  const lockOrder = `    -- Lock and read every ref in one global order: name, key (bytewise), shard. (One or two refs,
    -- the common case, are ordered without a query.)
    IF refs = 2 THEN
      IF p_names[2] COLLATE "C" < p_names[1] COLLATE "C"
          OR (p_names[2] = p_names[1] AND (p_keys[2] COLLATE "C" < p_keys[1] COLLATE "C" OR (p_keys[2] = p_keys[1] AND p_shards[2] < p_shards[1]))) THEN
        lock_order := ARRAY[2, 1];
      ELSE
        lock_order := ARRAY[1, 2];
      END IF;
    ELSIF refs <> 1 THEN
      lock_order := ARRAY(SELECT u.o FROM unnest(p_names, p_keys, p_shards) WITH ORDINALITY AS u(n, k, s, o)
        ORDER BY u.n COLLATE "C", u.k COLLATE "C", u.s);
    END IF;`;
  const lockAndRead = `${lockOrder}
    FOREACH ref IN ARRAY lock_order LOOP
      -- The state's one lock, then its row (a statement of its own, which under READ COMMITTED
      -- sees every commit made before the lock was ours). See the module's "Locks".
      PERFORM pg_advisory_xact_lock(hashtextextended(p_locks[ref], 0));
      SELECT value, ts INTO row_value, row_ts FROM ${table}
        WHERE name = p_names[ref] AND key = p_keys[ref] AND shard = p_shards[ref] FOR UPDATE;
      IF FOUND THEN
        stored_value[ref] := row_value; -- (the column is NOT NULL: NULL means no row)
        stored_ts[ref] := row_ts;
        IF NOT (${h.finite("row_value")} AND ${h.finite("row_ts")}) THEN corrupt := true; END IF;
      END IF;
    END LOOP;`;
  const itemLoop = (from: string, to: string, all: string) => `      FOR item IN ${from} .. ${to} LOOP
        at := item * ${ITEM_STRIDE};
        kind := p_items[at + 1]; rate := p_items[at + 2]; period := p_items[at + 3]; capacity := p_items[at + 4];
        max_reserved := p_items[at + 5]; shards := p_items[at + 6]; has_start := p_items[at + 7] IS NOT NULL;
        count := p_items[at + 8]; reserve := p_items[at + 9] <> 0; writes := p_items[at + 10] <> 0; now := p_items[at + 11];
        first_ref := p_items[at + 12]; second_ref := p_items[at + 13];
        calendar := CASE WHEN p_items[at + 18] IS NULL THEN NULL ELSE p_items[at + 18 : at + 20] END;
        -- decide_planned: the first shard alone when it grants and is fresh, or the limit has fewer
        -- than 3 shards; else the second, the fuller of two that grant, or both combined.
        fresh_first := pending_value[first_ref] IS NULL AND stored_value[first_ref] IS NULL;
        state_first := ${current("first_ref", 14)};
        alone_first := ${call("state_first", "count", true)};
        write_first := NULL;
        write_second := NULL;
        IF second_ref = 0 OR (alone_first[1] = 1 AND (fresh_first OR shards < 3)) THEN
          result_ok := alone_first[1] = 1;
          result_wait := alone_first[2];
          IF result_ok THEN write_first := alone_first; END IF;
        ELSE
          state_second := ${current("second_ref", 16)};
          alone_second := ${call("state_second", "count", true)};
          IF alone_first[1] = 1 AND (alone_second[1] = 0 OR alone_first[3] > alone_second[3]) THEN
            result_ok := true; result_wait := alone_first[2]; write_first := alone_first;
          ELSIF alone_second[1] = 1 THEN
            result_ok := true; result_wait := alone_second[2]; write_second := alone_second;
          ELSE
            -- src/shard.rs combine: shares that leave both shards at the same value.
            balance := ${h.add("alone_first[3]", "alone_second[3]")};
            balance := ${h.add("balance", "count")};
            half := ${h.div("balance", "2")};
            share := ${h.add("alone_first[3]", "count")};
            share := ${h.sub("share", "half")};
            -- Each share's wait made a promise, as a granted combination's is (src/shard.rs combine);
            -- a refusal's wait is the core's to answer (it replays this decision), so only whether
            -- it is finite matters here.
            shared_first := ${call("state_first", "share", true)};
            share := ${h.add("alone_second[3]", "count")};
            share := ${h.sub("share", "half")};
            shared_second := ${call("state_second", "share", true)};
            result_ok := shared_first[1] = 1 AND shared_second[1] = 1;
            result_wait := CASE WHEN shared_first[2] IS NULL AND shared_second[2] IS NULL THEN NULL
              ELSE ${h.max}(coalesce(shared_first[2], 0), coalesce(shared_second[2], 0)) END;
            IF result_ok THEN write_first := shared_first; write_second := shared_second; END IF;
          END IF;
        END IF;
        -- A refusal always has a wait (src/limiter.rs refused_wait).
        IF NOT result_ok AND (result_wait IS NULL OR result_wait = 'NaN') THEN result_wait := 'Infinity'; END IF;
        -- check_wait and check_writes: a wait no clock can keep, or a state outside the numbers, is an error.
        IF (result_wait IS NOT NULL AND NOT ${h.finite("result_wait")})
            OR (write_first IS NOT NULL AND NOT (${h.finite("write_first[3]")} AND ${h.finite("write_first[4]")}))
            OR (write_second IS NOT NULL AND NOT (${h.finite("write_second[3]")} AND ${h.finite("write_second[4]")})) THEN
          IF ${all} THEN failed := true; EXIT; END IF;
          CONTINUE;
        END IF;
        all_ok := all_ok AND result_ok;
        any_write := any_write OR writes;
        IF writes OR ${all} THEN
          IF write_first IS NOT NULL THEN
            ${pend("first_ref", "write_first")}
          END IF;
          IF write_second IS NOT NULL THEN
            ${pend("second_ref", "write_second")}
          END IF;
        END IF;
      END LOOP;`;
  return { declarations, lockOrder, lockAndRead, itemLoop };
}

/**
 * src/batch.rs decide_batch and src/limiter.rs decide_planned, with the locks, reads and writes.
 *
 * With `limits`, the batch function of stored limits (`<table>_decide_limits_v3`, the batch
 * function's parameters and `p_expect float8[]`): the last `cardinality(p_expect) / 2` refs are
 * the records of stored limits (no item reads them), and `p_expect` the value and ts each held
 * when the batch was planned (NULL, NULL: no row). Once every ref is locked and read, a record
 * that holds anything else makes it decide and write nothing and answer `replan`, then the value
 * and ts each ref held (as `ok` does), so the limiter plans the batch again on them.
 */
function decideSql(table: string, decide: string, h: Helpers, limits = false): string {
  const { declarations, lockOrder, lockAndRead, itemLoop } = decideParts(table, h);
  // With stored limits, only the states are locked (in the global order, as always); the records
  // are read as they are committed: a setLimit that commits after this read is after this call.
  const statesOnly = `    IF refs - checks = 1 THEN
      lock_order := ARRAY[1];
    ELSE
      lock_order := ARRAY(SELECT u.o FROM unnest(p_names[1:refs - checks], p_keys[1:refs - checks], p_shards[1:refs - checks])
        WITH ORDINALITY AS u(n, k, s, o) ORDER BY u.n COLLATE "C", u.k COLLATE "C", u.s);
    END IF;`;
  const readStates = lockAndRead.slice(lockOrder.length);
  const readRecords = `
    FOR ref IN refs - checks + 1 .. refs LOOP
      SELECT value, ts INTO row_value, row_ts FROM ${table} WHERE name = p_names[ref] AND key = p_keys[ref] AND shard = p_shards[ref];
      IF FOUND THEN
        stored_value[ref] := row_value;
        stored_ts[ref] := row_ts;
      END IF;
    END LOOP;`;
  const check = `
    -- Stored limits: decide only on the records the batch was planned on.
    FOR checked IN 1 .. checks LOOP
      ref := refs - checks + checked;
      IF stored_value[ref] IS DISTINCT FROM p_expect[2 * checked - 1] OR stored_ts[ref] IS DISTINCT FROM p_expect[2 * checked] THEN
        answer := 'replan';
        FOR ref IN 1 .. refs LOOP
          answer := answer || ' ' || coalesce(stored_value[ref]::text, '-') || ' ' || coalesce(stored_ts[ref]::text, '-');
        END LOOP;
        RETURN answer;
      END IF;
    END LOOP;
`;
  return `CREATE OR REPLACE FUNCTION ${decide}(p_names text[], p_keys text[], p_shards integer[], p_locks text[],
  p_items float8[], p_all boolean${limits ? ", p_expect float8[]" : ""}) RETURNS text
LANGUAGE plpgsql VOLATILE ${PINNED} SET extra_float_digits = 3 AS $fn$
DECLARE
${declarations}${limits ? "\n  checked integer;\n  checks integer := coalesce(cardinality(p_expect), 0) / 2;" : ""}
BEGIN
  BEGIN
${limits ? `${statesOnly}${readStates}${readRecords}${check}` : lockAndRead}
    IF NOT corrupt THEN
${itemLoop("0", "items - 1", "p_all")}

      -- All or nothing: writes only when every item is granted and one writes.
      IF p_all AND (failed OR NOT all_ok OR NOT any_write) THEN
        pending_value := '{}';
        wrote := '{}';
      END IF;
      FOR ref IN 1 .. refs LOOP
        CONTINUE WHEN pending_value[ref] IS NULL;
        INSERT INTO ${table} (name, key, shard, value, ts, full_at)
          VALUES (p_names[ref], p_keys[ref], p_shards[ref], pending_value[ref], pending_ts[ref], pending_full_at[ref])
          ON CONFLICT (name, key, shard) DO UPDATE SET value = excluded.value, ts = excluded.ts, full_at = excluded.full_at;
      END LOOP;
    ELSE
      wrote := '{}';
    END IF;

    FOR ref IN 1 .. refs LOOP
      answer := answer || ' ' || coalesce(stored_value[ref]::text, '-') || ' ' || coalesce(stored_ts[ref]::text, '-');
    END LOOP;
    answer := answer || ' ';
    FOR item IN 1 .. items LOOP
      answer := answer || CASE WHEN wrote[item] THEN '1' ELSE '0' END;
    END LOOP;
    RETURN answer;
  EXCEPTION WHEN others OR query_canceled THEN
    -- Everything this call did is rolled back (the block is a subtransaction); the statement
    -- succeeds, so the caller's transaction stays usable, and the store rejects with the code.
    RETURN 'error ' || SQLSTATE || ' ' || SQLERRM;
  END;
END
$fn$`;
}
