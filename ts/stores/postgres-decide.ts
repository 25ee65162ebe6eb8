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
 * **Arithmetic.** `double precision` is IEEE 754, but PostgreSQL's `+ - * /`
 * raise errors where IEEE gives `±Infinity` (overflow) or `±0` (underflow,
 * division by zero), and it orders NaN above every number and equal to
 * itself. The core relies on IEEE results (a debt past -1.8e308 must become
 * -Infinity to be refused as unstorable), so every operation goes through
 * `ratebound_v2_add`, `_mul`, `_div` (`_sub` is `_add` of the negation): the
 * plain operator where its operands cannot overflow or underflow (nearly
 * always), else `ratebound_v2_edge`, which computes the IEEE result (see its
 * comments for why each case is exact). Comparisons are written so that NaN
 * compares as in IEEE wherever a NaN can reach them. `floor`, `ceil`,
 * negation and `-0` are IEEE in PostgreSQL already; `nextafter` is built
 * (`ratebound_v2_next_up`) and checked against JavaScript's bits in the test.
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
 * **Security.** The two decision functions run with {@link PINNED}'s
 * `search_path` (`pg_catalog, pg_temp`), and so do the helpers they call;
 * every function names the table and the helpers with their schema, so no
 * function, operator or type another role creates in a schema on the caller's
 * search path is ever called. The store calls the two entry points by their
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

/**
 * The version in the functions' names: a driver never calls a function of another version.
 * Version 2: every function's `search_path` pinned, its table and helpers named with their schema,
 * and a state's advisory lock taken before its row (see the module's "Locks").
 */
export const DECIDE_VERSION = 2;

/**
 * The `search_path` the two decision functions run with, whatever the caller's: PostgreSQL's own
 * first, then nothing another role can create in (`pg_temp` last, so no temporary function or
 * operator is ever found). The table and the helpers are named with their schema. The helpers
 * (`ratebound_v2_*`) carry no setting and run under the path of the decision function calling
 * them, the only caller that matters (a role calling a helper itself gets its own arithmetic):
 * the SQL-language ones (`_add`, `_mul`, `_div`, `_min`, `_max`) so that PostgreSQL inlines them,
 * the PL/pgSQL ones because a `SET` on a function costs a setting change on every call, and they
 * are called many times a decision (with it, the differential's 100,000 batch decisions took 54 s
 * against 38 s without, on the same machine).
 */
export const PINNED = "SET search_path = pg_catalog, pg_temp";

/** An identifier, quoted for SQL (`"app"`; a `"` inside doubled). */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/**
 * The names a table's statements use, every one with its schema: the schema as a prefix
 * (`"app".`), the table (`"app"."limits"`), and the two decision functions
 * (`"app"."limits_decide_v2"`, `"app"."limits_decide_one_v2"`), which live beside the table.
 *
 * @param schema The schema that holds the table, unquoted.
 * @param table The table's name, unquoted.
 * @returns The quoted names.
 */
export function decideFunctionName(schema: string, table: string): { schema: string; table: string; decide: string; decideOne: string } {
  const prefix = `${quoteIdentifier(schema)}.`;
  return {
    schema: prefix,
    table: `${prefix}${quoteIdentifier(table)}`,
    decide: `${prefix}${quoteIdentifier(`${table}_decide_v${DECIDE_VERSION}`)}`,
    decideOne: `${prefix}${quoteIdentifier(`${table}_decide_one_v${DECIDE_VERSION}`)}`,
  };
}

/** Numbers per item in the function's `p_items` (see {@link decideFunctionSql}). */
export const ITEM_STRIDE = 17;

/** A power of two as SQL `float8` (JavaScript's shortest form reads back exactly). */
const pow2 = (exponent: number): string => `'${String(2 ** exponent)}'::float8`;

/**
 * The SQL of the helpers and the decision function of one table: `CREATE OR
 * REPLACE FUNCTION` statements, in order.
 *
 * `<table>_decide_v2(p_names text[], p_keys text[], p_shards integer[],
 * p_locks text[], p_items float8[], p_all boolean) → text`:
 *
 * - Refs `1..R`: the `name`, `key` and `shard` columns of each state the
 *   batch reads, and the text of its advisory lock (hashed with
 *   `hashtextextended(…, 0)`).
 * - `p_items`: 17 numbers per item, in order: kind (0 token bucket, 1 fixed
 *   window), rate, period, capacity, maxReserved (NULL: unlimited; 0: no
 *   reservation at all), shards, start (NULL: none), count, reserve (0/1),
 *   write (0/1), now, the first read (a ref, 1-based), the second read (0:
 *   none), and the value and ts each read starts from when it has no state.
 *   Rate, capacity and maxReserved are the shard's; shards is the limit's count.
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
 * @param decide The decision function's quoted name (`"app"."limits_decide_v2"`).
 * @returns The statements.
 */
export function decideFunctionSql(schema: string, table: string, decide: string, decideOne: string): string[] {
  const fn = (name: string) => `${schema}"ratebound_v${DECIDE_VERSION}_${name}"`;
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
  return [
    // IEEE 754's result of a + b, a * b or a / b where PostgreSQL's operator would raise
    // an error instead (or where an operand is NaN or infinite).
    `CREATE OR REPLACE FUNCTION ${edge}(op "char", a float8, b float8) RETURNS float8
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $fn$
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
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $fn$
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
    `CREATE OR REPLACE FUNCTION ${advance}(kind float8, rate float8, period float8, capacity float8,
  value float8, ts float8, now float8, count float8) RETURNS float8[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $fn$
DECLARE
  refill float8;
  since float8;
  windows float8;
  x float8; -- intermediate results: one operation per statement keeps each inlined expression small
  next_value float8;
  next_ts float8;
  retry float8;
  stepped_back boolean := ts > now AND ts <> 'NaN' AND now <> 'NaN';
BEGIN
  IF kind = 0 THEN
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
  reserve boolean, value float8, ts float8, now float8, count float8, honest boolean) RETURNS float8[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $fn$
DECLARE
  next float8[] := ${advance}(kind, rate, period, capacity, value, ts, now, count);
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
      x := (${advance}(kind, rate, period, capacity, value, ts, now, 0))[1];
      refused := count > ${add("x", "max_reserved")};
    END IF;
  END IF;
  unstorable := NOT (${finite("next[1]")} AND ${finite("next[2]")});
  IF unstorable AND (wait IS NULL OR wait = 'NaN') THEN wait := 'Infinity'; END IF;
  -- decide: a wait is made honest when the next call could be granted at all.
  IF honest AND wait IS NOT NULL AND (NOT (refused OR unstorable) OR CASE WHEN NOT reserve THEN count <= capacity
      WHEN max_reserved IS NOT NULL THEN count <= ${add("capacity", "max_reserved")} ELSE true END) THEN
    FOR attempt IN 1..8 LOOP
      then_ms := ${add("now", "wait")};
      -- What the next call computes then, with no traffic in between.
      IF NOT (refused OR unstorable) THEN
        short_by := -((${advance}(kind, rate, period, capacity, next[1], next[2], then_ms, 0))[1]);
      ELSIF reserve AND max_reserved IS NOT NULL THEN
        x := (${advance}(kind, rate, period, capacity, value, ts, then_ms, 0))[1];
        x := ${add("x", "max_reserved")};
        short_by := -(${sub("x", "count")});
      ELSE
        short_by := -((${advance}(kind, rate, period, capacity, value, ts, then_ms, count))[1]);
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
  has_start boolean, value float8, ts float8) RETURNS float8
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $fn$
DECLARE
  candidate float8;
  instant float8;
  x float8;
BEGIN
  IF shards >= 3 OR (kind = 1 AND NOT has_start) THEN RETURN 'Infinity'; END IF;
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
    IF ${finite("instant")} AND (${advance}(kind, rate, period, capacity, value, ts, instant, 0))[1] >= capacity THEN
      RETURN instant;
    END IF;
  END LOOP;
  RETURN 'Infinity';
END
$fn$`,
    decideSql(table, decide, { add, sub, div, max, shard, fullAt, finite }),
    decideOneSql(table, decide, decideOne),
  ];
}

/**
 * Below this magnitude (and above its inverse), or zero, every number the one-item decision reads
 * keeps every sum, product and quotient it computes between 1e-200 and 1e80 or zero: PostgreSQL's
 * operators then raise no error and give IEEE's results, so the decision needs none of the
 * helpers. A number outside goes to the general function.
 */
export const PLAIN_RANGE = 1e20;

/**
 * The one-item decision: `<table>_decide_one_v2`, the same decision as {@link decideSql}'s for a
 * batch of one call on one state (a limit with one shard), with less work: scalar arguments, no
 * arrays, the arithmetic inline in plain operators (every number it reads is zero or between
 * 1e-20 and 1e20 in magnitude, see {@link PLAIN_RANGE}, so no operation can overflow, underflow
 * or meet a NaN or an infinity), the wait never computed (a refusal writes nothing, and a wait
 * within those numbers is finite, so it never decides whether a grant is written). It locks and
 * reads exactly as the batch function does (the row `FOR UPDATE`; a missing one through the
 * advisory lock, then read again), in an exception block of its own. A stored state or argument
 * outside the range goes to the batch function, in the same statement (the locks already held are
 * its own; when it fails, its error is raised again so that the block rolls them back too).
 *
 * `<table>_decide_one_v2(p_name text, p_key text, p_shard integer, p_lock text, p_kind, p_rate,
 * p_period, p_capacity, p_max_reserved (NULL: unlimited), p_start (NULL: none), p_count,
 * p_reserve (0/1), p_write (0/1), p_now, p_fresh_value, p_fresh_ts float8) → text`: `one`, then
 * the value and ts the row held as the 16 hex digits of `float8send` (`- -`: no row), then `1`
 * when the grant was written, else `0`; or the batch function's answer (`ok …` or `error …`).
 */
function decideOneSql(table: string, decide: string, decideOne: string): string {
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
          p_fresh_value, p_fresh_ts, NULL, NULL]::float8[], true);
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

/** The helpers' names and the SQL builders the decision function is written with. */
interface Helpers {
  add: (a: string, b: string) => string;
  sub: (a: string, b: string) => string;
  div: (a: string, b: string) => string;
  max: string;
  shard: string;
  fullAt: string;
  finite: (x: string) => string;
}

/** src/batch.rs decide_batch and src/limiter.rs decide_planned, with the locks, reads and writes. */
function decideSql(table: string, decide: string, h: Helpers): string {
  const call = (state: string, count: string, honest: boolean) =>
    `${h.shard}(kind, rate, period, capacity, max_reserved, reserve, ${state}[1], ${state}[2], now, ${count}, ${honest})`;
  // The state a read starts from: what this batch wrote there, else what it held, else its fresh state.
  const current = (ref: string, fresh: number) => `CASE WHEN pending_value[${ref}] IS NOT NULL THEN ARRAY[pending_value[${ref}], pending_ts[${ref}]]
          WHEN stored_value[${ref}] IS NOT NULL THEN ARRAY[stored_value[${ref}], stored_ts[${ref}]]
          ELSE ARRAY[p_items[at + ${fresh}], p_items[at + ${fresh + 1}]] END`;
  // What writing `state` (a decision: value at [3], ts at [4]) to `ref` leaves pending; full_at is
  // Infinity without a look at the state for 3+ shards and a fixed window with a random start.
  const pend = (ref: string, state: string) => `pending_value[${ref}] := ${state}[3];
            pending_ts[${ref}] := ${state}[4];
            pending_full_at[${ref}] := CASE WHEN shards >= 3 OR (kind = 1 AND NOT has_start) THEN 'Infinity'::float8
              ELSE ${h.fullAt}(kind, rate, period, capacity, shards, has_start, ${state}[3], ${state}[4]) END;
            wrote[item + 1] := writes;`;
  return `CREATE OR REPLACE FUNCTION ${decide}(p_names text[], p_keys text[], p_shards integer[], p_locks text[],
  p_items float8[], p_all boolean) RETURNS text
LANGUAGE plpgsql VOLATILE ${PINNED} SET extra_float_digits = 3 AS $fn$
DECLARE
  refs integer := coalesce(cardinality(p_names), 0);
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
  count float8; reserve boolean; writes boolean; now float8; first_ref integer; second_ref integer;
  state_first float8[]; state_second float8[]; fresh_first boolean;
  alone_first float8[]; alone_second float8[]; shared_first float8[]; shared_second float8[];
  balance float8; half float8; share float8; result_ok boolean; result_wait float8; write_first float8[]; write_second float8[];
BEGIN
  BEGIN
    -- Lock and read every ref in one global order: name, key (bytewise), shard. (One or two refs,
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
    END IF;
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
    END LOOP;

    IF NOT corrupt THEN
      FOR item IN 0 .. items - 1 LOOP
        at := item * ${ITEM_STRIDE};
        kind := p_items[at + 1]; rate := p_items[at + 2]; period := p_items[at + 3]; capacity := p_items[at + 4];
        max_reserved := p_items[at + 5]; shards := p_items[at + 6]; has_start := p_items[at + 7] IS NOT NULL;
        count := p_items[at + 8]; reserve := p_items[at + 9] <> 0; writes := p_items[at + 10] <> 0; now := p_items[at + 11];
        first_ref := p_items[at + 12]; second_ref := p_items[at + 13];
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
          IF p_all THEN failed := true; EXIT; END IF;
          CONTINUE;
        END IF;
        all_ok := all_ok AND result_ok;
        any_write := any_write OR writes;
        IF writes OR p_all THEN
          IF write_first IS NOT NULL THEN
            ${pend("first_ref", "write_first")}
          END IF;
          IF write_second IS NOT NULL THEN
            ${pend("second_ref", "write_second")}
          END IF;
        END IF;
      END LOOP;

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
