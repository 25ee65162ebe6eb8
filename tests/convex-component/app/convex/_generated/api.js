/* Written by hand, as `npx convex codegen` would (it needs a deployment): function references. */
import { anyApi, componentsGeneric } from "convex/server";

/** References to this app's public functions, e.g. `api.calls.limit`. */
export const api = anyApi;
/** References to this app's internal functions. */
export const internal = anyApi;
/** The installed components: `components.rateLimiter` (and the reference's, `components.reference`). */
export const components = componentsGeneric();
