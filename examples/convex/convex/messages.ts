// The app's own functions: sending a message takes a token in the same transaction as the insert,
// so a refused or failed send leaves nothing behind.
import { v } from "convex/values";
import { mutation, query } from "./_generated/server";
import { rateLimiter } from "./rateLimits";

/** Sends a message; throws a ConvexError `{ kind: "RateLimited", name, retryAfter }` when too fast. */
export const send = mutation({
  args: { user: v.string(), body: v.string() },
  handler: async (ctx, { user, body }) => {
    await rateLimiter(ctx.db).limit("sendMessage", { key: user, throws: true });
    return await ctx.db.insert("messages", { user, body });
  },
});

/** A user's messages, oldest first. */
export const list = query({
  args: { user: v.string() },
  handler: async (ctx, { user }) =>
    (await ctx.db.query("messages").withIndex("by_user", (q) => q.eq("user", user)).collect()).map((message) => message.body),
});
