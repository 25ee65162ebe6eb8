// Browsers and bundlers: the small .wasm (no grants) inlined (base64), compiled synchronously: no
// second request, no top-level await, no URL for a bundler to rewrite. A grant loads the full one.
import { base64 } from "./wasm/ratebound-lite.base64.js";
import { useInlined } from "./core/engine.js";
useInlined(base64, () => import("./wasm/ratebound.base64.js").then((full) => full.base64));
export * from "./index.js";
