/* Written by hand, as `npx convex codegen` would write it (codegen needs a deployment): references to the component's own functions. */
import type * as lib from "../lib.js";
import type * as time from "../time.js";
import type { ApiFromModules, FilterApi, FunctionReference } from "convex/server";
import { anyApi, componentsGeneric } from "convex/server";

declare const fullApi: ApiFromModules<{ lib: typeof lib; time: typeof time }>;

/** References to the component's public functions, e.g. `api.lib.clearAll`. */
export const api: FilterApi<typeof fullApi, FunctionReference<any, "public">> = anyApi as any;
/** References to the component's internal functions (it has none). */
export const internal: FilterApi<typeof fullApi, FunctionReference<any, "internal">> = anyApi as any;
/** The component uses no components of its own. */
export const components = componentsGeneric() as unknown as {};
