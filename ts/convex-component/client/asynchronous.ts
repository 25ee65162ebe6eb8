/**
 * Limits with `applyUpdates: "asynchronously"`, as the reference decides them:
 * checked on a stale snapshot (the mutation records no read of the limit, so
 * its callers never conflict) and their consumption queued for the
 * component's worker. With `headroom` (the client's `RateLimiterOptions`), a
 * call that could not also grant `headroom` more tokens is decided exactly
 * instead, in a transaction (docs/convex.md: Asynchronous updates).
 * @module
 */
import type { ComponentApi } from "../_generated/component.js";
import type { PendingUpdate, RateLimitArgs, RateLimitReturns } from "../validators.js";
import { runStaleQuery, type RunMutationCtx, type RunQueryCtx } from "./ctx.js";

/**
 * What `limit` would answer for an asynchronous limit, on a stale snapshot.
 *
 * @param ctx A ctx with `runQuery`.
 * @param component The installed component.
 * @param args The call, with its config.
 * @param headroom The limit's headroom in tokens, if it has one: the check then counts what is queued.
 * @returns The limit's answer.
 */
export async function checkAsynchronous(ctx: RunQueryCtx, component: ComponentApi, args: RateLimitArgs, headroom: number | undefined): Promise<RateLimitReturns> {
  if (headroom !== undefined) {
    const status = await runStaleQuery(ctx, component.lib.checkQueuedRateLimit, args);
    // A refusal always waits; `retryAfter: 0` says the count can never be granted: checkRateLimit throws why.
    if (status.ok || status.retryAfter > 0) return status;
  }
  return runStaleQuery(ctx, component.lib.checkRateLimit, args);
}

/**
 * Takes tokens from an asynchronous limit: checked on a stale snapshot and
 * queued when granted; with `headroom`, decided exactly near the bottom of the limit.
 *
 * @param ctx A mutation's (or action's) ctx.
 * @param component The installed component.
 * @param args The call, with its config.
 * @param headroom The limit's headroom in tokens, if it has one.
 * @returns The limit's answer.
 */
export async function limitAsynchronous(ctx: RunMutationCtx, component: ComponentApi, args: RateLimitArgs, headroom: number | undefined): Promise<RateLimitReturns> {
  if (headroom === undefined) {
    // The reference's asynchronous path: check the stored state on a stale snapshot, then queue.
    const status = await runStaleQuery(ctx, component.lib.checkRateLimit, args);
    if (status.ok) await ctx.runMutation(component.lib.enqueueUpdates, { updates: [consumption(args)] });
    return status;
  }
  // The fast path: the limit, with what is queued, could grant count + headroom (no debt) on a stale snapshot.
  const fast = await runStaleQuery(ctx, component.lib.checkQueuedRateLimit, {
    ...args,
    count: (args.count ?? 1) + headroom,
    reserve: false,
    throws: false,
  });
  if (fast.ok && fast.retryAfter === undefined) {
    await ctx.runMutation(component.lib.enqueueUpdates, { updates: [consumption(args)] });
    return { ok: true };
  }
  return ctx.runMutation(component.lib.queuedRateLimit, args);
}

/** The queued consumption of a granted asynchronous call, at the caller's clock. */
function consumption({ name, key, count, config }: RateLimitArgs): PendingUpdate {
  return { kind: "consume", name, key, count: count ?? 1, config, ts: Date.now() };
}
