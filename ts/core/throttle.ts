/**
 * `throttle`: a function that waits its turn on a limit before each call, for
 * code that calls someone else's API (what `p-throttle` and `bottleneck`'s
 * `wrap` do in one process, here on any host ratebound runs on).
 * @module
 */
import { invalidArgument, wrongArgument, unknownField } from "./errors.js";
import type { Named } from "./options.js";
import type { LimitConfig } from "./failure-policy.js";
import type { AcquireOptions } from "./acquire.js";
import type { RateLimiter } from "./limiter.js";

/**
 * The options of {@link throttle}. `key` and `count` may be functions of the call's arguments.
 *
 * @example
 * const options: ThrottleOptions<[url: string]> = { key: (url) => new URL(url).host, maxWait: 30_000 };
 */
export interface ThrottleOptions<Args extends unknown[] = unknown[]> {
  /** Whose limit, or how to tell from the arguments (a host, a user). Omit for the shared state. */
  key?: string | ((...args: Args) => string | undefined);
  /** Tokens each call takes, or how to tell from the arguments; default 1. */
  count?: number | ((...args: Args) => number);
  /** The longest wait a call accepts, in ms: past it the call rejects with `WAIT_TOO_LONG` and `fn` is not called. */
  maxWait?: number;
  /** Aborts every call still waiting (`ABORTED`; `fn` is not called), and every later one. */
  signal?: AbortSignal;
}

const THROTTLE_OPTIONS = ["key", "count", "maxWait", "signal"];

/**
 * Wraps `fn` so that each call first waits its turn on the limit `name` (`limiter.acquire`),
 * then calls `fn` with the same arguments and `this`, and answers its result. A call whose
 * turn would come after `maxWait` rejects with `WAIT_TOO_LONG`, and `fn` is not called.
 *
 * @param limiter A `RateLimiter` (on any store: a Redis one paces every process together).
 * @param name One of the limiter's limits.
 * @param fn The function to pace.
 * @param options `key`, `count` (values, or functions of the arguments), `maxWait`, `signal`.
 * @returns A function with `fn`'s parameters, answering a Promise of its result.
 * @throws RateboundTypeError (`INVALID_ARGUMENT`) when `fn` is not a function or an option has the wrong type.
 * @example
 * const limiter = new RateLimiter(new MemoryStore(), { github: { kind: "token bucket", rate: 5000, period: HOUR } });
 * const getRepo = throttle(limiter, "github", (repo: string) => fetch(`https://api.github.com/repos/${repo}`));
 * const response = await getRepo("ratebound/ratebound"); // waits its turn, then fetches
 */
export function throttle<Limits extends Record<string, LimitConfig>, Args extends unknown[], Result, This = unknown>(
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any policy: throttle only waits
  limiter: RateLimiter<Limits, any>,
  name: Named<Limits>,
  fn: (this: This, ...args: Args) => Result,
  options: ThrottleOptions<Args> = {},
): (this: This, ...args: Args) => Promise<Awaited<Result>> {
  if (typeof limiter !== "object" || limiter === null || typeof limiter.acquire !== "function") throw invalidArgument("throttle", "limiter", "a RateLimiter", limiter);
  if (typeof fn !== "function") throw invalidArgument("throttle", "fn", "a function", fn);
  if (typeof options !== "object" || options === null) throw invalidArgument("throttle", "options", "an object", options);
  for (const field of Object.keys(options)) {
    if (!THROTTLE_OPTIONS.includes(field)) throw wrongArgument("throttle", field, unknownField(field, THROTTLE_OPTIONS, "option"));
  }
  // Own fields only: a polluted Object.prototype.key is never read.
  const field = <T>(name: string): T | undefined => (Object.hasOwn(options, name) ? (options as Record<string, T>)[name] : undefined);
  const key = field<ThrottleOptions<Args>["key"]>("key");
  const count = field<ThrottleOptions<Args>["count"]>("count");
  const maxWait = field<number>("maxWait");
  const signal = field<AbortSignal>("signal");
  if (key !== undefined && typeof key !== "string" && typeof key !== "function") throw invalidArgument("throttle", "key", "a string or a function of the arguments", key);
  if (count !== undefined && typeof count !== "number" && typeof count !== "function") throw invalidArgument("throttle", "count", "a number or a function of the arguments", count);
  return async function throttled(this: This, ...args: Args): Promise<Awaited<Result>> {
    const turn: AcquireOptions = {};
    const keyOf = typeof key === "function" ? key(...args) : key;
    if (keyOf !== undefined) turn.key = keyOf;
    const countOf = typeof count === "function" ? count(...args) : count;
    if (countOf !== undefined) turn.count = countOf;
    if (maxWait !== undefined) turn.maxWait = maxWait;
    if (signal !== undefined) turn.signal = signal;
    await (limiter as unknown as { acquire(name: string, options: AcquireOptions): Promise<unknown> }).acquire(name, turn);
    return await fn.apply(this, args);
  };
}
