// The app's limits, defined once. Every decision is made inside the component by ratebound's core.
import { HOUR, MINUTE, RateLimiter } from "ratebound/convex-component";
import { components } from "./_generated/api";
import type { DataModel } from "./_generated/dataModel";

export const rateLimiter = new RateLimiter(
  components.rateLimiter,
  {
    // One message every ~6 s per user, up to 3 in quick succession.
    sendMessage: { kind: "token bucket", rate: 10, period: MINUTE, capacity: 3 },
    // 1000 messages an hour for the whole app, over 4 shards so senders rarely collide.
    allMessages: { kind: "fixed window", rate: 1000, period: HOUR, shards: 4 },
    // 100 reactions a minute for the whole app, queued: reacting never conflicts with other reactions.
    reactions: { kind: "token bucket", rate: 100, period: MINUTE, applyUpdates: "asynchronously" },
  },
  // Decide a reaction without conflicts only while 10 more would still fit: bursts of up to 11
  // reactions never overdraw; closer to the limit, reactions are decided exactly.
  { headroom: { reactions: 10 } },
);

/**
 * For the browser: `getRateLimit` reports a user's `sendMessage` limit (to show when sending will be
 * allowed again), `getServerTime` lets it measure its clock's offset. A real app derives the key from
 * `ctx.auth` instead of trusting the one the client sends.
 */
export const { getRateLimit, getServerTime } = rateLimiter.hookAPI<DataModel>("sendMessage", {
  key: async (_ctx, keyFromClient) => keyFromClient ?? "anonymous",
});
