// Installs ratebound's rate limiter component, under the name the app's code uses: components.rateLimiter.
import { defineApp } from "convex/server";
import rateLimiter from "ratebound/convex-component/convex.config";

const app = defineApp();
app.use(rateLimiter);
export default app;
