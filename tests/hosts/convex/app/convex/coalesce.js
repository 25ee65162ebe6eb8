// Convex functions of the coalescing tests (issue 22 item 3): the traffic of
// tests/hosts/coalesce-traffic.mjs made at once inside ONE mutation (a `Promise.all` of calls on
// one key, all on the function's ctx.db), then one at a time on a fresh key in the same mutation.
import { v } from "convex/values";
import { RateLimiter, convexStore } from "ratebound/convex";
import * as traffic from "../../../coalesce-traffic.mjs";
import { mutation } from "./_generated/server.js";

/** `ctx.db` with its writes counted: the calls go to the real database. */
function countingDb(db, seen) {
  return {
    query: (table) => db.query(table),
    get: (id) => db.get(id),
    insert: (table, value) => (seen.writes++, db.insert(table, value)),
    patch: (id, value) => (seen.writes++, db.patch(id, value)),
    replace: (id, value) => (seen.writes++, db.replace(id, value)),
    delete: (id) => (seen.writes++, db.delete(id)),
  };
}

/**
 * `n` calls at once on `key`: through one convexStore (coalesced), or with `coalesce: false`
 * through a store of its own per call (each over its own view of the same ctx.db, so nothing
 * shares their turns). Answers what both runs answered, the writes the concurrent run made, and
 * the rows each run left.
 */
export const atOnce = mutation({
  args: { n: v.number(), key: v.string(), mixed: v.optional(v.boolean()), name: v.optional(v.string()), coalesce: v.optional(v.boolean()) },
  handler: async (ctx, { n, key, mixed = false, name = "hot", coalesce = true }) => {
    const seen = { writes: 0 };
    const now = traffic.steppingClock();
    const calls = mixed ? traffic.mixedCalls(n, key, name) : traffic.plainCalls(n, key, name);
    const shared = new RateLimiter(convexStore(countingDb(ctx.db, seen)), traffic.COALESCE_LIMITS, { now });
    const limiterFor = coalesce ? () => shared : () => new RateLimiter(convexStore(countingDb(ctx.db, seen)), traffic.COALESCE_LIMITS, { now });
    const answers = await traffic.atOnce(limiterFor, calls);
    const writes = seen.writes;
    const serialLimiter = new RateLimiter(convexStore(ctx.db), traffic.COALESCE_LIMITS, { now: traffic.steppingClock() });
    const serial = await traffic.oneAtATime(() => serialLimiter, traffic.withKey(calls, `${key}-serial`));
    const rows = async (of) =>
      (await ctx.db.query("rateLimits").collect()).filter((row) => row.name === name && row.key === of).map(({ shard, value, ts }) => ({ shard, value, ts }));
    return { answers, serial, writes, rows: await rows(key), serialRows: await rows(`${key}-serial`) };
  },
});
