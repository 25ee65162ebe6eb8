/**
 * Grants in the component (ratebound's addition; the reference has only a
 * `credit` capped at capacity): `rateLimitWithGrant` takes tokens and answers
 * the grant's data, and `settle` gives back what was not used (never more than
 * the charge could still hold) or takes the extra, in the component's own
 * transaction. A grant settles once: a second settle is a `ConvexError`
 * `{ kind: "GrantSettled", code: "GRANT_SETTLED", name }`; any other error of
 * the core (a bad actual or grant: `INVALID_REQUEST`) is a `ConvexError`
 * `{ kind: "SettleFailed", code, name, message }`, and writes nothing.
 * @module
 */
import { ConvexError, v } from "convex/values";
import { RateLimiter, convexStore } from "ratebound/convex";
import type { GrantData, SettleResult } from "ratebound";
import { mutation, type DatabaseReader } from "./_generated/server.js";
import { configValidator, coreConfig, rateLimitArgs, type ValidatedConfig } from "./validators.js";

/** A grant's data, as `rateLimitWithGrant` answers it. */
export const grantValidator = v.object({
  name: v.string(),
  key: v.optional(v.string()),
  id: v.string(),
  count: v.number(),
  chargedAt: v.number(),
  shards: v.array(v.object({ shard: v.number(), count: v.number(), value: v.number(), ts: v.number(), refunded: v.number() })),
});

/** What `settle` answers. */
export const settleReturns = v.object({
  refunded: v.number(),
  charged: v.number(),
  unpaid: v.number(),
  retryAfter: v.optional(v.number()),
});

/** What `rateLimitWithGrant` answers: a granted result carries the grant's data. */
export const grantReturns = v.union(
  v.object({ ok: v.literal(true), retryAfter: v.optional(v.number()), grant: grantValidator }),
  v.object({ ok: v.literal(false), retryAfter: v.number() }),
);

function limiterOver(db: DatabaseReader): RateLimiter {
  return new RateLimiter(convexStore(db), {}, { random: () => Math.random() });
}

/** Grants settle against the component's table: an asynchronously applied limit has none to settle on. */
function mustBeTransactional(name: string, config: ValidatedConfig): void {
  if (config.applyUpdates === "asynchronously") {
    throw new Error(`Rate limit "${name}": grants need applyUpdates "transactionally" (the default); this limit applies its updates asynchronously`);
  }
}

/** `rateLimit` that answers the grant's data when granted, to settle later with `settle`. */
export const rateLimitWithGrant = mutation({
  args: rateLimitArgs,
  returns: grantReturns,
  handler: async (ctx, { name, config, ...options }) => {
    mustBeTransactional(name, config);
    const result = await limiterOver(ctx.db).limit(name, { ...options, config: coreConfig(config), grant: true });
    return result.ok ? { ok: true as const, ...(result.retryAfter === undefined ? {} : { retryAfter: result.retryAfter }), grant: result.grant.data } : result;
  },
});

/** Settles a grant at what was really used (0 cancels it). */
export const settle = mutation({
  args: { grant: grantValidator, actual: v.number(), config: configValidator },
  returns: settleReturns,
  handler: async (ctx, { grant, actual, config }): Promise<SettleResult> => {
    mustBeTransactional(grant.name, config);
    try {
      return await limiterOver(ctx.db).settle(grant as GrantData, actual, { config: coreConfig(config) });
    } catch (error) {
      const { code, message } = error as { code?: unknown; message?: unknown };
      if (code === "GRANT_SETTLED") {
        throw new ConvexError({ kind: "GrantSettled", code: "GRANT_SETTLED", name: grant.name });
      }
      // A plain error's code does not cross the component's boundary: a bad actual or grant
      // (INVALID_REQUEST) and the core's other coded errors travel as the ConvexError's data.
      if (typeof code === "string") throw new ConvexError({ kind: "SettleFailed", code, name: grant.name, message: String(message) });
      throw error;
    }
  },
});
