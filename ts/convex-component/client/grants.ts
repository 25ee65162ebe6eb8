/**
 * The client's side of grants: a limit taken with `grant: true` runs the
 * component's `rateLimitWithGrant`, and `settle` its `settle` mutation.
 * @module
 */
import type { GenericDataModel, GenericMutationCtx } from "convex/server";
import type { ComponentApi } from "../_generated/component.js";
import type { GrantData, SettleResult } from "ratebound";
import type { RateLimitArgs, RateLimitConfig } from "../validators.js";

export type { GrantData };

type RunMutationCtx = Pick<GenericMutationCtx<GenericDataModel>, "runMutation">;

/** What `limit` answers with `grant: true`. */
export type GrantReturns = { ok: true; retryAfter?: number; grant: GrantData } | { ok: false; retryAfter: number };

/** What `settle` answers: tokens given back, taken beyond the estimate, left unpaid by `maxReserved`, and the debt's wait. */
export type SettleReturns = SettleResult;

/** Runs `rateLimitWithGrant` with the limit's arguments. */
export function limitWithGrant(ctx: RunMutationCtx, component: ComponentApi, args: RateLimitArgs): Promise<GrantReturns> {
  return ctx.runMutation(component.grants.rateLimitWithGrant, args);
}

/** Runs `settle` for a grant's data under the limit's config. */
export function settleGrant(ctx: RunMutationCtx, component: ComponentApi, grant: GrantData, actual: number, config: RateLimitConfig): Promise<SettleReturns> {
  return ctx.runMutation(component.grants.settle, { grant, actual, config });
}
