// The test app installs ratebound's component under the reference's name, `rateLimiter`.
import { defineApp } from "convex/server";
import rateLimiter from "ratebound/convex-component/convex.config";

const app = defineApp();
app.use(rateLimiter);
export default app;
