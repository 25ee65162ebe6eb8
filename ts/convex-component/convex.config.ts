// The component's definition: an app installs it with `app.use(rateLimiter)`.
import { defineComponent } from "convex/server";

export default defineComponent("rateLimiter");
