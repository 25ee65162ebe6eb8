// The component's definition: an app installs it with `app.use(rateLimiter)`. Like
// `@convex-dev/rate-limiter` 0.4, it uses `@convex-dev/batch-worker` (an optional peer dependency of
// ratebound: install it next to ratebound) to apply asynchronous limits' queued updates.
import batchWorker from "@convex-dev/batch-worker/convex.config.js";
import { defineComponent } from "convex/server";

const component = defineComponent("rateLimiter");
component.use(batchWorker);

export default component;
