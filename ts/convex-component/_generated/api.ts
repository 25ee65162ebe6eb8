/* Written by hand, as `npx convex codegen` would write it (codegen needs a deployment): references to the component's own functions and to the components it uses. */
import type * as grants from "../grants.js";
import type * as leases from "../leases.js";
import type * as lib from "../lib.js";
import type * as references from "../references.js";
import type * as time from "../time.js";
import type * as worker from "../worker.js";
import type { ApiFromModules, FilterApi, FunctionReference } from "convex/server";
import { anyApi } from "convex/server";

declare const fullApi: ApiFromModules<{ grants: typeof grants; leases: typeof leases; lib: typeof lib; references: typeof references; time: typeof time; worker: typeof worker }>;

/** References to the component's public functions, e.g. `api.lib.clearAll`. */
export const api: FilterApi<typeof fullApi, FunctionReference<any, "public">> = anyApi as any;
/** References to the component's internal functions, e.g. `internal.worker.getBatch`. */
export const internal: FilterApi<typeof fullApi, FunctionReference<any, "internal">> = anyApi as any;
/** The component it uses: `@convex-dev/batch-worker`, installed as `batchWorker`. */
export { components } from "../references.js";
