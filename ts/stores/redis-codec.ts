/**
 * How ratebound/redis speaks to Redis: its errors, states as stored text, and
 * the decision script's arguments and replies, for a call alone and for a
 * group commit of many (`DECIDE_SCRIPT`'s "many calls" layout); and which
 * Cluster slot a key hashes to.
 * @module
 */
import { RateboundTypeError, type RateLimitState, type RemoteAnswer, type RemoteBatch } from "ratebound";

/**
 * Why a call failed: `REDIS_CONFLICT` (every commit of a grant, settle,
 * getValue or reset lost the race), `REDIS_TIMEOUT`, `REDIS_CROSSSLOT` (a
 * Cluster call over keys in several slots: use a hash-tagged prefix), or
 * `REDIS_ERROR` (the client or server failed).
 */
export type RedisErrorCode = "REDIS_CONFLICT" | "REDIS_TIMEOUT" | "REDIS_CROSSSLOT" | "REDIS_ERROR";

/**
 * A Redis call that failed closed: nothing was written by it (for
 * `REDIS_TIMEOUT`, the server may still run the command it never answered:
 * the call rejects all the same, spending at most what it would have).
 *
 * @example
 * try { await limiter.limit("post", { key: userId }); }
 * catch (error) { if (error instanceof RedisStoreError) return new Response("Busy, retry", { status: 503 }); }
 * @see {@link https://github.com/ratebound/ratebound/blob/main/docs/errors.md#redis-redisstoreerror | docs/errors.md}: every code, what it means, what to do.
 */
export class RedisStoreError extends Error {
  /** What failed. */
  readonly code: RedisErrorCode;
  /** For `REDIS_CONFLICT`: how many commits were tried. */
  readonly attempts: number | undefined;

  /**
   * @param code What failed.
   * @param message What happened.
   * @param options `cause`: the client's error; `attempts` for a conflict.
   */
  constructor(code: RedisErrorCode, message: string, options: { cause?: unknown; attempts?: number } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "RedisStoreError";
    this.code = code;
    this.attempts = options.attempts;
  }
}

/** What the decision script answers for a {@link RemoteBatch}: the store's answer, and each item's own decision. */
export interface RedisAnswer extends RemoteAnswer {
  /**
   * Per item, the script's own decision (`null`: an error, or not decided):
   * for diagnostics and the differential test; the limiter answers from the core's replay.
   */
  decided: ({ ok: boolean; retryAfter?: number } | null)[];
}

/** A number as JavaScript prints it or as Lua's `%.17g` does: what states are stored with. */
const NUMBER = /^-?\d+(?:\.\d+)?(?:e[+-]\d+)?$/;

/** A state as stored: `VALUE,TS`, each as JavaScript prints the number (which reads back exactly). */
export function encodeState(state: RateLimitState): string {
  return `${numberText(state.value)},${numberText(state.ts)}`;
}

/**
 * The state in a stored string (as this module or the decision script wrote
 * it); anything else is handed on as it is, for the core to reject naming the ref.
 */
export function decodeState(stored: unknown): RateLimitState | null {
  if (stored === null || stored === undefined) return null;
  if (typeof stored !== "string") return JSON.stringify(stored) as unknown as RateLimitState;
  const parts = STATE.exec(stored);
  if (parts === null) return stored as unknown as RateLimitState;
  return { value: Number(parts[1]), ts: Number(parts[2]) };
}

/** `VALUE,TS`, each a {@link NUMBER}. */
const STATE = /^(-?\d+(?:\.\d+)?(?:e[+-]\d+)?),(-?\d+(?:\.\d+)?(?:e[+-]\d+)?)$/;

/** A number as the scripts read it back exactly: JavaScript's shortest form, `-0` kept. */
export function numberText(number: number): string {
  return Object.is(number, -0) ? "-0" : String(number);
}

/** An argument error: the core's `RateboundTypeError` (a `TypeError` with `code: "INVALID_ARGUMENT"`). */
export function invalidArgument(field: string, message: string): RateboundTypeError {
  return new RateboundTypeError(`ratebound/redis: ${message}`, field);
}

/** A client's reply as text: node-redis and ioredis may answer with bytes when so configured. */
export function text(reply: unknown): unknown {
  return reply instanceof Uint8Array ? new TextDecoder().decode(reply) : reply;
}

/**
 * A script's `=`-marked string reply: the text after the `=`, or `null` for nil. The scripts
 * answer each as a JSON string literal (`"=1,"`), which a client that decodes replies as JSON
 * (`@upstash/redis`) has decoded already; a reply still in quotes is decoded here.
 */
export function rawText(reply: unknown, what: string): string | null {
  let value = text(reply);
  if (value === null || value === undefined) return null;
  if (typeof value === "string" && value.charCodeAt(0) === 34) value = jsonText(value); // '"'
  if (typeof value !== "string" || value.charCodeAt(0) !== 61) { // '='
    throw new RedisStoreError("REDIS_ERROR", `ratebound/redis: ${what} answered ${JSON.stringify(value)}, not a marked string; the call failed closed`);
  }
  return value.slice(1);
}

/**
 * A JSON string literal's text, or the literal as it is when it is not one (then not marked
 * either). One with no escape in it (every answer but a stored value that is not a state) is
 * its inside: a third of the time of `JSON.parse`.
 */
function jsonText(literal: string): unknown {
  const end = literal.length - 1;
  if (end > 0 && literal.indexOf('"', 1) === end && literal.indexOf("\\") === -1) return literal.slice(1, end);
  try {
    return JSON.parse(literal) as unknown;
  } catch {
    return literal;
  }
}

/** The decision script's arguments for `batch` (see `DECIDE_SCRIPT`). */
export function decideArguments(batch: RemoteBatch): string[] {
  const { items } = batch;
  const refCount = batch.refs.length;
  // One item on one ref (a call on a limit with one shard, not a calendar period's): the compact
  // layout, 13 arguments.
  const compact = items.length === 1 && refCount === 1 && items[0]!.reads?.length === 1 && !items[0]!.window;
  const args: string[] = new Array(compact ? 13 : 2 + items.length * ITEM_ARGUMENTS);
  if (!compact) {
    args[0] = batch.all ? "1" : "0";
    args[1] = String(items.length);
  }
  for (let index = 0, at = compact ? 0 : 2; index < items.length; index++, at += ITEM_ARGUMENTS) {
    const item = items[index]!;
    const { reads, fresh } = item;
    if (!Array.isArray(reads) || !(reads.length === 1 || reads.length === 2) || !inRange(reads[0], refCount) || (reads.length === 2 && !inRange(reads[1], refCount)) || !Array.isArray(fresh) || fresh.length !== reads.length) {
      throw invalidArgument("batch", `decide: item ${index} must read one or two of the batch's ${refCount} refs, with a fresh state for each`);
    }
    const second = reads.length === 2;
    args[at] = String(item.kind);
    args[at + 1] = numberText(item.rate);
    args[at + 2] = numberText(item.period);
    args[at + 3] = numberText(item.capacity);
    args[at + 4] = item.maxReserved === null ? "" : numberText(item.maxReserved);
    args[at + 5] = String(item.shards);
    args[at + 6] = item.start === null ? "" : numberText(item.start);
    args[at + 7] = numberText(item.count);
    args[at + 8] = item.reserve ? "1" : "0";
    args[at + 9] = item.write ? "1" : "0";
    args[at + 10] = numberText(item.now);
    if (compact) {
      args[11] = numberText(fresh[0]!.value);
      args[12] = numberText(fresh[0]!.ts);
      break;
    }
    args[at + 11] = String(reads[0]! + 1);
    args[at + 12] = second ? String(reads[1]! + 1) : "0";
    args[at + 13] = numberText(fresh[0]!.value);
    args[at + 14] = numberText(fresh[0]!.ts);
    args[at + 15] = second ? numberText(fresh[1]!.value) : "0";
    args[at + 16] = second ? numberText(fresh[1]!.ts) : "0";
    const window = item.window ?? null;
    args[at + 17] = window === null ? "" : numberText(window.start);
    args[at + 18] = window === null ? "" : numberText(window.end);
    args[at + 19] = window === null ? "" : numberText(window.longest);
  }
  return args;
}

/** The general layout's arguments per item (see `DECIDE_SCRIPT`). */
const ITEM_ARGUMENTS = 20;

/** Whether `read` indexes one of `refCount` refs. */
const inRange = (read: unknown, refCount: number): boolean => Number.isInteger(read) && (read as number) >= 0 && (read as number) < refCount;

/** The decision script's reply: what each key held, and which items wrote. */
export function decideAnswer(reply: unknown, batch: RemoteBatch): RedisAnswer {
  const refCount = batch.refs.length;
  const itemCount = batch.items.length;
  const bad = (what: unknown) =>
    new RedisStoreError("REDIS_ERROR", `ratebound/redis: the decision script answered ${JSON.stringify(what)}, not what it was asked; the call failed closed`);
  if (!Array.isArray(reply) || reply.length !== refCount + 1 + itemCount) throw bad(reply);
  const stored: unknown[] = new Array(refCount);
  for (let ref = 0; ref < refCount; ref++) stored[ref] = decodeState(rawText(reply[ref], "the decision script"));
  const flags = rawText(reply[refCount], "the decision script");
  if (flags === null || flags.length !== itemCount) throw bad(flags);
  const wrote: boolean[] = new Array(itemCount);
  for (let item = 0; item < itemCount; item++) {
    const flag = flags.charCodeAt(item);
    if (flag !== 48 && flag !== 49) throw bad(flags); // "0" or "1"
    wrote[item] = flag === 49;
  }
  const decided: RedisAnswer["decided"] = new Array(itemCount);
  for (let item = 0; item < itemCount; item++) {
    const answer = rawText(reply[refCount + 1 + item], "the decision script");
    if (answer === "1,") {
      decided[item] = { ok: true }; // the common answer: granted, no wait
      continue;
    }
    const [status, wait] = answer === null ? [] : answer.split(",");
    if ((status !== "1" && status !== "0") || wait === undefined) {
      if (status === "e" || status === "-") {
        decided[item] = null;
        continue;
      }
      throw bad(answer);
    }
    if (wait !== "" && !NUMBER.test(wait)) throw bad(answer);
    decided[item] = wait === "" ? { ok: status === "1" } : { ok: status === "1", retryAfter: Number(wait) };
  }
  return { stored, wrote, decided };
}

/**
 * One call's share of a group commit: its batch, its keys, and its arguments in the one-call
 * layout of `DECIDE_SCRIPT` (sent as they are when the call goes alone).
 */
export interface Group {
  readonly batch: RemoteBatch;
  readonly keys: string[];
  readonly args: string[];
}

/**
 * The most items one EVALSHA decides: calls that arrive while a round trip is in flight go
 * together in the next, up to this many items (a `limitAll` larger than this goes alone). With
 * at most 26 arguments and two keys per item, an EVALSHA carries at most about 3,400 arguments.
 */
export const GROUP_MAX_ITEMS = 128;

/** Whether a group is one item on one key of a limit with one shard (the compact layout). */
const isCompact = (group: Group): boolean => group.keys.length === 1 && group.args.length === 13;

/**
 * The arguments of one EVALSHA deciding `groups` in order (`DECIDE_SCRIPT`'s "many calls"
 * layout): every key once, and per group `c` and its key's index before a compact call's 13
 * arguments, or `g`, all, the item count, the key count and each key's index before its items.
 */
export function manyArguments(groups: readonly Group[]): { keys: string[]; args: string[] } {
  const indexes = new Map<string, string>();
  const keys: string[] = [];
  const indexOf = (key: string): string => {
    let index = indexes.get(key);
    if (index === undefined) {
      keys.push(key);
      indexes.set(key, (index = String(keys.length)));
    }
    return index;
  };
  const args = ["m", String(groups.length)];
  for (const group of groups) {
    const own = group.args;
    if (isCompact(group)) {
      args.push("c", indexOf(group.keys[0]!));
      for (let at = 0; at < own.length; at++) args.push(own[at]!);
      continue;
    }
    args.push("g", own[0]!, own[1]!, String(group.keys.length));
    for (const key of group.keys) args.push(indexOf(key));
    for (let at = 2; at < own.length; at++) args.push(own[at]!);
  }
  return { keys, args };
}

/**
 * Each group's answer in the reply of a "many calls" EVALSHA: per group, what each of its keys
 * held when it ran, its wrote digits and its answers. A group whose part is malformed fails alone.
 */
export function manyAnswers(reply: unknown, groups: readonly Group[]): (RedisAnswer | Error)[] {
  let total = 0;
  for (const group of groups) total += group.keys.length + 1 + group.batch.items.length;
  if (!Array.isArray(reply) || reply.length !== total) {
    throw new RedisStoreError("REDIS_ERROR", `ratebound/redis: the decision script answered ${JSON.stringify(reply)} for ${groups.length} calls; the calls failed closed`);
  }
  let at = 0;
  return groups.map((group) => {
    const size = group.keys.length + 1 + group.batch.items.length;
    const part = reply.slice(at, (at += size));
    try {
      return decideAnswer(part, group.batch);
    } catch (error) {
      return error as Error;
    }
  });
}

/** A Redis Cluster key's hash slot: CRC16 (XMODEM) of its hash tag, or of the key, mod 16384. */
function keySlot(key: string): number {
  const open = key.indexOf("{");
  if (open !== -1) {
    const close = key.indexOf("}", open + 1);
    if (close > open + 1) key = key.slice(open + 1, close);
  }
  let crc = 0;
  for (const byte of new TextEncoder().encode(key)) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}

/** Lanes of calls over keys in several slots: each goes alone (and fails with `REDIS_CROSSSLOT`). */
let crossSlotCalls = 0;

/** A Cluster call's lane: the slot of its keys, or a lane of its own when they span slots. */
export function slotLane(group: Group): string | number {
  const slot = keySlot(group.keys[0]!);
  for (let index = 1; index < group.keys.length; index++) if (keySlot(group.keys[index]!) !== slot) return `cross ${++crossSlotCalls}`;
  return slot;
}

