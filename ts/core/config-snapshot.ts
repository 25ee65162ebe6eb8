/**
 * What a config object held when it was compiled, so that a cache keyed by
 * the object (`calculateRateLimit`'s, a limiter's inline configs) can tell,
 * cheaply, that the object was changed since: a changed field compiles it
 * again, and a field added after first use (an unknown one, say) is refused
 * as on first use.
 * @module
 */
import type { CONFIG_FIELDS } from "./config.js";

/** A config's fields as they were read when it was compiled (own or inherited, as every call reads them). */
export interface ConfigSnapshot {
  readonly kind: unknown;
  readonly rate: unknown;
  readonly period: unknown;
  readonly capacity: unknown;
  readonly maxReserved: unknown;
  readonly shards: unknown;
  readonly start: unknown;
  /** Whether `capacity`, `maxReserved` or `start` is a zero, whose sign `===` cannot see. */
  readonly zero: boolean;
  /** Its enumerable fields, counted as {@link fieldCount} counts them. */
  readonly fieldCount: number;
}

type ConfigFields = Record<(typeof CONFIG_FIELDS)[number], unknown>;

/**
 * How many enumerable fields `config` has. A `for…in` count, unlike
 * `Object.keys(config).length`, makes no array.
 */
function fieldCount(config: object): number {
  let count = 0;
  for (const _ in config) count++;
  return count;
}

/** The snapshot of `config` now. */
export function snapshot(config: object): ConfigSnapshot {
  const fields = config as ConfigFields;
  return {
    kind: fields.kind,
    rate: fields.rate,
    period: fields.period,
    capacity: fields.capacity,
    maxReserved: fields.maxReserved,
    shards: fields.shards,
    start: fields.start,
    zero: fields.capacity === 0 || fields.maxReserved === 0 || fields.start === 0,
    fieldCount: fieldCount(config),
  };
}

/**
 * Whether `config` still has the fields `seen` was taken from: one read of
 * each, compared with `===` (`Object.is` would cost a call a field here; no
 * compiled field is NaN, since a config with one does not compile, and a
 * zero's sign is compared only where a field was zero).
 */
export function unchanged(config: object, seen: ConfigSnapshot): boolean {
  const fields = config as ConfigFields;
  return (
    fields.kind === seen.kind &&
    fields.rate === seen.rate &&
    fields.period === seen.period &&
    fields.capacity === seen.capacity &&
    fields.maxReserved === seen.maxReserved &&
    fields.shards === seen.shards &&
    fields.start === seen.start &&
    (!seen.zero || (Object.is(fields.capacity, seen.capacity) && Object.is(fields.maxReserved, seen.maxReserved) && Object.is(fields.start, seen.start))) &&
    fieldCount(config) === seen.fieldCount
  );
}
