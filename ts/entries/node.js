// Node and Bun: the .wasm inlined (base64), compiled synchronously; nothing read from disk, so
// bundlers (webpack, Turbopack, Vite, vitest) that rewrite paths and URLs have none to rewrite.
import { base64 } from "./wasm/ratebound.base64.js";
import { useInlined } from "./core/engine.js";
useInlined(base64);
export * from "./index.js";
