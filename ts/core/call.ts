/**
 * A call's strings and shapes, checked once, here: the limit's name, the
 * key, and the types of `count`, `reserve` and `now` (their ranges are the
 * core's to check). And randomness: drawn inside a call, never at load.
 * @module
 */
import { invalidRequest, mustBe, randomUnavailable, invalidRandom, RateboundError, show, wellFormed } from "./errors.js";

/** The longest limit name or key, in UTF-8 bytes: every host can store it. */
export const MAX_KEY_BYTES = 1024;

/** Strings up to this many UTF-16 units are within {@link MAX_KEY_BYTES} whatever they hold (3 bytes a unit at most). */
const SHORT_UNITS = 341;

/** A string's length in UTF-8 bytes (well-formed strings only). */
export function utf8Bytes(text: string): number {
  if (text.length <= SHORT_UNITS) {
    let ascii = true;
    for (let index = 0; index < text.length && ascii; index++) ascii = text.charCodeAt(index) < 0x80;
    if (ascii) return text.length;
  }
  let bytes = 0;
  for (let index = 0; index < text.length; index++) {
    const unit = text.charCodeAt(index);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff) {
      bytes += 4;
      index++;
    } else bytes += 3;
  }
  return bytes;
}

/**
 * A limit's name: a well-formed string of at most 1024 bytes of UTF-8.
 *
 * @param name What the caller passed.
 * @returns The name.
 */
export function checkName(name: unknown): string {
  if (typeof name !== "string" || !wellFormed(name)) {
    throw new RateboundError("INVALID_REQUEST", `Rate limit name must be a well-formed string (got ${show(name)})`, "name");
  }
  if (name.length > SHORT_UNITS) {
    const bytes = utf8Bytes(name);
    if (bytes > MAX_KEY_BYTES) throw new RateboundError("INVALID_REQUEST", `Rate limit name must be at most 1024 bytes of UTF-8 (got ${bytes} bytes)`, "name");
  }
  return name;
}

/**
 * A key: absent, or a well-formed string of at most 1024 bytes of UTF-8.
 *
 * @param limit The limit's name, for messages.
 * @param key What the caller passed.
 * @returns The key.
 */
export function checkKey(limit: string, key: unknown): string | undefined {
  if (key === undefined) return undefined;
  if (typeof key !== "string" || !wellFormed(key)) throw invalidRequest(limit, "key", mustBe("key", "a well-formed string or undefined", key));
  if (key.length > SHORT_UNITS) {
    const bytes = utf8Bytes(key);
    if (bytes > MAX_KEY_BYTES) throw invalidRequest(limit, "key", `key must be at most 1024 bytes of UTF-8 (got ${bytes} bytes)`);
  }
  return key;
}

/** `count`: 1 when absent; a number (its range is the core's to check). */
export function checkCount(limit: string, count: unknown): number {
  if (count === undefined) return 1;
  if (typeof count !== "number") throw invalidRequest(limit, "count", mustBe("count", "a finite number >= 0", count));
  return count;
}

/** A boolean option such as `reserve`: false when absent. */
export function checkFlag(limit: string, field: string, flag: unknown): boolean {
  if (flag === undefined) return false;
  if (typeof flag !== "boolean") throw invalidRequest(limit, field, mustBe(field, "a boolean", flag));
  return flag;
}

/** `now` as the clock gave it: a number (its range is the core's to check). */
export function checkNow(limit: string, now: unknown): number {
  if (typeof now !== "number") throw invalidRequest(limit, "now", mustBe("now", "a finite number of ms", now));
  return now;
}

/**
 * A ref for a state of `name` and `key`. `key` is always an own field
 * (`undefined` for the shared state), so a store that reads `ref.key` never
 * sees a polluted `Object.prototype.key`.
 */
export function refOf(name: string, key: string | undefined, shard: number): { name: string; key?: string; shard: number } {
  return { name, key, shard };
}

/** A stable identity of a ref, for de-duplicating the states of a batch. */
export function refId(name: string, key: string | undefined, shard: number): string {
  return `${shard}:${key === undefined ? "-" : `+${key}`}\u0000${name}`;
}

// ---------------------------------------------------------------------------------------------
// Randomness.

/** A source of numbers in `[0, 1)`: the caller's, or the runtime's cryptographic one. */
export type Random = (() => number) | undefined;

const pool = new Float64Array(64);
let used = pool.length;

/** Refills the pool from the runtime's cryptographic source: 53 random bits a number. */
function refill(): void {
  const source = (globalThis as { crypto?: { getRandomValues?<T extends Uint32Array>(array: T): T } }).crypto;
  if (source === undefined || typeof source.getRandomValues !== "function") throw randomUnavailable();
  const words = new Uint32Array(pool.length * 2);
  source.getRandomValues(words);
  for (let index = 0; index < pool.length; index++) {
    pool[index] = (words[2 * index]! * 2 ** 21 + (words[2 * index + 1]! >>> 11)) / 2 ** 53;
  }
  used = 0;
}

/**
 * One number in `[0, 1)`: from `random` when given (checked by the core), else the pool.
 *
 * @param random The caller's source, if any.
 * @returns The number drawn.
 */
export function draw(random: Random): number {
  if (random === undefined) {
    if (used >= pool.length) refill();
    return pool[used++]!;
  }
  let drawn: unknown;
  try {
    drawn = random();
  } catch {
    throw new RateboundError("INVALID_RANDOM", "random() must return a number in [0, 1) (got an exception)");
  }
  if (typeof drawn !== "number") throw invalidRandom(drawn);
  return drawn;
}

/** `count` numbers drawn from `random`. */
export function drawMany(random: Random, count: number): number[] {
  const draws: number[] = [];
  for (let index = 0; index < count; index++) draws.push(draw(random));
  return draws;
}
