/* Written by hand, as `npx convex codegen` writes it (codegen needs a deployment): function references. */
import { anyApi } from "convex/server";

/** References to this app's public functions, e.g. `api.messages.send`. */
export const api = anyApi;
/** References to this app's internal functions. */
export const internal = anyApi;
export const components = {};
