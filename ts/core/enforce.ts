/**
 * `limit` and `check` on a rate limit: the call's arguments checked once, then
 * decided on the shortest road its store and options allow: one crossing on a
 * slab, the driver straight on a plain store, else through the failure policy
 * (a fallback, a key's batch, a store's port), enforced or as a dry run.
 * @module
 */
import type { RateLimitResult, RateLimitStore, GrantData, SettleResult } from "./types.js";
import { checkCount, checkFlag, checkKey, checkName, checkNow, drawMany } from "./call.js";
import type { Compiled } from "./config.js";
import { isThenable, plan, type BatchAnswer, type Call, type Decided } from "./driver.js";
import { runRemote } from "./remote.js";
import { runOne } from "./run-one.js";
import { checkOptions, limitFields, refusal, type LimitFields, type LimitOptions, type SettleOptions } from "./options.js";
import { asDryRun, enforcing } from "./dry-run.js";
import type { FallbackLimiter, Policy as StorePolicy } from "./failure-policy.js";
import type { Probe } from "./decision-hook.js";
import type { SlabStore } from "./slab-store.js";
import { inSlab, type InTable } from "./slab-road.js";
import type { Internals } from "./limits.js";
import { isBatchAnswer, isDecided, only, shaped } from "./decided.js";
import { grantCall } from "./granting.js";
import { limitRefs } from "./stored-limits.js";
import type { Leases } from "./leasing.js";

const NO_DRAWS: readonly number[] = Object.freeze([]);

/** What `limit` and `check` take of their `RateLimiter`, beside its internals. */
export interface Road {
  readonly internals: Internals;
  readonly store: RateLimitStore;
  /** Whether a call may go straight to the driver: the store neither decides nor has a transaction. */
  readonly direct: boolean;
  /** Whether the store is a `SlabStore` (a `MemoryStore`): an unsharded `limit`/`check` on it is one crossing. */
  readonly slab: boolean;
  /** On a slab, each unsharded named limit's config and its id in the core's config table. */
  readonly inTable: InTable;
  /** Named concurrency limits, and the calls on them. */
  readonly leases: Leases;
  /** How a grant's handle settles (the limiter's `settle`, as overridden). */
  settle(data: GrantData, actual: number, options: SettleOptions | undefined): Promise<SettleResult>;
}

/**
 * A call's arguments, each checked once (name, key, count, reserve, config, now), and its random numbers.
 *
 * @param limiter The limiter's internals.
 * @param limits Its named limits (a named limit's name was checked when the limiter was made).
 * @param name The limit.
 * @param given `key`, `count`, `reserve`, as given.
 * @param config The inline config (`undefined`: the named limit's).
 * @param write `limit` (true) or `check`.
 * @returns The call, with its stored limits' records when the limiter reads them.
 */
export function checkCall(
  limiter: Internals,
  limits: ReadonlyMap<string, Compiled>,
  name: unknown,
  given: { key?: unknown; count?: unknown; reserve?: unknown },
  config: unknown,
  write: boolean,
): Call {
  const checked = config === undefined && typeof name === "string" && limits.has(name) ? name : checkName(name);
  const key = checkKey(checked, given.key);
  const count = checkCount(checked, given.count);
  const reserve = checkFlag(checked, "reserve", given.reserve);
  const limit = limiter.resolve(checked, config);
  const now = checkNow(checked, limiter.now());
  const draws = limit.draws === 0 ? NO_DRAWS : drawMany(limiter.random, limit.draws);
  // A named limit's stored limits are read with its states; an inline config is the call's own.
  if (limiter.storedLimits && config === undefined) return { name: checked, key, limit, count, reserve, write, now, draws, records: limitRefs(checked, key) };
  return { name: checked, key, limit, count, reserve, write, now, draws };
}

/**
 * `limit` (write) or `check`, enforced or as a dry run (the limit's `dryRun` or the call's: `dry-run.ts`).
 *
 * @param road What the call takes of its limiter.
 * @param name The limit.
 * @param options The call's options, as given.
 * @param write `limit` (true) or `check`.
 * @param recorded The probe, when a hook is told.
 * @returns The result (a rejected Promise on bad input, never a throw).
 */
export function decide(road: Road, name: string, options: LimitOptions | undefined, write: boolean, recorded: Probe | undefined): Promise<RateLimitResult> {
  try {
    const leased = road.leases.decide(name, options, write);
    if (leased !== undefined) return leased;
    const given = limitFields(name, options);
    const { config, policy, dryRun } = road.internals.failure.limitPolicy(name, given.config);
    if (!dryRun && (given.dryRun === undefined || !checkFlag(checkName(name), "dryRun", given.dryRun))) return enforce(road, name, options, given, config, policy, write, recorded);
    if (recorded !== undefined) recorded.dryRun = [true];
    return enforce(road, name, options, enforcing(given), config, policy, write, recorded).then(asDryRun);
  } catch (error) {
    return Promise.reject(error);
  }
}

/** `limit` (write) or `check`, enforced. Not an async function: a synchronous store answers with one settled Promise. */
function enforce(road: Road, name: string, options: LimitOptions | undefined, given: LimitFields, config: unknown, policy: StorePolicy, write: boolean, recorded: Probe | undefined): Promise<RateLimitResult> {
  try {
    const internals = road.internals;
    const failure = internals.failure;
    if (given.grant !== undefined) {
      if (!write) checkOptions(name, options, ["key", "count", "reserve", "throws", "config", "figures", "dryRun"]);
      if (checkFlag(checkName(name), "grant", given.grant)) {
        return grantCall(internals, (data, actual, inline) => road.settle(data, actual, inline), name, given, recorded) as Promise<RateLimitResult>;
      }
    }
    const figures = given.figures === undefined ? false : checkFlag(typeof name === "string" ? name : "", "figures", given.figures);
    if (road.slab && recorded === undefined && failure.isPlain(policy)) {
      const answer = inSlab(internals, road.store as SlabStore, road.inTable, name, given, config, write, figures);
      if (answer !== undefined) return answer;
    }
    const call = internals.call(name, given, config, write);
    const refusals = internals.refusals;
    if (recorded === undefined && refusals === undefined && road.direct && failure.isPlain(policy)) {
      // No transaction, no policy to apply, nothing remembered: a synchronous store is decided
      // synchronously, and nothing is allocated for the answer but the result.
      const answer = runOne(road.store, call, figures);
      if (isThenable(answer)) return answer.then((decided) => refusal(call.name, shaped(decided), given.throws));
      return Promise.resolve(refusal(call.name, shaped(answer), given.throws));
    }
    // Bad input fails here, before the store is touched or a refusal is remembered, whatever the policy.
    const planned = plan([call], true, figures);
    if (recorded !== undefined) {
      recorded.calls = [call];
      recorded.policy = policy;
    }
    if (refusals !== undefined) {
      const local = refusals.refuse(call, figures);
      if (local !== undefined) {
        if (recorded !== undefined) {
          recorded.fromCache = true;
          recorded.result = local;
        }
        return Promise.resolve(refusal(call.name, local, given.throws));
      }
    }
    if (recorded !== undefined) recorded.start = performance.now();
    const answered = (answer: Decided | BatchAnswer | RateLimitResult) => {
      const result = isBatchAnswer(answer) ? shaped(only(answer)) : isDecided(answer) ? shaped(answer) : answer;
      if (recorded !== undefined) {
        recorded.end = performance.now();
        recorded.result = result;
        if (isBatchAnswer(answer) && answer.batchSize !== undefined) recorded.batchSize = answer.batchSize;
      }
      refusals?.remember(call, result);
      return refusal(call.name, result, given.throws);
    };
    if (road.direct && failure.isPlain(policy)) {
      const answer = runOne(road.store, call, figures);
      return isThenable(answer) ? answer.then(answered) : Promise.resolve(answered(answer));
    }
    // The fallback decides too (on memory), so it answers the figures asked, as the store's decision would.
    const fallbackOptions = { key: call.key, count: given.count, reserve: given.reserve, config, ...(figures ? { figures } : {}) } as LimitOptions;
    const fallback = (limiter: FallbackLimiter) => (write ? limiter.limit(name, fallbackOptions) : limiter.check(name, fallbackOptions));
    // A store that cannot decide next to its data: the call joins its key's batch (`coalesce.ts`).
    if (failure.coalesces) return failure.coalesce(call, figures, policy, fallback, recorded).then(answered);
    // A sliding window is never sent to a store's port: it reads, decides and writes in the store's transaction.
    const remote = internals.remote && !call.limit.sliding;
    const answer = failure.run<Decided | BatchAnswer | RateLimitResult>(
      policy,
      (store) => (remote ? runRemote(store as Required<RateLimitStore>, planned) : runOne(store, call, figures)),
      fallback,
      remote,
    );
    return answer.then(answered);
  } catch (error) {
    return Promise.reject(error);
  }
}
