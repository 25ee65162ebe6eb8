// The app's schema: ratebound's `rateLimits` table spread in next to the app's own tables.
import { defineSchema, defineTable } from "convex/server";
import { v } from "convex/values";
import { rateLimitTables } from "ratebound/convex";

export default defineSchema({
  ...rateLimitTables,
  messages: defineTable({ user: v.string(), body: v.string() }).index("by_user", ["user"]),
});
