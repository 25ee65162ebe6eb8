// Sending a message takes a token from the user's limit and the app's in the same transaction as
// the insert: a refused or failed send leaves nothing behind.
import { v } from "convex/values";
import { mutation, query } from "./_generated/server";
import { rateLimiter } from "./rateLimits";

/** Sends a message; throws a ConvexError `{ kind: "RateLimited", name, retryAfter }` when too fast. */
export const send = mutation({
  args: { user: v.string(), body: v.string() },
  handler: async (ctx, { user, body }) => {
    await rateLimiter.limit(ctx, "sendMessage", { key: user, throws: true });
    await rateLimiter.limit(ctx, "allMessages", { throws: true });
    return await ctx.db.insert("messages", { user, body });
  },
});

/**
 * Reacts to a message under the app-wide `reactions` limit, applied asynchronously: the limit is
 * checked on a stale snapshot and the reaction's token is queued for the component's worker, so
 * concurrent reactions never conflict (docs/convex.md: Asynchronous updates).
 */
export const react = mutation({
  args: { user: v.string(), emoji: v.string() },
  handler: async (ctx, { user, emoji }) => {
    const status = await rateLimiter.limit(ctx, "reactions");
    if (!status.ok) return status;
    await ctx.db.insert("reactions", { user, emoji });
    return status;
  },
});

/** Whether `user` may send now, without taking anything. */
export const canSend = query({
  args: { user: v.string() },
  handler: async (ctx, { user }) => await rateLimiter.check(ctx, "sendMessage", { key: user }),
});

/** A user's messages, oldest first. */
export const list = query({
  args: { user: v.string() },
  handler: async (ctx, { user }) =>
    (await ctx.db.query("messages").withIndex("by_user", (q) => q.eq("user", user)).collect()).map((message) => message.body),
});
