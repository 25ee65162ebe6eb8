// The functions of @convex-dev/rate-limiter's component, registered in this app against the same
// `rateLimits` table: data written by the component must read the same through ratebound, and back.
export { checkRateLimit, getValue, rateLimit, resetRateLimit } from "../../../../../node_modules/@convex-dev/rate-limiter/dist/component/lib.js";
