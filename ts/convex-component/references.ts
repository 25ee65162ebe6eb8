/**
 * The references this component's own code makes to its functions and to the
 * component it uses, by name. `_generated/api.ts` types every module's
 * functions by importing the modules, as Convex's codegen does; a module that
 * took its references from there would import itself round that loop. By
 * name, no module imports another to call it.
 * @module
 */
import { componentsGeneric, makeFunctionReference, type FunctionReference } from "convex/server";
import type { ComponentApi } from "@convex-dev/batch-worker/_generated/component.js";

/** `lib.clearAll`, which reschedules itself until the table is empty. */
export const clearAllReference = makeFunctionReference<"mutation", { before?: number }, null>("lib:clearAll");

/** `worker.getBatch` and `worker.processBatch`, the batch worker's query and mutation. */
export const getBatchReference = makeFunctionReference<"query">("worker:getBatch") as unknown as FunctionReference<"query", "internal">;
export const processBatchReference = makeFunctionReference<"mutation">("worker:processBatch") as unknown as FunctionReference<"mutation", "internal">;

/** The component this one uses: `@convex-dev/batch-worker`, installed as `batchWorker`. */
export const components = componentsGeneric() as unknown as { batchWorker: ComponentApi<"batchWorker"> };
