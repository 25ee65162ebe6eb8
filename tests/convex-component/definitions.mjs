// ratebound's component definition (pkg/convex-component/convex.config.js), loaded as Convex's bundler
// loads it: the bundler stamps every component definition with where it found it, and
// `component.use(batchWorker)` needs the stamp on @convex-dev/batch-worker's definition.
import batchWorker from "@convex-dev/batch-worker/convex.config.js";

batchWorker.componentDefinitionPath = "node_modules/@convex-dev/batch-worker/dist/component";
batchWorker.defaultName = batchWorker._name;

/** ratebound's component definition, as `ratebound/convex-component/convex.config` exports it. */
export const componentConfig = (await import("../../pkg/convex-component/convex.config.js")).default;
