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
