// Browsers and bundlers: the .wasm inlined (base64), compiled synchronously: no second request,
// no top-level await, no URL for a bundler to rewrite or a user to copy a file to.
import { base64 } from "./wasm/ratebound.base64.js";
import { useInlined } from "./core/engine.js";
useInlined(base64);
export * from "./index.js";
