/**
 * The helpers of ratebound/postgres's decision functions (`ratebound_v3_*`, in the table's
 * schema): IEEE 754 arithmetic in SQL, and the core's transitions on one state
 * (`src/token_bucket.rs`, `src/fixed_window.rs` advance, `src/decision.rs` decide, `src/transition.rs`
 * full_at), which `postgres-decide.ts`'s batch function is written with.
 *
 * **Arithmetic.** `double precision` is IEEE 754, but PostgreSQL's `+ - * /`
 * raise errors where IEEE gives `±Infinity` (overflow) or `±0` (underflow,
 * division by zero), and it orders NaN above every number and equal to
 * itself. The core relies on IEEE results (a debt past -1.8e308 must become
 * -Infinity to be refused as unstorable), so every operation goes through
 * `ratebound_v3_add`, `_mul`, `_div` (`_sub` is `_add` of the negation): the
 * plain operator where its operands cannot overflow or underflow (nearly
 * always), else `ratebound_v3_edge`, which computes the IEEE result (see its
 * comments for why each case is exact). Comparisons are written so that NaN
 * compares as in IEEE wherever a NaN can reach them. `floor`, `ceil`,
 * negation and `-0` are IEEE in PostgreSQL already; `nextafter` is built
 * (`ratebound_v3_next_up`) and checked against JavaScript's bits in the test.
 * @module
 */

import { PINNED } from "./postgres-decide.js";

/** A power of two as SQL `float8` (JavaScript's shortest form reads back exactly). */
const pow2 = (exponent: number): string => `'${String(2 ** exponent)}'::float8`;

/** The helpers' names and the SQL builders the decision function is written with. */
export interface Helpers {
  add: (a: string, b: string) => string;
  sub: (a: string, b: string) => string;
  div: (a: string, b: string) => string;
  max: string;
  shard: string;
  fullAt: string;
  finite: (x: string) => string;
}

/**
 * The helpers' `CREATE OR REPLACE FUNCTION` statements, in order, and the SQL builders the batch
 * function calls them with. The PL/pgSQL ones pin their `search_path` (`PINNED` in
 * `postgres-decide.ts`); the SQL-language ones carry no setting, so that PostgreSQL inlines them
 * into their callers, whose path is pinned.
 *
 * @param fn A helper's quoted name with its schema, from its short name (`"add"` → `"app"."ratebound_v3_add"`).
 * @returns The statements and the builders.
 */
export function helperFunctionsSql(fn: (name: string) => string): { statements: string[]; helpers: Helpers } {
  const [addName, mulName, divName, edge, min, max, nextUp] = [fn("add"), fn("mul"), fn("div"), fn("edge"), fn("min"), fn("max"), fn("next_up")];
  const [advance, shard, fullAt] = [fn("advance"), fn("decide"), fn("full_at")];
  // SQL expressions of IEEE a + b, a - b, a * b and a / b.
  const add = (a: string, b: string) => `${addName}(${a}, ${b})`;
  const sub = (a: string, b: string) => `${addName}(${a}, -(${b}))`;
  const mul = (a: string, b: string) => `${mulName}(${a}, ${b})`;
  const div = (a: string, b: string) => `${divName}(${a}, ${b})`;
  const huge = pow2(1023); // below it, a sum cannot overflow
  const [low, high] = [pow2(-511), pow2(511)]; // between them, a product or quotient can neither overflow nor underflow
  // x - x is 0 for every finite x and NaN for NaN and the infinities (and never raises).
  const finite = (x: string) => `(${x} - ${x} = 0)`;
  const pure = "LANGUAGE sql IMMUTABLE PARALLEL SAFE";
  const statements = [
    // IEEE 754's result of a + b, a * b or a / b where PostgreSQL's operator would raise
    // an error instead (or where an operand is NaN or infinite).
    `CREATE OR REPLACE FUNCTION ${edge}(op "char", a float8, b float8) RETURNS float8
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE ${PINNED} AS $fn$
DECLARE
  negative boolean; -- the sign of a product or quotient: the signs of a and b differ (-0 included)
  half float8;
BEGIN
  IF a = 'NaN' OR b = 'NaN' THEN RETURN 'NaN'; END IF; -- (PostgreSQL: NaN = NaN)
  negative := (get_byte(float8send(a), 0) >= 128) <> (get_byte(float8send(b), 0) >= 128);
  IF op = '+' THEN
    -- An infinite operand cannot raise (Infinity + -Infinity is NaN); a tiny one cannot
    -- carry the other past the largest number.
    IF NOT ${finite("a")} OR NOT ${finite("b")} OR abs(a) < ${pow2(-1000)} OR abs(b) < ${pow2(-1000)} THEN RETURN a + b; END IF;
    -- Halving both is exact here, and rounding commutes with scaling by 2: a + b overflows
    -- exactly when a/2 + b/2 rounds to 2^1023 or more.
    half := a * 0.5 + b * 0.5;
    IF abs(half) >= ${huge} THEN RETURN CASE WHEN half > 0 THEN 'Infinity'::float8 ELSE '-Infinity'::float8 END; END IF;
    RETURN a + b;
  ELSIF op = '*' THEN
    IF a = 0 OR b = 0 OR NOT ${finite("a")} OR NOT ${finite("b")} THEN RETURN a * b; END IF;
    BEGIN
      RETURN a * b;
    EXCEPTION WHEN numeric_value_out_of_range THEN
      -- Raised exactly when IEEE rounds to an infinity (|a b| >= 2^1024) or to a zero
      -- (|a b| <= 2^-1075); the logarithm tells the two apart by a wide margin.
      IF ln(abs(a)) + ln(abs(b)) > 0 THEN RETURN CASE WHEN negative THEN '-Infinity'::float8 ELSE 'Infinity'::float8 END; END IF;
      RETURN CASE WHEN negative THEN '-0'::float8 ELSE '0'::float8 END;
    END;
  ELSE
    IF b = 0 THEN RETURN CASE WHEN a = 0 THEN 'NaN'::float8 WHEN negative THEN '-Infinity'::float8 ELSE 'Infinity'::float8 END; END IF;
    IF a = 0 OR NOT ${finite("a")} OR NOT ${finite("b")} THEN RETURN a / b; END IF;
    BEGIN
      RETURN a / b;
    EXCEPTION WHEN numeric_value_out_of_range THEN
      IF ln(abs(a)) - ln(abs(b)) > 0 THEN RETURN CASE WHEN negative THEN '-Infinity'::float8 ELSE 'Infinity'::float8 END; END IF;
      RETURN CASE WHEN negative THEN '-0'::float8 ELSE '0'::float8 END;
    END;
  END IF;
END
$fn$`,
    `CREATE OR REPLACE FUNCTION ${addName}(a float8, b float8) RETURNS float8 ${pure} AS
$fn$ SELECT CASE WHEN abs(a) < ${huge} AND abs(b) < ${huge} THEN a + b ELSE ${edge}('+', a, b) END $fn$`,
    `CREATE OR REPLACE FUNCTION ${mulName}(a float8, b float8) RETURNS float8 ${pure} AS
$fn$ SELECT CASE WHEN (abs(a) BETWEEN ${low} AND ${high} AND abs(b) BETWEEN ${low} AND ${high}) OR a = 0 OR b = 0 THEN a * b ELSE ${edge}('*', a, b) END $fn$`,
    `CREATE OR REPLACE FUNCTION ${divName}(a float8, b float8) RETURNS float8 ${pure} AS
$fn$ SELECT CASE WHEN abs(b) BETWEEN ${low} AND ${high} AND (a = 0 OR abs(a) BETWEEN ${low} AND ${high}) THEN a / b ELSE ${edge}('/', a, b) END $fn$`,
    // JavaScript's Math.min of two numbers: NaN wins, -0 is less than 0 (src/js_math.rs).
    `CREATE OR REPLACE FUNCTION ${min}(a float8, b float8) RETURNS float8 ${pure} AS
$fn$ SELECT CASE WHEN a = 'NaN' OR b = 'NaN' THEN 'NaN'::float8 WHEN a < b THEN a WHEN b < a THEN b
  WHEN a = 0 AND get_byte(float8send(a), 0) >= 128 THEN a ELSE b END $fn$`,
    // Rust's f64::max as the core's WebAssembly computes it: a NaN operand is ignored, and of two
    // equal numbers (-0 and +0 too) the first is returned.
    `CREATE OR REPLACE FUNCTION ${max}(a float8, b float8) RETURNS float8 ${pure} AS
$fn$ SELECT CASE WHEN a = 'NaN' THEN b WHEN b = 'NaN' THEN a WHEN b > a THEN b ELSE a END $fn$`,
    // Rust's f64::next_up: the least number greater than x. For y > 0 normal and at least 2^-969,
    // y * 2^-53 is exact and lies in [ulp/2, ulp): y + y * 2^-53 rounds to y + ulp, except for a
    // power of two (a tie, kept even), where y * 2^-52 is the ulp itself; y - y * 2^-53 rounds to
    // the number below y (for a power of two it is that number, exactly). Below 2^-1021 numbers
    // are 2^-1074 apart; between, scaling by 2^600 is exact both ways.
    `CREATE OR REPLACE FUNCTION ${nextUp}(x float8) RETURNS float8
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE ${PINNED} AS $fn$
DECLARE
  y float8 := abs(x);
  scaled boolean := false;
  step float8;
BEGIN
  IF x = 'NaN' OR x = 'Infinity' THEN RETURN x; END IF;
  IF x = '-Infinity' THEN RETURN '-1.7976931348623157e308'::float8; END IF;
  IF x = 0 THEN RETURN ${pow2(-1074)}; END IF;
  IF x = '1.7976931348623157e308'::float8 THEN RETURN 'Infinity'; END IF;
  -- (the number above -2^-1074 is -0, as in Rust)
  IF y < ${pow2(-1021)} THEN RETURN CASE WHEN x > 0 THEN y + ${pow2(-1074)} ELSE -(y - ${pow2(-1074)}) END; END IF;
  IF y < ${pow2(-900)} THEN y := y * ${pow2(600)}; scaled := true; END IF;
  IF x > 0 THEN
    step := y + y * ${pow2(-53)};
    IF NOT step > y THEN step := y + y * ${pow2(-52)}; END IF;
  ELSE
    step := -(y - y * ${pow2(-53)});
  END IF;
  IF scaled THEN step := step * ${pow2(-600)}; END IF;
  RETURN step;
END
$fn$`,
    // src/token_bucket.rs and src/fixed_window.rs advance: [value, ts, retryAfter (NULL: none)].
    // \`calendar\`: a calendar period's window at now (start, end, longest; NULL: a period in ms),
    // valid at the item's now only (src/fixed_window.rs advance_calendar).
    `CREATE OR REPLACE FUNCTION ${advance}(kind float8, rate float8, period float8, capacity float8,
  value float8, ts float8, now float8, count float8, calendar float8[]) RETURNS float8[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE ${PINNED} AS $fn$
DECLARE
  refill float8;
  since float8;
  windows float8;
  x float8; -- intermediate results: one operation per statement keeps each inlined expression small
  next_value float8;
  next_ts float8;
  retry float8;
  stepped_back boolean := ts > now AND ts <> 'NaN' AND now <> 'NaN';
  later float8;
BEGIN
  IF calendar IS NOT NULL THEN
    -- Windows passed counted in mean lengths (exact on the window grid), at least one once past.
    windows := 0;
    IF ts < calendar[1] THEN
      x := ${sub("calendar[1]", "ts")};
      x := ${div("x", "period")};
      windows := floor(${add("x", "0.5")});
      IF NOT (windows > 1) THEN windows := 1; END IF;
    END IF;
    x := ${mul("rate", "windows")};
    x := ${add("value", "x")};
    x := ${min}(x, capacity);
    next_value := ${sub("x", "count")};
    next_ts := CASE WHEN windows > 0 THEN calendar[1] ELSE ts END;
    IF next_value < 0 THEN
      -- Due at the window's end (ts ahead of the clock: ts plus a longest window), plus a
      -- longest window for every further one needed; src/decision.rs wait_until.
      later := CASE WHEN next_ts = calendar[1] THEN calendar[2] ELSE ${add("next_ts", "calendar[3]")} END;
      x := ceil(${div("-next_value", "rate")});
      x := ${sub("x", "1")};
      x := ${mul("x", "calendar[3]")};
      later := ${add("later", "x")};
      retry := ${sub("later", "now")};
      WHILE ${add("now", "retry")} < later LOOP retry := ${nextUp}(retry); END LOOP;
    END IF;
  ELSIF kind = 0 THEN
    refill := ${div("rate", "period")};
    since := ${sub("now", "ts")};
    IF NOT (since > 0 AND since <> 'NaN') THEN since := 0; END IF;
    x := ${mul("since", "refill")};
    x := ${add("value", "x")};
    x := ${min}(x, capacity);
    next_value := ${sub("x", "count")};
    next_ts := CASE WHEN stepped_back THEN ts ELSE now END;
    IF next_value < 0 THEN
      retry := ${div("-next_value", "refill")};
      IF stepped_back THEN
        x := ${sub("next_ts", "now")};
        retry := ${add("retry", "x")};
      END IF;
    END IF;
  ELSE
    x := ${sub("now", "ts")};
    windows := floor(${div("x", "period")});
    IF NOT (windows > 0 AND windows <> 'NaN') THEN windows := 0; END IF;
    x := ${mul("rate", "windows")};
    x := ${add("value", "x")};
    x := ${min}(x, capacity);
    next_value := ${sub("x", "count")};
    x := ${mul("windows", "period")};
    next_ts := ${add("ts", "x")};
    IF next_value < 0 THEN
      x := ceil(${div("-next_value", "rate")});
      x := ${mul("period", "x")};
      x := ${add("next_ts", "x")};
      retry := ${sub("x", "now")};
    END IF;
  END IF;
  RETURN ARRAY[next_value, next_ts, retry];
END
$fn$`,
    // src/decision.rs: decide_as_reference, and with `honest` decide (its wait made honest by
    // replay): [ok (1/0), retryAfter (NULL: none), value, ts].
    `CREATE OR REPLACE FUNCTION ${shard}(kind float8, rate float8, period float8, capacity float8, max_reserved float8,
  reserve boolean, value float8, ts float8, now float8, count float8, honest boolean, calendar float8[]) RETURNS float8[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE ${PINNED} AS $fn$
DECLARE
  next float8[] := ${advance}(kind, rate, period, capacity, value, ts, now, count, calendar);
  refused boolean := false;
  unstorable boolean;
  wait float8 := next[3];
  x float8;
  then_ms float8;
  short_by float8;
  later float8;
BEGIN
  IF next[1] < 0 AND next[1] <> 'NaN' THEN
    IF NOT reserve THEN
      refused := true;
    ELSIF max_reserved IS NOT NULL THEN
      -- count > available + maxReserved, as IEEE compares (count is never NaN here: next[1] would be).
      x := (${advance}(kind, rate, period, capacity, value, ts, now, 0, calendar))[1];
      refused := count > ${add("x", "max_reserved")};
    END IF;
  END IF;
  unstorable := NOT (${finite("next[1]")} AND ${finite("next[2]")});
  IF unstorable AND (wait IS NULL OR wait = 'NaN') THEN wait := 'Infinity'; END IF;
  -- decide: a wait is made honest when the next call could be granted at all (a calendar
  -- period's is counted in whole windows already, and its window is known at now only).
  IF honest AND calendar IS NULL AND wait IS NOT NULL AND (NOT (refused OR unstorable) OR CASE WHEN NOT reserve THEN count <= capacity
      WHEN max_reserved IS NOT NULL THEN count <= ${add("capacity", "max_reserved")} ELSE true END) THEN
    FOR attempt IN 1..8 LOOP
      then_ms := ${add("now", "wait")};
      -- What the next call computes then, with no traffic in between.
      IF NOT (refused OR unstorable) THEN
        short_by := -((${advance}(kind, rate, period, capacity, next[1], next[2], then_ms, 0, NULL))[1]);
      ELSIF reserve AND max_reserved IS NOT NULL THEN
        x := (${advance}(kind, rate, period, capacity, value, ts, then_ms, 0, NULL))[1];
        x := ${add("x", "max_reserved")};
        short_by := -(${sub("x", "count")});
      ELSE
        short_by := -((${advance}(kind, rate, period, capacity, value, ts, then_ms, count, NULL))[1]);
      END IF;
      IF NOT (short_by > 0 AND short_by <> 'NaN') THEN EXIT; END IF;
      IF kind = 1 THEN
        later := ${add("then_ms", "period")};
      ELSE
        x := ${div("rate", "period")};
        x := ${div("short_by", "x")};
        x := ${add("then_ms", "x")};
        later := ${max}(x, ${nextUp}(then_ms));
      END IF;
      wait := ${sub("later", "now")};
    END LOOP;
  END IF;
  RETURN ARRAY[CASE WHEN refused OR unstorable THEN 0 ELSE 1 END, wait, next[1], next[2]];
END
$fn$`,
    // src/transition.rs full_at and filled_at: from when the state may be dropped (Infinity: never certain).
    `CREATE OR REPLACE FUNCTION ${fullAt}(kind float8, rate float8, period float8, capacity float8, shards float8,
  has_start boolean, value float8, ts float8, calendar float8[]) RETURNS float8
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE ${PINNED} AS $fn$
DECLARE
  candidate float8;
  instant float8;
  x float8;
BEGIN
  IF shards >= 3 OR (kind = 1 AND NOT has_start) THEN RETURN 'Infinity'; END IF;
  IF calendar IS NOT NULL THEN
    -- src/fixed_window.rs calendar_filled_at: n longest windows for a shortfall of n windows.
    IF value >= capacity THEN RETURN ts; END IF;
    x := ${sub("capacity", "value")};
    x := ceil(${div("x", "rate")});
    FOREACH candidate IN ARRAY ARRAY[x, ${add("x", "1")}] LOOP
      instant := ${mul("candidate", "calendar[3]")};
      instant := ${add("ts", "instant")};
      IF ${finite("instant")} AND ${add("value", mul("rate", "candidate"))} >= capacity THEN RETURN instant; END IF;
    END LOOP;
    RETURN 'Infinity';
  END IF;
  IF value >= capacity THEN
    candidate := ts;
  ELSIF kind = 0 THEN
    x := ${sub("capacity", "value")};
    candidate := ${div("rate", "period")};
    candidate := ${div("x", "candidate")};
    candidate := ${add("ts", "candidate")};
  ELSE
    x := ${sub("capacity", "value")};
    x := ceil(${div("x", "rate")});
    x := ${mul("x", "period")};
    candidate := ${add("ts", "x")};
  END IF;
  x := ceil(candidate);
  FOREACH instant IN ARRAY ARRAY[candidate, ${add("x", "1")}] LOOP
    IF ${finite("instant")} AND (${advance}(kind, rate, period, capacity, value, ts, instant, 0, NULL))[1] >= capacity THEN
      RETURN instant;
    END IF;
  END LOOP;
  RETURN 'Infinity';
END
$fn$`,
  ];
  return { statements, helpers: { add, sub, div, max, shard, fullAt, finite } };
}
