// The test app's own table; the rate limit state lives in the component's.
import { defineSchema, defineTable } from "convex/server";
import { v } from "convex/values";

export default defineSchema({
  messages: defineTable({ user: v.string(), body: v.string() }),
});
