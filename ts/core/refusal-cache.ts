/**
 * Refusals without a round trip (the opt-in `refusalCache` option, issue 22
 * item 4; Upstash calls it `ephemeralCache`, rate-limiter-flexible
 * `inMemoryBlockOnConsumed`): once the store refuses a key with `retryAfter`,
 * the limiter refuses the same call (the same count) locally until then, with
 * the wait that remains: on one instance, the store's own answer but for the
 * clock's precision. It only ever refuses, so it can never admit
 * more than the store would; what it can refuse wrongly is what changed the
 * store meanwhile without this limiter seeing it (another instance's `reset`,
 * a refund from a settle elsewhere). A settle or reset through this limiter
 * forgets the key.
 *
 * Bounded: at most `maxKeys` limits and keys, the oldest refusal dropped
 * first. Sharded limits are never cached: a refusal on the two shards one
 * call drew says nothing of the shards the next call draws. Nor are
 * reservations: a refused one's wait is until it could run, and the store may
 * take it as a reservation earlier.
 * @module
 */
import { laneOf } from "./coalesce.js";
import type { Call } from "./driver.js";
import { mustBe, unknownField, wrongArgument } from "./errors.js";
import { isPlainObject } from "./options.js";
import type { RateLimitFigures, RateLimitResult } from "./types.js";

/**
 * The `refusalCache` option of a `RateLimiter`: `true` for the defaults, or the most limits and
 * keys it remembers (default 10,000; the oldest refusal is dropped first).
 *
 * @example
 * new RateLimiter(redisStore(client), LIMITS, { refusalCache: { maxKeys: 50_000 } });
 */
export type RefusalCacheOption = boolean | { maxKeys?: number };

/** What the option must be, as messages say it. */
const RULE = "true, false or { maxKeys?: number }";
/** How many limits and keys it remembers unless told. */
const DEFAULT_MAX_KEYS = 10_000;

/** A refusal the store made, in force until `until`. */
interface Block {
  /** The limit's compiled numbers: an inline config of the same name is another limit. */
  readonly config: string;
  /** The refused call's clock, ms. */
  readonly at: number;
  /** When the wait it was given ends, ms. */
  readonly until: number;
  /** Tokens it asked: calls asking another count go to the store (their waits differ). */
  readonly count: number;
  /** Its figures, when it was asked for them. */
  readonly figures: RateLimitFigures | undefined;
}

/** The refusals a limiter remembers. */
export class RefusalCache {
  readonly #maxKeys: number;
  /** By limit and key, oldest first. */
  readonly #blocks = new Map<string, Block>();

  private constructor(maxKeys: number) {
    this.#maxKeys = maxKeys;
  }

  /**
   * The cache the option asks for, or `undefined` (absent or `false`).
   *
   * @param option The `refusalCache` option as given.
   * @returns The cache.
   * @throws RateboundTypeError (`INVALID_ARGUMENT`) when the option is not {@link RefusalCacheOption}.
   */
  static from(option: unknown): RefusalCache | undefined {
    if (option === undefined || option === false) return undefined;
    if (option === true) return new RefusalCache(DEFAULT_MAX_KEYS);
    if (!isPlainObject(option)) throw wrongArgument("RateLimiter", "refusalCache", mustBe("refusalCache", RULE, option));
    let maxKeys: unknown;
    for (const field of Object.keys(option)) {
      if (field !== "maxKeys") throw wrongArgument("RateLimiter", `refusalCache.${field}`, unknownField(`refusalCache.${field}`, ["maxKeys"]));
      maxKeys = option[field];
    }
    if (maxKeys === undefined) return new RefusalCache(DEFAULT_MAX_KEYS);
    if (typeof maxKeys !== "number" || !Number.isInteger(maxKeys) || maxKeys < 1 || maxKeys > 2 ** 32 - 2) {
      throw wrongArgument("RateLimiter", "refusalCache.maxKeys", mustBe("refusalCache.maxKeys", "an integer from 1 to 4294967294", maxKeys));
    }
    return new RefusalCache(maxKeys);
  }

  /** How many refusals it holds now. */
  get size(): number {
    return this.#blocks.size;
  }

  /**
   * The refusal the store made for this key, repeated with the wait that remains, when it
   * still holds for `call`; `undefined` sends the call to the store.
   *
   * @param call The call, checked and planned (bad input never gets here).
   * @param figures Whether the call asks for figures (only a refusal that has them answers it).
   * @returns `{ ok: false, retryAfter }` (with the refusal's figures), or `undefined`.
   */
  refuse(call: Call, figures: boolean): (RateLimitResult & { figures?: RateLimitFigures }) | undefined {
    if (call.limit.shards > 1 || call.reserve) return undefined;
    const id = laneOf(call.name, call.key);
    const block = this.#blocks.get(id);
    if (block === undefined) return undefined;
    if (call.now >= block.until) {
      this.#blocks.delete(id);
      return undefined;
    }
    // The clock went back, or another call (config, count), whose wait is another: the store decides.
    if (call.now < block.at || block.config !== configOf(call) || call.count !== block.count) return undefined;
    if (figures && block.figures === undefined) return undefined;
    const retryAfter = waitUntil(call.now, block.until);
    if (!figures) return { ok: false, retryAfter };
    // The refusal's figures as they were (its remaining and reset: never early), its Retry-After what remains.
    return { ok: false, retryAfter, figures: { ...block.figures!, retryAfter: Math.ceil(retryAfter / 1000) } };
  }

  /**
   * Remembers what the store answered `call`: a refusal with a wait blocks the key until
   * then; a `limit` it granted lifts the block (tokens taken since make the remembered wait
   * too short for the calls it would refuse, so they go to the store again).
   *
   * @param call The call.
   * @param answer What the store (not a fallback, not `"open"`) answered.
   */
  remember(call: Call, answer: RateLimitResult & { figures?: RateLimitFigures }): void {
    if (call.limit.shards > 1 || Object.hasOwn(answer, "degraded")) return;
    const id = laneOf(call.name, call.key);
    if (answer.ok) {
      if (call.write) this.#blocks.delete(id);
      return;
    }
    const wait = answer.retryAfter;
    if (call.reserve || !(wait > 0) || !Number.isFinite(wait)) return;
    this.#blocks.delete(id);
    this.#blocks.set(id, { config: configOf(call), at: call.now, until: call.now + wait, count: call.count, figures: answer.figures });
    if (this.#blocks.size > this.#maxKeys) this.#blocks.delete(this.#blocks.keys().next().value!);
  }

  /**
   * Forgets the refusals of a limit's key: this limiter settled or reset it.
   *
   * @param name The limit's name.
   * @param key The key.
   */
  forget(name: string, key: string | undefined): void {
    this.#blocks.delete(laneOf(name, key));
  }
}

/** A config's identity: its compiled numbers. */
function configOf(call: Call): string {
  return call.limit.numbers.join();
}

/** The wait from `now` to `until`, never so short that `now + wait` falls before `until` (waits are never early). */
function waitUntil(now: number, until: number): number {
  let wait = until - now;
  while (now + wait < until) wait += Math.max(Number.MIN_VALUE, wait * Number.EPSILON);
  return wait;
}
