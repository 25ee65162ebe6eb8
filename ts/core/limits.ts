/**
 * A limiter's limits, compiled: a named limit's config once, when the
 * limiter is made; an inline one once per config object. And what the
 * limiter hands the modules that run its calls (`./batch-call.ts`,
 * `./granting.ts`): its policy, clock, randomness and checks, nothing else.
 * @module
 */
import { CONFIG_FIELDS, compileConfig, type Compiled } from "./config.js";
import { invalidConfig, mustBe, unknownLimit, wrongArgument } from "./errors.js";
import { isPlainObject } from "./options.js";
import { checkName } from "./call.js";
import type { Leases } from "./leasing.js";
import { snapshot, unchanged, type ConfigSnapshot } from "./config-snapshot.js";
import type { Random } from "./call.js";
import type { Call } from "./driver.js";
import type { FailurePolicy } from "./failure-policy.js";
import type { RefusalCache } from "./refusal-cache.js";

/** The fields a limiter's config may have: a config's, its limit's failure policy, and `dryRun`. */
const LIMIT_FIELDS = [...CONFIG_FIELDS, "onStoreError", "dryRun"];

/**
 * A limit's config compiled for the limiter, refusing one that could never grant: `capacity: 0`
 * holds no tokens, so only a reservation can pass, and with no `maxReserved > 0` that is a limit
 * whose every call would throw `COUNT_EXCEEDS_MAX`. With `maxReserved > 0` it is a limit that
 * only paces (every call passes `reserve: true` and waits its `retryAfter`), and it is kept.
 *
 * @param name The limit's name, for messages.
 * @param config The config as given (without `onStoreError`).
 * @returns The compiled config.
 */
export function compileLimit(name: string, config: unknown): Compiled {
  const compiled = compileConfig(name, config, LIMIT_FIELDS);
  const [, , , capacity, maxReserved] = compiled.numbers as [number, number, number, number, number];
  if (capacity === 0 && !(maxReserved > 0)) {
    throw invalidConfig(
      name,
      "capacity",
      `capacity must be > 0 unless maxReserved is > 0 (got capacity 0, maxReserved ${Number.isNaN(maxReserved) ? "absent" : maxReserved}): ` +
        "a limit of capacity 0 holds no tokens and could grant only reservations",
    );
  }
  return compiled;
}

/**
 * The limiter's named limits compiled, each checked once: a concurrency limit is handed to
 * `leases` (its calls are `leasing.ts`'s), every other compiled by {@link compileLimit}.
 *
 * @param named The limits as given (without their `onStoreError`), or undefined for none.
 * @param leases The limiter's concurrency limits, which take theirs.
 * @returns The other limits by name, in their order.
 */
export function compileNamed(named: unknown, leases: Leases): Map<string, Compiled> {
  const limits = new Map<string, Compiled>();
  if (named === undefined) return limits;
  if (!isPlainObject(named)) throw wrongArgument("RateLimiter", "limits", mustBe("limits", "a plain object of named configs", named));
  let names: string[];
  try {
    names = Object.keys(named);
  } catch {
    throw wrongArgument("RateLimiter", "limits", "limits must be a plain object (listing its names threw) (got an object)");
  }
  for (const name of names) {
    const config = named[name];
    if (!leases.adopt(name, config)) limits.set(checkName(name), compileLimit(name, config));
  }
  return limits;
}

/** Inline configs compiled once per config object, and again when the object's fields change. */
const inlineCompiled = new WeakMap<object, { readonly compiled: Compiled; readonly seen: ConfigSnapshot }>();

/**
 * An inline config compiled, once per config object (again after its fields change).
 *
 * @param name The limit's name, for messages.
 * @param config The config as given (without `onStoreError`).
 * @returns The compiled config.
 */
export function compileInline(name: string, config: unknown): Compiled {
  const cached = typeof config === "object" && config !== null ? inlineCompiled.get(config) : undefined;
  if (cached !== undefined && unchanged(config as object, cached.seen)) return cached.compiled;
  const compiled = compileLimit(name, config);
  inlineCompiled.set(config as object, { compiled, seen: snapshot(config as object) });
  return compiled;
}

/**
 * A call's limit: the named one's config, or the inline one compiled now.
 *
 * @param limits The limiter's named (token) limits.
 * @param leases Its concurrency limits, named in the error when asked for one here.
 * @param name The limit's name.
 * @param config An inline config, or undefined for the named limit.
 * @returns The compiled config; throws for an unknown name.
 */
export function resolveLimit(limits: ReadonlyMap<string, Compiled>, leases: Leases, name: string, config: unknown): Compiled {
  if (config !== undefined) return compileInline(name, config);
  const limit = limits.get(name);
  if (limit === undefined && leases.has(name)) throw wrongArgument(name, "name", `${name} is a concurrency limit: limitAll, acquireAll and inline configs do not take one (limit, check, acquire, getValue, reset and lease do)`);
  if (limit === undefined) throw unknownLimit(name);
  return limit;
}

/** What a `RateLimiter` hands the modules that run its calls. */
export interface Internals {
  /** Its failure policy: every store call goes through it. */
  readonly failure: FailurePolicy;
  /** Whether the store decides next to its data. */
  readonly remote: boolean;
  /** Whether calls on named limits read their stored limits. */
  readonly storedLimits: boolean;
  /** Its refusal cache, when asked for. */
  readonly refusals: RefusalCache | undefined;
  /** Its randomness (`undefined`: the pool). */
  readonly random: Random;
  /** Its clock. */
  now(): number;
  /** A call's arguments checked once, and its random numbers drawn. */
  call(name: unknown, given: { key?: unknown; count?: unknown; reserve?: unknown }, config: unknown, write: boolean): Call;
  /** The named limit's config, or the inline one compiled. */
  resolve(name: string, config: unknown): Compiled;
}
