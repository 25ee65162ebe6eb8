// The test app's schema: ratebound's table spread in, next to the app's own.
import { defineSchema, defineTable } from "convex/server";
import { v } from "convex/values";
import { rateLimitTables } from "ratebound/convex";

export default defineSchema({
  ...rateLimitTables,
  messages: defineTable({ user: v.string(), body: v.string() }),
});
