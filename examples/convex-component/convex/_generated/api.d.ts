/* Written by hand, as `npx convex codegen` writes it (codegen needs a deployment): typed function references. */
import type * as messages from "../messages.js";
import type * as rateLimits from "../rateLimits.js";
import type { ApiFromModules, FilterApi, FunctionReference } from "convex/server";
import type { ComponentApi } from "ratebound/convex-component";

declare const fullApi: ApiFromModules<{ messages: typeof messages; rateLimits: typeof rateLimits }>;
export declare const api: FilterApi<typeof fullApi, FunctionReference<any, "public">>;
export declare const internal: FilterApi<typeof fullApi, FunctionReference<any, "internal">>;
/** The installed components: ratebound's, as `rateLimiter`. */
export declare const components: { rateLimiter: ComponentApi<"rateLimiter"> };
