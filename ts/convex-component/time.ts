// The server's clock, for browsers that estimate their offset from it (as the reference's `useRateLimit` does).
import { v } from "convex/values";
import { mutation } from "./_generated/server.js";

/**
 * The server's current time, in milliseconds since the epoch. A mutation, so
 * that it is never served from a query cache.
 *
 * @returns `Date.now()` on the server.
 */
export const getServerTime = mutation({
  args: {},
  returns: v.number(),
  handler: async (): Promise<number> => Date.now(),
});
