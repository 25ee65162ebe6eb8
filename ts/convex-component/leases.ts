/**
 * Concurrency limits in the component (ratebound's addition): `take` takes
 * `count` slots of a `{ kind: "concurrency", max, lease }` limit and answers the
 * lease's data as a value; `release` gives its slots back and `extend` keeps
 * them longer, each in the mutation's transaction over the component's
 * `rateLimits` table (slot `s` at shard `s` of the limit's name and key). The
 * core decides; a lease's data is all another mutation needs to release it.
 *
 * Errors: `throws: true` turns a refusal into a `ConvexError`
 * `{ kind: "RateLimited", name, retryAfter }`; an extend of a lease that holds
 * no slot any more is a `ConvexError` `{ kind: "LeaseLost", code: "LEASE_LOST", name }`;
 * any other error of the core (a bad count, config or lease) is a `ConvexError`
 * `{ kind: "LeaseFailed", code, name, field, message }`. None writes anything.
 * @module
 */
import { ConvexError, v, type Infer } from "convex/values";
import { RateLimiter, convexStore } from "ratebound/convex";
import type { ConcurrencyConfig, Lease, LeaseResult, RateLimitConfig } from "ratebound";
import { mutation, type DatabaseReader } from "./_generated/server.js";

/** A concurrency limit: at most `max` leases held at once (1 to 64), each for `lease` ms unless released or extended. */
export const concurrencyConfigValidator = v.object({
  kind: v.literal("concurrency"),
  max: v.number(),
  lease: v.number(),
});

/** A lease's data, as `take` answers it: the limit's name and key, the lease's id and the slots it holds. */
export const leaseValidator = v.object({
  name: v.string(),
  key: v.optional(v.string()),
  id: v.number(),
  slots: v.array(v.number()),
});

/** A lease's data. */
export type LeaseData = Infer<typeof leaseValidator>;

/** What `take` answers: the lease's data and when it expires (ms), or the wait until enough slots can be free. */
export const takeReturns = v.union(
  v.object({ ok: v.literal(true), lease: leaseValidator, expiresAt: v.number() }),
  v.object({ ok: v.literal(false), retryAfter: v.number() }),
);

/** What `take` answers. */
export type TakeReturns = Infer<typeof takeReturns>;

/** A limiter over the component's table whose one limit is `name`'s concurrency limit. */
function limiterOver(db: DatabaseReader, name: string, config: Infer<typeof concurrencyConfigValidator>): RateLimiter {
  const limits = { [name]: config as ConcurrencyConfig } as unknown as Record<string, RateLimitConfig>;
  return new RateLimiter(convexStore(db), limits, { random: () => Math.random() });
}

/** A lease's data with no `key` field when it has none (Convex values hold no `undefined`). */
function dataOf(lease: Lease): LeaseData {
  const { name, key, id, slots } = lease.toJSON();
  return key === undefined ? { name, id, slots: [...slots] } : { name, key, id, slots: [...slots] };
}

/** The core's coded errors (a refusal's `ConvexError` passes as it is) as `ConvexError`s: a plain error's code does not cross the component's boundary. */
async function coded<T>(name: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof ConvexError) throw error;
    const { code, field, message } = error as { code?: unknown; field?: unknown; message?: unknown };
    if (code === "LEASE_LOST") throw new ConvexError({ kind: "LeaseLost", code, name });
    if (typeof code === "string") {
      throw new ConvexError({ kind: "LeaseFailed", code, name, ...(typeof field === "string" ? { field } : {}), message: String(message) });
    }
    throw error;
  }
}

/** Takes `count` slots (default 1) for a new lease, or refuses with the wait until enough can be free. */
export const take = mutation({
  args: { name: v.string(), key: v.optional(v.string()), count: v.optional(v.number()), throws: v.optional(v.boolean()), config: concurrencyConfigValidator },
  returns: takeReturns,
  handler: (ctx, { name, config, ...options }): Promise<TakeReturns> =>
    coded(name, async () => {
      const answer = (await limiterOver(ctx.db, name, config).limit(name, options)) as unknown as LeaseResult;
      return answer.ok ? { ok: true as const, lease: dataOf(answer.lease), expiresAt: answer.lease.expiresAt } : { ok: false as const, retryAfter: answer.retryAfter };
    }),
});

/** Gives a lease's slots back: how many (0 for a second release, an expired lease or a forged one). */
export const release = mutation({
  args: { lease: leaseValidator, config: concurrencyConfigValidator },
  returns: v.object({ released: v.number() }),
  handler: (ctx, { lease, config }) => coded(lease.name, () => limiterOver(ctx.db, lease.name, config).lease(lease).release()),
});

/** Keeps a lease's slots until `ms` from now at least (never shortens); `LeaseLost` when it holds none any more. */
export const extend = mutation({
  args: { lease: leaseValidator, ms: v.number(), config: concurrencyConfigValidator },
  returns: v.object({ expiresAt: v.number() }),
  handler: (ctx, { lease, ms, config }) => coded(lease.name, () => limiterOver(ctx.db, lease.name, config).lease(lease).extend(ms)),
});
