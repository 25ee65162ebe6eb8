/**
 * ratebound/postgres's one-item decision function, `<table>_decide_one_v3`: the common call (one
 * state of a limit with one shard) with less work than the batch function of `postgres-decide.ts`.
 * @module
 */
import { PINNED } from "./postgres-decide.js";

/**
 * Below this magnitude (and above its inverse), or zero, every number the one-item decision reads
 * keeps every sum, product and quotient it computes between 1e-200 and 1e80 or zero: PostgreSQL's
 * operators then raise no error and give IEEE's results, so the decision needs none of the
 * helpers. A number outside goes to the general function.
 */
export const PLAIN_RANGE = 1e20;

/**
 * The one-item decision: `<table>_decide_one_v3`, the same decision as the batch function's (`decideSql` in `postgres-decide.ts`) for a
 * batch of one call on one state (a limit with one shard), with less work: scalar arguments, no
 * arrays, the arithmetic inline in plain operators (every number it reads is zero or between
 * 1e-20 and 1e20 in magnitude, see {@link PLAIN_RANGE}, so no operation can overflow, underflow
 * or meet a NaN or an infinity), the wait never computed (a refusal writes nothing, and a wait
 * within those numbers is finite, so it never decides whether a grant is written). It locks and
 * reads exactly as the batch function does (the state's advisory lock, then its row
 * `FOR UPDATE`), in an exception block of its own. A stored state or argument
 * outside the range goes to the batch function, in the same statement (the locks already held are
 * its own; when it fails, its error is raised again so that the block rolls them back too).
 *
 * `<table>_decide_one_v3(p_name text, p_key text, p_shard integer, p_lock text, p_kind, p_rate,
 * p_period, p_capacity, p_max_reserved (NULL: unlimited), p_start (NULL: none), p_count,
 * p_reserve (0/1), p_write (0/1), p_now, p_fresh_value, p_fresh_ts float8) → text`: `one`, then
 * the value and ts the row held as the 16 hex digits of `float8send` (`- -`: no row), then `1`
 * when the grant was written, else `0`; or the batch function's answer (`ok …` or `error …`).
 */
export function decideOneSql(table: string, decide: string, decideOne: string): string {
  const inRange = (x: string) => `(${x} = 0 OR abs(${x}) BETWEEN '${1 / PLAIN_RANGE}'::float8 AND '${PLAIN_RANGE}'::float8)`;
  // JavaScript's Math.min(x, capacity) on numbers that are not NaN: -0 is less than 0.
  const jsMin = (x: string) => `CASE WHEN ${x} < p_capacity THEN ${x} WHEN p_capacity < ${x} THEN p_capacity WHEN ${x} = 0 AND ${x}::text = '-0' THEN ${x} ELSE p_capacity END`;
  // Whether the state (v, t) holds capacity at \`instant\` (advance with count 0; js_min(a, c) >= c exactly when a >= c).
  const filled = (instant: string) => `(CASE WHEN p_kind = 0 THEN v + (CASE WHEN ${instant} - t > 0 THEN ${instant} - t ELSE 0 END) * (p_rate / p_period)
          ELSE v + p_rate * (CASE WHEN floor((${instant} - t) / p_period) > 0 THEN floor((${instant} - t) / p_period) ELSE 0 END) END) >= p_capacity`;
  const where = `name = p_name AND key = p_key AND shard = p_shard`;
  return `CREATE OR REPLACE FUNCTION ${decideOne}(p_name text, p_key text, p_shard integer, p_lock text,
  p_kind float8, p_rate float8, p_period float8, p_capacity float8, p_max_reserved float8, p_start float8,
  p_count float8, p_reserve float8, p_write float8, p_now float8, p_fresh_value float8, p_fresh_ts float8) RETURNS text
LANGUAGE plpgsql VOLATILE ${PINNED} AS $fn$
DECLARE
  row_value float8;
  row_ts float8;
  found_row boolean;
  s_value float8; -- the state decided on: the row's, else the fresh one
  s_ts float8;
  x float8;
  t float8;
  v float8;
  granted boolean;
  written boolean := false;
  full_at_ms float8;
  candidate float8;
  answer text;
BEGIN
  BEGIN
    -- As the batch function: the state's one lock, then its row.
    PERFORM pg_advisory_xact_lock(hashtextextended(p_lock, 0));
    SELECT value, ts INTO row_value, row_ts FROM ${table} WHERE ${where} FOR UPDATE;
    found_row := FOUND;
    IF found_row THEN s_value := row_value; s_ts := row_ts; ELSE s_value := p_fresh_value; s_ts := p_fresh_ts; END IF;
    IF NOT (p_kind IN (0, 1) AND p_rate <> 0 AND p_period <> 0 AND ${inRange("p_rate")} AND ${inRange("p_period")} AND ${inRange("p_capacity")}
        AND ${inRange("p_count")} AND (p_max_reserved IS NULL OR ${inRange("p_max_reserved")}) AND ${inRange("p_now")}
        AND ${inRange("s_value")} AND ${inRange("s_ts")}) THEN
      -- Anything else: the batch function (a batch of one), in this statement.
      answer := ${decide}(ARRAY[p_name], ARRAY[p_key], ARRAY[p_shard], ARRAY[p_lock],
        ARRAY[p_kind, p_rate, p_period, p_capacity, p_max_reserved, 1, p_start, p_count, p_reserve, p_write, p_now, 1, 0,
          p_fresh_value, p_fresh_ts, NULL, NULL, NULL, NULL, NULL]::float8[], true);
      IF answer LIKE 'error %' THEN
        -- Raised again, so that this block rolls back the locks it took too.
        RAISE EXCEPTION USING ERRCODE = split_part(answer, ' ', 2), MESSAGE = substr(answer, 8 + length(split_part(answer, ' ', 2)));
      END IF;
      RETURN answer;
    END IF;
    -- src/token_bucket.rs and src/fixed_window.rs advance, then src/decision.rs decide_as_reference.
    IF p_kind = 0 THEN
      x := p_now - s_ts;
      x := s_value + (CASE WHEN x > 0 THEN x ELSE 0 END) * (p_rate / p_period);
      t := CASE WHEN s_ts > p_now THEN s_ts ELSE p_now END;
    ELSE
      v := floor((p_now - s_ts) / p_period);
      IF NOT v > 0 THEN v := 0; END IF;
      x := s_value + p_rate * v;
      t := s_ts + v * p_period;
    END IF;
    x := ${jsMin("x")};
    v := x - p_count;
    granted := NOT (v < 0 AND (p_reserve = 0 OR (p_max_reserved IS NOT NULL AND p_count > x + p_max_reserved)));
    IF granted AND p_write <> 0 THEN
      -- src/transition.rs full_at (one shard): never certain for a fixed window with a random start.
      IF p_kind = 1 AND p_start IS NULL THEN
        full_at_ms := 'Infinity';
      ELSE
        candidate := CASE WHEN v >= p_capacity THEN t WHEN p_kind = 0 THEN t + (p_capacity - v) / (p_rate / p_period)
          ELSE t + ceil((p_capacity - v) / p_rate) * p_period END;
        full_at_ms := CASE WHEN ${filled("candidate")} THEN candidate
          WHEN ${filled("(ceil(candidate) + 1)")} THEN ceil(candidate) + 1 ELSE 'Infinity' END;
      END IF;
      IF found_row THEN
        UPDATE ${table} SET value = v, ts = t, full_at = full_at_ms WHERE ${where};
      ELSE
        INSERT INTO ${table} (name, key, shard, value, ts, full_at) VALUES (p_name, p_key, p_shard, v, t, full_at_ms)
          ON CONFLICT (name, key, shard) DO UPDATE SET value = excluded.value, ts = excluded.ts, full_at = excluded.full_at;
      END IF;
      written := true;
    END IF;
    RETURN 'one ' || CASE WHEN found_row THEN encode(float8send(row_value), 'hex') || ' ' || encode(float8send(row_ts), 'hex') ELSE '- -' END
      || CASE WHEN written THEN ' 1' ELSE ' 0' END;
  EXCEPTION WHEN others OR query_canceled THEN
    RETURN 'error ' || SQLSTATE || ' ' || SQLERRM;
  END;
END
$fn$`;
}

