/* Written by hand, as `npx convex codegen` would (it needs a deployment): function references. */
import { anyApi } from "convex/server";

/** References to this app's public functions, e.g. `api.limits.limit`. */
export const api = anyApi;
/** References to this app's internal functions. */
export const internal = anyApi;
