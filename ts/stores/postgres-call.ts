/**
 * ratebound/postgres's decision statement on the wire: the parameters it sends the functions
 * `createTable` installs, and the answer they return, read back exactly.
 * @module
 */
import type { RateLimitState, RemoteAnswer, RemoteBatch, RemoteItem } from "ratebound";
import { SqlStoreError } from "./shared/sql.js";
import { advisoryLockText } from "./postgres-attempt.js";
import { decideFunctionName } from "./postgres-decide.js";

/** The names and statement texts of a table's decision, every name with its schema. */
export interface DecideStatements {
  /** The table, `"schema"."name"`. */
  table: string;
  /** The batch function, `"schema"."name_decide_v3"`. */
  decide: string;
  /** The one-item function, `"schema"."name_decide_one_v3"`. */
  decideOne: string;
  /** The many-calls function, `"schema"."name_decide_many_v3"`. */
  decideMany: string;
  /** The batch function of stored limits, `"schema"."name_decide_limits_v3"`. */
  decideLimits: string;
  /** The statement calling the batch function with {@link batchParams}. */
  decideText: string;
  /** The statement calling the one-item function with {@link oneParams}. */
  decideOneText: string;
  /** The statement calling the many-calls function with {@link manyParams}. */
  decideManyText: string;
  /** The statement calling the batch function of stored limits with {@link batchParams} and {@link expectParam}. */
  decideLimitsText: string;
}

/**
 * The decision statements of the table `name` in `schema`. Each calls its function by its schema
 * and casts every parameter to the type the function declares, written with `pg_catalog.`: no
 * function of that name in another schema, no overload taking other types (an unknown-typed
 * parameter would let one win) and no type of that name ahead of `pg_catalog` can stand in.
 * Every parameter is text on the wire: drivers that serialize by the server's type, as postgres.js
 * and PGlite do, would turn the string "true" into false, so the batch function's arrays and
 * boolean are cast from text in SQL; the one-item function takes text, integer and float8 only,
 * which every driver sends as the string of digits it is given.
 *
 * @param schema The schema holding the table, unquoted.
 * @param name The table's name, unquoted.
 * @returns The names and statements.
 */
export function decideStatements(schema: string, name: string): DecideStatements {
  const { table, decide, decideOne, decideMany, decideLimits } = decideFunctionName(schema, name);
  const [text, int4, float8, bool] = ["pg_catalog.text", "pg_catalog.int4", "pg_catalog.float8", "pg_catalog.bool"];
  const cast = (types: string[]) => types.map((type, index) => `$${index + 1}::${text}::${type}`).join(", ");
  const arrays = [`${text}[]`, `${text}[]`, `${int4}[]`, `${text}[]`, `${float8}[]`];
  const scalars = [text, text, int4, text, ...Array.from({ length: 12 }, () => float8)].map((type, index) => `$${index + 1}::${type}`);
  return {
    table,
    decide,
    decideOne,
    decideMany,
    decideLimits,
    decideText: `SELECT ${decide}(${cast([...arrays, bool])}) AS answer`,
    decideLimitsText: `SELECT ${decideLimits}(${cast([...arrays, bool, `${float8}[]`])}) AS answer`,
    decideManyText: `SELECT ${decideMany}(${cast([...arrays, `${int4}[]`])}) AS answer`,
    decideOneText: `SELECT ${decideOne}(${scalars.join(", ")}) AS answer`,
  };
}

/** The store's error for an answer that is not what the function returns. */
export function badRow(what: string): SqlStoreError {
  return new SqlStoreError("SQL_BAD_ROW", `ratebound/postgres: ${what}; nothing was written`);
}

/** An error the decision function caught and returned, with its SQLSTATE as the code. */
export function functionError(code: string, message: unknown): Error {
  return Object.assign(new Error(`ratebound/postgres: ${String(message)}; nothing was written`), { name: "PostgresError", code });
}

/** The function's one text answer, read by `parse`; an `error …` answer rejects with its SQLSTATE. */
export function answerOf<T>(rows: unknown[], parse: (answer: string) => T): T {
  const answer = (rows[0] as { answer?: unknown } | undefined)?.answer;
  if (typeof answer !== "string") throw badRow("the decision function answered with no text");
  if (!answer.startsWith("error ")) return parse(answer);
  const [, code = "", ...words] = answer.split(" ");
  throw functionError(code, words.join(" "));
}

/**
 * The batch's one item when the one-item function decides it: one call (`limit` or `check`, or a
 * `limitAll` of one) on one state of a limit with one shard.
 */
export function oneItem(batch: RemoteBatch): RemoteItem | undefined {
  if (batch.items.length !== 1 || batch.refs.length !== 1) return undefined;
  const item = batch.items[0]!;
  if (item.shards !== 1 || item.reads.length !== 1 || item.reads[0] !== 0 || item.fresh.length !== 1 || (item.kind !== 0 && item.kind !== 1) || item.window) return undefined;
  return item;
}

/** A `float8send` as 16 hex digits (big-endian), read back exactly. */
function float8Hex(hex: string | undefined): number {
  if (hex === undefined || !/^[0-9a-f]{16}$/.test(hex)) return Number.NaN;
  const view = new DataView(new ArrayBuffer(8));
  view.setUint32(0, parseInt(hex.slice(0, 8), 16));
  view.setUint32(4, parseInt(hex.slice(8), 16));
  return view.getFloat64(0);
}

/**
 * A function's answer: the batch function's `ok`, per ref the value and ts it held (`- -`: no
 * row), and a digit per item, `1` when written; or the one-item function's `one`, the value and
 * ts as 16 hex digits each, and its digit.
 */
export function parseAnswer(answer: string, batch: RemoteBatch): RemoteAnswer {
  if (answer.startsWith("one ")) {
    const [, value, ts, digit, extra] = answer.split(" ");
    const stored = value === "-" && ts === "-" ? null : { value: float8Hex(value), ts: float8Hex(ts) };
    if ((digit !== "0" && digit !== "1") || extra !== undefined || batch.refs.length !== 1 || batch.items.length !== 1 || (stored !== null && (Number.isNaN(stored.value) || Number.isNaN(stored.ts)))) {
      throw badRow("the decision function answered for another batch");
    }
    return { stored: [stored], wrote: [digit === "1"] };
  }
  const words = answer.split(" ");
  const refs = batch.refs.length;
  const digits = words[1 + 2 * refs] ?? "";
  if (words[0] !== "ok" || words.length !== 2 + 2 * refs || digits.length !== batch.items.length) {
    throw badRow("the decision function answered for another batch");
  }
  const stored: unknown[] = [];
  for (let ref = 0; ref < refs; ref++) {
    const [value, ts] = [words[1 + 2 * ref], words[2 + 2 * ref]];
    // float8 text (shortest exact, NaN and ±Infinity spelled out) reads back exactly through Number().
    stored.push(value === "-" ? null : { value: Number(value), ts: Number(ts) });
  }
  return { stored, wrote: Array.from(digits, (digit) => digit === "1") };
}

/** A number as `float8in` reads it back exactly: JavaScript's shortest form, `-0` kept. */
export function numberText(number: number | null): string {
  if (number === null) return "NULL";
  return Object.is(number, -0) ? "-0" : String(number);
}

/** A PostgreSQL array literal of strings (`NULL` for null), for a `$n::text[]` parameter. */
export function textArray(values: readonly (string | null)[]): string {
  return `{${values.map((value) => (value === null ? "NULL" : `"${value.replace(/[\\"]/g, "\\$&")}"`)).join(",")}}`;
}

/** The one-item function's parameters for `item`, the batch's one call on its one state. */
export function oneParams(item: RemoteItem, columns: [string, string, number], lock: string): (string | null)[] {
  const [fresh] = item.fresh as [RateLimitState];
  const [name, key, shard] = columns;
  return [name, key, String(shard), lock, String(item.kind), numberText(item.rate), numberText(item.period),
    numberText(item.capacity), item.maxReserved === null ? null : numberText(item.maxReserved), item.start === null ? null : numberText(item.start),
    numberText(item.count), item.reserve ? "1" : "0", item.write ? "1" : "0", numberText(item.now), numberText(fresh.value), numberText(fresh.ts)];
}

/**
 * Appends an item's numbers of `p_items` (see `ITEM_STRIDE`) to `numbers`; `refIndex` turns one of
 * its reads (an index into its batch's refs) into the function's 1-based ref.
 */
function itemNumbers(numbers: (number | null)[], item: RemoteItem, refIndex: (read: number) => number): void {
  const [first = 0, second] = item.reads;
  numbers.push(item.kind, item.rate, item.period, item.capacity, item.maxReserved, item.shards, item.start, item.count);
  numbers.push(item.reserve ? 1 : 0, item.write ? 1 : 0, item.now, refIndex(first), second === undefined ? 0 : refIndex(second));
  const [fresh = { value: Number.NaN, ts: Number.NaN }, freshSecond] = item.fresh;
  numbers.push(fresh.value, fresh.ts, freshSecond?.value ?? null, freshSecond?.ts ?? null);
  const window = item.window ?? null;
  numbers.push(window?.start ?? null, window?.end ?? null, window?.longest ?? null);
}

/** The batch function's parameters for `batch`; `lockTable` names the table in each ref's lock. */
export function batchParams(batch: RemoteBatch, columns: [string, string, number][], lockTable: string): string[] {
  const numbers: (number | null)[] = [];
  for (const item of batch.items) itemNumbers(numbers, item, (read) => read + 1);
  return [
    textArray(columns.map((column) => column[0])),
    textArray(columns.map((column) => column[1])),
    `{${columns.map((column) => String(column[2])).join(",")}}`,
    textArray(batch.refs.map((ref) => advisoryLockText(lockTable, ref))),
    `{${numbers.map(numberText).join(",")}}`,
    batch.all ? "true" : "false",
  ];
}

/** `p_expect` of the batch function of stored limits: per record, the value and ts it was planned on (NULL, NULL: none). */
export function expectParam(limits: readonly (RateLimitState | null)[]): string {
  const numbers = limits.flatMap((state) => (state === null ? [null, null] : [state.value, state.ts]));
  return `{${numbers.map(numberText).join(",")}}`;
}

/** The answer of the batch function of stored limits: `replan` and what each ref held, or as {@link parseAnswer}. */
export function parseLimitsAnswer(answer: string, batch: RemoteBatch): RemoteAnswer {
  if (!answer.startsWith("replan")) return parseAnswer(answer, batch);
  const { stored } = parseAnswer(`ok${answer.slice("replan".length)} ${"0".repeat(batch.items.length)}`, batch);
  return { stored, wrote: batch.items.map(() => false), replan: true };
}

/** One call of a group: its batch, and its refs' columns. */
export interface GroupCall {
  readonly batch: RemoteBatch;
  readonly columns: [string, string, number][];
}

/**
 * The many-calls function's parameters for `calls`, in order: a state two calls read is one ref
 * (by its lock's text, which names the table and the raw ref); `p_calls` gives each call's item
 * count, its all-or-nothing flag and its refs.
 */
export function manyParams(calls: readonly GroupCall[], lockTable: string): string[] {
  const index = new Map<string, number>();
  const refs: { columns: [string, string, number]; lock: string }[] = [];
  const numbers: (number | null)[] = [];
  const shape: number[] = [];
  for (const { batch, columns } of calls) {
    const global = batch.refs.map((ref, slot) => {
      const lock = advisoryLockText(lockTable, ref);
      let at = index.get(lock);
      if (at === undefined) {
        at = refs.push({ columns: columns[slot]!, lock });
        index.set(lock, at);
      }
      return at;
    });
    for (const item of batch.items) itemNumbers(numbers, item, (read) => global[read]!);
    shape.push(batch.items.length, batch.all ? 1 : 0, global.length, ...global);
  }
  return [
    textArray(refs.map((ref) => ref.columns[0])),
    textArray(refs.map((ref) => ref.columns[1])),
    `{${refs.map((ref) => String(ref.columns[2])).join(",")}}`,
    textArray(refs.map((ref) => ref.lock)),
    `{${numbers.map(numberText).join(",")}}`,
    `{${shape.join(",")}}`,
  ];
}

/** The many-calls function's answer, per call: its own answer (see {@link parseAnswer}), or its failure. */
export function manyAnswers(answer: string, calls: readonly GroupCall[]): (RemoteAnswer | Error)[] {
  const lines = answer.split("\n");
  if (lines.length !== calls.length) throw badRow("the decision function answered for another number of calls");
  return lines.map((line, index) => {
    try {
      return parseAnswer(line, calls[index]!.batch);
    } catch (error) {
      return error as Error;
    }
  });
}
