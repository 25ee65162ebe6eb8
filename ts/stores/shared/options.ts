/**
 * How every adapter reads its options: the caller's own fields only, through
 * the core's `ownOptions`, so a field inherited from a polluted
 * `Object.prototype` is never read and an unknown one is an `INVALID_ARGUMENT`
 * naming the function. One reader for all of them.
 * @module
 */
import { ownOptions } from "ratebound";

/**
 * A null-prototype copy of the own `known` fields of `options` (absent ones left out).
 *
 * @param fn The function whose options these are, for the error message.
 * @param options The caller's options (`undefined`: none).
 * @param known Every field the function takes.
 * @returns The copy, safe to read field by field.
 * @example
 * const { prefix = "ratebound:" } = ownCopy("redisStore", options, ["prefix", "timeoutMs"]);
 */
export function ownCopy<T extends object>(fn: string, options: T | undefined, known: readonly string[]): T {
  const values = ownOptions(fn, options, [...known]);
  const copy = Object.create(null) as Record<string, unknown>;
  known.forEach((field, index) => {
    if (values[index] !== undefined) copy[field] = values[index];
  });
  return copy as T;
}

/** The options of the optimistic driver, shared by every optimistic host. */
export const OPTIMISTIC_OPTIONS = ["maxAttempts", "baseDelayMs", "maxDelayMs", "random", "onConflict"] as const;
