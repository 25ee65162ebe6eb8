/**
 * ratebound/postgres's many-calls decision function, `<table>_decide_many_v3`: the calls a pool's
 * group commit gathers (`postgres-group.ts`), decided in ONE statement, in arrival order, each as
 * the batch function (`postgres-decide.ts`) would decide it alone after the ones before it.
 * @module
 */
import { PINNED, decideParts } from "./postgres-decide.js";
import type { Helpers } from "./postgres-helpers.js";

/**
 * `<table>_decide_many_v3(p_names text[], p_keys text[], p_shards integer[], p_locks text[],
 * p_items float8[], p_calls integer[]) → text`.
 *
 * - Refs `1..R` and `p_items` as the batch function's, for every call of the statement: a state
 *   two calls read is ONE ref (its reads name the same index).
 * - `p_calls`, per call in order: how many items it has (the next ones of `p_items`), `1` when it
 *   is all or nothing (else `0`), how many refs it reads, then those refs (1-based), in the order
 *   its answer lists them.
 *
 * Every ref's lock is taken first, in the batch function's one global order (the same code): a
 * statement holds every lock it needs before it reads, and waits only up that order; then every
 * row is read (`FOR UPDATE`) in one statement, and at the end every row written in one. Then each
 * call, in order: what each of its refs holds after the calls before it (the row as read, or what
 * an earlier call of the statement wrote there) is what it reads; a ref that is not two finite
 * numbers makes the call write nothing (the core then names it, for that call alone); else its
 * items are decided by the batch function's item loop (the same code). The rows the calls wrote
 * are written once each, at the end, with the last call's state and `full_at`.
 *
 * Returns one line per call, separated by newlines, each the batch function's answer for that
 * call alone (`ok`, what each of its refs held, a digit per item); or `error SQLSTATE message` for
 * the whole statement, having written nothing.
 */
export function decideManySql(table: string, many: string, h: Helpers): string {
  const { declarations, lockOrder, itemLoop } = decideParts(table, h);
  const eachRef = (body: string) => `FOR c IN call_at + 3 .. call_at + 2 + call_refs LOOP
          call_ref := p_calls[c];
          ${body}
        END LOOP;`;
  return `CREATE OR REPLACE FUNCTION ${many}(p_names text[], p_keys text[], p_shards integer[], p_locks text[],
  p_items float8[], p_calls integer[]) RETURNS text
LANGUAGE plpgsql VOLATILE ${PINNED} SET extra_float_digits = 3 AS $fn$
DECLARE
${declarations}
  -- Per ref: whether a call wrote it, and the full_at of the last write.
  dirty boolean[] := '{}';
  dirty_full_at float8[] := '{}';
  calls integer := coalesce(cardinality(p_calls), 0);
  call_at integer := 1;
  first_item integer := 0;
  call_items integer;
  call_all boolean;
  call_refs integer;
  call_ref integer;
  answers text[] := '{}';
BEGIN
  BEGIN
${lockOrder}
    -- Every state's one lock first, in the global order; then every row in ONE statement (which,
    -- under READ COMMITTED, sees every commit made before the last lock was ours). Only a
    -- transaction holding a state's lock ever locks its row, so no row lock is waited for.
    FOREACH ref IN ARRAY lock_order LOOP
      PERFORM pg_advisory_xact_lock(hashtextextended(p_locks[ref], 0));
    END LOOP;
    FOR ref, row_value, row_ts IN SELECT u.o, t.value, t.ts FROM unnest(p_names, p_keys, p_shards) WITH ORDINALITY AS u(n, k, s, o)
        JOIN ${table} t ON t.name = u.n AND t.key = u.k AND t.shard = u.s FOR UPDATE OF t LOOP
      stored_value[ref] := row_value; -- (the column is NOT NULL: NULL means no row)
      stored_ts[ref] := row_ts;
    END LOOP;

    WHILE call_at <= calls LOOP
      call_items := p_calls[call_at];
      call_all := p_calls[call_at + 1] <> 0;
      call_refs := p_calls[call_at + 2];
      -- What the call reads: each ref's state after the calls before it (stored_* holds it).
      answer := 'ok';
      corrupt := false;
      ${eachRef(`answer := answer || ' ' || coalesce(stored_value[call_ref]::text, '-') || ' ' || coalesce(stored_ts[call_ref]::text, '-');
          IF stored_value[call_ref] IS NOT NULL AND NOT (${h.finite("stored_value[call_ref]")} AND ${h.finite("stored_ts[call_ref]")}) THEN corrupt := true; END IF;`)}
      answer := answer || ' ';
      pending_value := '{}';
      pending_ts := '{}';
      pending_full_at := '{}';
      wrote := '{}';
      all_ok := true;
      any_write := false;
      failed := false;
      IF NOT corrupt THEN
${itemLoop("first_item", "first_item + call_items - 1", "call_all")}
        -- All or nothing: writes only when every item is granted and one writes.
        IF call_all AND (failed OR NOT all_ok OR NOT any_write) THEN
          pending_value := '{}';
          wrote := '{}';
        END IF;
        -- What the call wrote is what the next ones read.
        ${eachRef(`CONTINUE WHEN pending_value[call_ref] IS NULL;
          stored_value[call_ref] := pending_value[call_ref];
          stored_ts[call_ref] := pending_ts[call_ref];
          dirty_full_at[call_ref] := pending_full_at[call_ref];
          dirty[call_ref] := true;`)}
      END IF;
      FOR item IN first_item + 1 .. first_item + call_items LOOP
        answer := answer || CASE WHEN wrote[item] THEN '1' ELSE '0' END;
      END LOOP;
      answers := answers || answer;
      first_item := first_item + call_items;
      call_at := call_at + 3 + call_refs;
    END LOOP;

    -- Every row the calls wrote, in ONE statement (each ref once: its last writer's state).
    INSERT INTO ${table} (name, key, shard, value, ts, full_at)
      SELECT p_names[r], p_keys[r], p_shards[r], stored_value[r], stored_ts[r], dirty_full_at[r]
      FROM generate_subscripts(p_names, 1) AS r WHERE dirty[r]
      ON CONFLICT (name, key, shard) DO UPDATE SET value = excluded.value, ts = excluded.ts, full_at = excluded.full_at;
    RETURN array_to_string(answers, E'\\n');
  EXCEPTION WHEN others OR query_canceled THEN
    -- Everything the statement did is rolled back (the block is a subtransaction); every call fails.
    RETURN 'error ' || SQLSTATE || ' ' || SQLERRM;
  END;
END
$fn$`;
}
