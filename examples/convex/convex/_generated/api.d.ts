/* Written by hand, as `npx convex codegen` writes it (codegen needs a deployment): typed function references. */
import type * as messages from "../messages.js";
import type * as rateLimits from "../rateLimits.js";
import type { ApiFromModules, FilterApi, FunctionReference } from "convex/server";

declare const fullApi: ApiFromModules<{ messages: typeof messages; rateLimits: typeof rateLimits }>;
/** References to this app's public functions, e.g. `api.messages.send`. */
export declare const api: FilterApi<typeof fullApi, FunctionReference<any, "public">>;
/** References to this app's internal functions. */
export declare const internal: FilterApi<typeof fullApi, FunctionReference<any, "internal">>;
export declare const components: {};
