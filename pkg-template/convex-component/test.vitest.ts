/// <reference types="vite/client" />
/**
 * `ratebound/convex-component/test`: registers ratebound's Convex component (and
 * the `@convex-dev/batch-worker` component it uses) in `convex-test`, as
 * `@convex-dev/rate-limiter/test` does. Shipped as TypeScript source, as the
 * reference ships its own, because `import.meta.glob` needs Vite (vitest
 * transforms a `.ts` file from node_modules, never a `.js` one); the two dots
 * in its name keep Convex's bundler from deploying it.
 * @module
 */
import type { TestConvex } from "convex-test";
import type { GenericSchema, SchemaDefinition } from "convex/server";
import batchWorker from "@convex-dev/batch-worker/test";
import schema from "./schema.js";

/** The component's modules, as `convex-test` loads them (not the app-side client, nor the React hook). */
const modules = import.meta.glob(["./**/*.js", "!./client/**", "!./react.hook.js", "!./**/*.d.ts"]);

/**
 * Registers the component with a `convex-test` instance.
 *
 * @param t The instance, e.g. from calling `convexTest(schema, modules)`.
 * @param name The component's name, as your convex.config.ts installs it (default `rateLimiter`).
 * @returns Nothing; `t` now runs the component's functions.
 * @example
 * import rateLimiter from "ratebound/convex-component/test";
 * const t = convexTest(schema, modules);
 * rateLimiter.register(t);
 */
export function register(t: TestConvex<SchemaDefinition<GenericSchema, boolean>>, name: string = "rateLimiter"): void {
  t.registerComponent(name, schema, modules);
  batchWorker.register(t, `${name}/batchWorker`);
}

export default { register, schema, modules };
