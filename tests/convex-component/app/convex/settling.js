// The test app's grant functions (tests/convex-component/settle.spec.mjs): the component's
// `rateLimitWithGrant` and `settle` through the app-side client, with the limits of
// tests/settle/scenarios.mjs for both algorithms (a day's period: the component reads the clock).
import { v } from "convex/values";
import { DAY, RateLimiter } from "ratebound/convex-component";
import { settleLimits } from "../../../settle/scenarios.mjs";
import { api, components } from "./_generated/api.js";
import { mutation, query } from "./_generated/server.js";

const limiters = {
  "token bucket": new RateLimiter(components.rateLimiter, settleLimits("token bucket", DAY)),
  "fixed window": new RateLimiter(components.rateLimiter, settleLimits("fixed window", DAY)),
};
const kind = v.union(v.literal("token bucket"), v.literal("fixed window"));

/** `limit` with the options given (`grant: true` answers the grant's data). */
export const limit = mutation({
  args: { kind, name: v.string(), options: v.any() },
  handler: (ctx, { kind, name, options }) => limiters[kind].limit(ctx, name, options),
});

/** `settle` of a grant's data. */
export const settle = mutation({
  args: { kind, data: v.any(), actual: v.number(), config: v.optional(v.any()) },
  handler: (ctx, { kind, data, actual, config }) => limiters[kind].settle(ctx, data, actual, config === undefined ? undefined : { config }),
});

/** `getValue`. */
export const getValue = query({
  args: { kind, name: v.string(), options: v.any() },
  handler: (ctx, { kind, name, options }) => limiters[kind].getValue(ctx, name, options),
});

/** Takes an estimate with a grant and schedules the settle for when the work is done, `after` ms later. */
export const startJob = mutation({
  args: { kind, key: v.string(), estimate: v.number(), actual: v.number(), after: v.number() },
  handler: async (ctx, { kind, key, estimate, actual, after }) => {
    const granted = await limiters[kind].limit(ctx, "llm", { key, count: estimate, reserve: true, grant: true });
    if (granted.ok) await ctx.scheduler.runAfter(after, api.settling.finishJob, { kind, grant: granted.grant, actual });
    return granted;
  },
});

/** The scheduled end of a job: settles its grant at what it really used. */
export const finishJob = mutation({
  args: { kind, grant: v.any(), actual: v.number() },
  handler: (ctx, { kind, grant, actual }) => limiters[kind].settle(ctx, grant, actual),
});

/** Settles, then throws: the component's settle must roll back with the app's mutation. */
export const settleThenThrow = mutation({
  args: { kind, data: v.any(), actual: v.number() },
  handler: async (ctx, { kind, data, actual }) => {
    await limiters[kind].settle(ctx, data, actual);
    throw new Error("the app failed after settling");
  },
});
