/**
 * Grants: `limit` with `grant: true` (charged through the store's
 * transaction, answered with a handle) and `settle`. A grant always fails
 * closed: one decided on a fallback could not settle against the store. The
 * grants' code and the full module load on the first grant.
 * @module
 */
import { checkFlag, checkNow, draw, drawMany } from "./call.js";
import { laneOf } from "./coalesce.js";
import type { Probe } from "./decision-hook.js";
import { plan } from "./driver.js";
import { grantsEngine } from "./engine.js";
import { invalidRequest, mustBe } from "./errors.js";
import { withoutPolicy } from "./failure-policy.js";
import { Grant, type GrantResult } from "./grant-handle.js";
import type { Internals } from "./limits.js";
import { checkedOptions, own, refusal, SETTLE_OPTIONS, type LimitFields, type SettleOptions } from "./options.js";
import { ownField } from "./store-call.js";
import { limitRefs } from "./stored-limits.js";
import type { GrantData, RateLimitConfig, SettleResult } from "./types.js";

// Grants are loaded on first use: an app that only limits never downloads them.
// Grants also need the full module: a runtime that loaded the small one loads it then, once.
const grants = () => Promise.all([import("./grant.js"), grantsEngine()]).then(([module, engine]) => ({ ...module, engine }));
const NO_DRAWS: readonly number[] = Object.freeze([]);

/**
 * `limit` with `grant: true`: through the store's transaction, answering with a handle.
 *
 * @param limiter The limiter's internals.
 * @param settler How the handle settles (the limiter's `settle`).
 * @param name The limit.
 * @param given The call's options, read.
 * @param recorded The probe, when a hook is told.
 * @returns The result, with its {@link Grant} when granted.
 */
export function grantCall(
  limiter: Internals,
  settler: (data: GrantData, actual: number, options: SettleOptions | undefined) => Promise<SettleResult>,
  name: string,
  given: LimitFields,
  recorded: Probe | undefined,
): Promise<GrantResult> {
  const config = withoutPolicy(name, given.config);
  const figures = given.figures === undefined ? false : checkFlag(name, "figures", given.figures);
  const call = limiter.call(name, given, config, true);
  plan([call], true, figures); // bad input fails before the store is touched
  if (recorded !== undefined) recorded.calls = [call];
  const local = limiter.refusals?.refuse(call, figures);
  if (local !== undefined) {
    if (recorded !== undefined) {
      recorded.fromCache = true;
      recorded.result = local;
    }
    return Promise.resolve(refusal(call.name, local, given.throws) as GrantResult);
  }
  if (recorded !== undefined) recorded.start = performance.now();
  const idWords = [draw(limiter.random), draw(limiter.random)].map((unit) => Math.floor(unit * 2 ** 32));
  // Its turn on a coalescing store is taken now, in arrival order; the grants' code loads within it.
  const answer = limiter.failure.transact((store) => grants().then(({ charge, engine }) => charge(engine, store, call, idWords, figures)), [laneOf(call.name, call.key)]);
  const inline = config === undefined ? undefined : { config: config as RateLimitConfig };
  const settle = (data: GrantData, actual: number) => settler(data, actual, inline);
  return answer.then((result) => {
    const { grant, ...decided } = result;
    if (recorded !== undefined) {
      recorded.end = performance.now();
      recorded.result = decided;
    }
    limiter.refusals?.remember(call, decided.ok ? { ok: true } : decided);
    refusal(call.name, decided, given.throws);
    if (!decided.ok || grant === undefined) return decided as GrantResult;
    return { ...decided, ok: true, grant: new Grant(grant, settle) };
  });
}

/**
 * Settles a grant from its data (see `RateLimiter.settle`).
 *
 * @param limiter The limiter's internals.
 * @param data The grant's data.
 * @param actual Tokens really used.
 * @param options `config`, for a grant of an inline limit.
 * @returns `{ refunded, charged, unpaid, retryAfter? }`.
 */
export async function settleGrant(limiter: Internals, data: GrantData, actual: number, options: SettleOptions | undefined): Promise<SettleResult> {
  const checked = checkedOptions("settle", options, SETTLE_OPTIONS);
  const inline = own(checked, "config");
  const named = ownField(data, "name")?.[1];
  const { grantInput, settle, engine } = await grants();
  const grant = grantInput(data);
  const config = inline === undefined ? undefined : withoutPolicy(typeof named === "string" ? named : "settle", inline);
  const limit = limiter.resolve(grant.name, config);
  if (typeof actual !== "number") throw invalidRequest(grant.name, "actual", mustBe("actual", "a finite number >= 0", actual));
  const now = checkNow(grant.name, limiter.now());
  const draws = limit.settleDraws === 0 ? NO_DRAWS : drawMany(limiter.random, limit.settleDraws);
  // A named limit's settle decides on the limit stored now, its records read in the same transaction.
  const records = limiter.storedLimits && config === undefined ? limitRefs(grant.name, grant.key) : undefined;
  const settled = await limiter.failure.transact((store) => settle(engine, store, grant, limit, actual, now, draws, records), [laneOf(grant.name, grant.key)]);
  // A refund may end a wait this limiter remembers.
  limiter.refusals?.forget(grant.name, grant.key);
  return settled;
}
