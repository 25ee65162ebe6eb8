// The app's own tables. The rate limit state lives in the component's table, not here.
import { defineSchema, defineTable } from "convex/server";
import { v } from "convex/values";

export default defineSchema({
  messages: defineTable({ user: v.string(), body: v.string() }).index("by_user", ["user"]),
  reactions: defineTable({ user: v.string(), emoji: v.string() }),
});
