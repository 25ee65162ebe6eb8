/**
 * Configs compiled by the core: the object's shape (own fields only, no
 * unknown ones) is checked here, every value by the core once, and the
 * result kept as the numbers calls pass.
 * @module
 */
import {
  CALENDAR_PERIODS, COMPILE_FIELDS, COMPILE_KIND, COMPILE_TAG_CALENDAR, COMPILED_CONFIG, COMPILED_DRAWS, COMPILED_SETTLE_DRAWS, CONFIG_KIND, CONFIG_LEN, CONFIG_SHARDS, EXTRA, OUT,
} from "./boundary.js";
import { core, io } from "./engine.js";
import { coreError, invalidConfig, KINDS, mustBe, unknownField } from "./errors.js";
import type { CalendarPeriod, RateLimitConfig } from "./types.js";

/** A config's fields, in the order configs list them. */
export const CONFIG_FIELDS = ["kind", "rate", "period", "capacity", "maxReserved", "shards", "start"] as const;

/** A config validated by the core. */
export interface Compiled {
  /** kind (0 token bucket, 1 fixed window, 2 sliding window), rate, period, capacity, maxReserved (NaN: none), shards, start (NaN: none). */
  readonly numbers: readonly number[];
  /** How many random numbers a decision draws. */
  readonly draws: number;
  /** How many a settle draws. */
  readonly settleDraws: number;
  /** The shard count. */
  readonly shards: number;
  /** A sliding window: its two windows' states live at shards 0 and 1, and every decision reads both. */
  readonly sliding: boolean;
  /** The config as callers write it, with `capacity` and `shards` filled in (and a fixed window's `start`, when it has one). */
  readonly described: RateLimitConfig;
}

/**
 * A field as the core takes it: a type tag (0 absent, 1 null, 2 number, 3 anything else,
 * `COMPILE_TAG_CALENDAR` a calendar period's name, by its code) and the number.
 */
function tagged(value: unknown): [number, number] {
  if (value === undefined) return [0, 0];
  if (value === null) return [1, 0];
  if (typeof value === "number") return [2, value];
  const code = typeof value === "string" && value !== "" ? (CALENDAR_PERIODS as readonly string[]).indexOf(value) : -1;
  if (code > 0) return [COMPILE_TAG_CALENDAR, code];
  return [3, Number.NaN];
}

/**
 * Compiles `config` for the limit `limit` (`undefined`: a config of no limit, as
 * `calculateRateLimit` takes). Its own enumerable fields only; an unknown one is an error.
 *
 * @param limit The limit's name, for messages.
 * @param config What the caller passed.
 * @param known The fields allowed (the limiter's configs also take `onStoreError`, which it removes first).
 * @returns The compiled config.
 */
export function compileConfig(limit: string | undefined, config: unknown, known: readonly string[] = CONFIG_FIELDS): Compiled {
  let isArray = false;
  try {
    isArray = Array.isArray(config);
  } catch {
    isArray = true;
  }
  if (typeof config !== "object" || config === null || isArray) throw invalidConfig(limit, "config", mustBe("config", "an object", config));
  let names: string[];
  try {
    names = Object.keys(config);
  } catch {
    throw invalidConfig(limit, "config", "config must be a plain object (listing its fields threw) (got an object)");
  }
  // No prototype: an inherited field (a polluted Object.prototype.start) is never read.
  const raw: Record<string, unknown> = Object.create(null);
  for (const name of names) {
    if (!(CONFIG_FIELDS as readonly string[]).includes(name)) {
      throw invalidConfig(limit, name, unknownField(name, known));
    }
    try {
      raw[name] = (config as Record<string, unknown>)[name];
    } catch {
      throw invalidConfig(limit, name, `${name} must be readable (reading it threw) (got an exception)`);
    }
  }
  const kind = KINDS.indexOf(raw.kind as (typeof KINDS)[number]);
  io[EXTRA + COMPILE_KIND] = kind < 0 ? KINDS.length : kind;
  CONFIG_FIELDS.slice(1).forEach((field, index) => {
    const [tag, value] = tagged(raw[field]);
    io[EXTRA + COMPILE_FIELDS + 2 * index] = tag;
    io[EXTRA + COMPILE_FIELDS + 1 + 2 * index] = value;
  });
  if (core.rb_compile() < 0) throw coreError(io, OUT, limit, (field) => raw[field]);
  const numbers = Array.from(io.subarray(EXTRA + COMPILED_CONFIG, EXTRA + COMPILED_CONFIG + CONFIG_LEN));
  return {
    numbers,
    draws: io[EXTRA + COMPILED_DRAWS]!,
    settleDraws: io[EXTRA + COMPILED_SETTLE_DRAWS]!,
    shards: numbers[CONFIG_SHARDS]!,
    sliding: numbers[CONFIG_KIND] === 2,
    described: describe(numbers),
  };
}

/** The config as callers write it, from its compiled numbers; `start` is the fixed window's (or `windowStart`). */
export function describe(numbers: readonly number[], windowStart?: number): RateLimitConfig {
  const [kind, rate, periodNumber, capacity, maxReserved, shards, start] = numbers as [number, number, number, number, number, number, number];
  // A sliding window's period is ms only (a calendar period is refused for it).
  if (kind === 2) return { kind: "sliding window", rate, period: periodNumber };
  const base = { rate, period: periodNumber, capacity, ...(Number.isNaN(maxReserved) ? {} : { maxReserved }), shards };
  if (kind === 0) return { kind: "token bucket", ...base };
  // A calendar period crosses as minus its code.
  const period = periodNumber < 0 ? (CALENDAR_PERIODS[-periodNumber] as CalendarPeriod) : periodNumber;
  const at = Number.isNaN(start) ? windowStart : start;
  return { kind: "fixed window", ...base, period, ...(at === undefined || Number.isNaN(at) ? {} : { start: at }) };
}
