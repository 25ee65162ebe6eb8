// The component's one table, exactly as `@convex-dev/rate-limiter` defines it, so its rows keep working.
import { defineSchema } from "convex/server";
import { rateLimitTables } from "ratebound/convex";

export default defineSchema({ ...rateLimitTables });
