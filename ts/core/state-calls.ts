/**
 * `getValue` and `reset`: calls that read or delete a limit's states rather
 * than decide on them. Both always fail closed, and their code is loaded on
 * first use (an app that only limits never downloads it).
 * @module
 */
import { checkKey, checkName, checkNow } from "./call.js";
import { laneOf } from "./coalesce.js";
import { invalidRequest, mustBe } from "./errors.js";
import { withoutPolicy } from "./failure-policy.js";
import type { Internals } from "./limits.js";
import { limitRefs } from "./stored-limits.js";
import { checkedOptions, own, RESET_OPTIONS, VALUE_OPTIONS, type GetValueOptions, type ResetOptions } from "./options.js";
import type { RateLimitValue } from "./types.js";

const values = () => import("./value.js");

/**
 * The limit's current value (see `RateLimiter.getValue`).
 *
 * @param limiter The limiter's internals.
 * @param name The limit.
 * @param options `key`, `sampleShards`, `config`, as given.
 * @returns `{ value, ts, shard, config }` for the whole limit.
 */
export async function valueOf(limiter: Internals, name: string, options: GetValueOptions | undefined): Promise<RateLimitValue> {
  const checked = checkedOptions(name, options, VALUE_OPTIONS);
  const limitName = checkName(name);
  const key = checkKey(limitName, own(checked, "key"));
  const wanted = own(checked, "sampleShards");
  const config = withoutPolicy(limitName, own(checked, "config"));
  const limit = limiter.resolve(limitName, config);
  // A named limit reports on its stored limit, read with its states.
  const records = limiter.storedLimits && config === undefined ? limitRefs(limitName, key) : undefined;
  if (wanted !== undefined && typeof wanted !== "number") throw invalidRequest(limitName, "sampleShards", mustBe("sampleShards", "an integer >= 1", wanted));
  const now = checkNow(limitName, limiter.now());
  const { getValue } = await values();
  return await limiter.failure.transact((store) => getValue(store, limitName, key, limit, wanted as number | undefined, now, limiter.random, records));
}

/**
 * Deletes the limit's state for a key on every shard (see `RateLimiter.reset`).
 *
 * @param limiter The limiter's internals.
 * @param name The limit.
 * @param options `key`, `config`, as given.
 */
export async function resetKey(limiter: Internals, name: string, options: ResetOptions | undefined): Promise<void> {
  const checked = checkedOptions(name, options, RESET_OPTIONS);
  const limitName = checkName(name);
  const key = checkKey(limitName, own(checked, "key"));
  const limit = limiter.resolve(limitName, withoutPolicy(limitName, own(checked, "config")));
  const now = checkNow(limitName, limiter.now());
  const { reset } = await values();
  await limiter.failure.transact((store) => reset(store, limitName, key, limit, now), [laneOf(limitName, key)]);
  limiter.refusals?.forget(limitName, key);
}
