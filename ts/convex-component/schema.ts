// The component's tables as `@convex-dev/rate-limiter` 0.4 defines them, so its rows keep
// working: `rateLimits` (the states, as in 0.3) and `pendingUpdates` (asynchronous limits' queued
// consumption and resets, applied in commit order by ./worker.ts), plus an index of each limit's queue.
import { defineSchema, defineTable } from "convex/server";
import { v } from "convex/values";
import { rateLimitTables } from "ratebound/convex";
import { vPendingUpdate } from "./validators.js";

export default defineSchema({
  ...rateLimitTables,
  pendingUpdates: defineTable({
    update: vPendingUpdate,
    updatedAt: v.commitTs(),
  })
    .index("updatedAt", ["updatedAt"])
    // ratebound's addition: one limit's queue, for decisions that count what is still queued.
    .index("limit", ["update.name", "update.key"]),
});
