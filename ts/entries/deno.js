// Deno: a source-phase import compiles the shipped .wasm with no permissions needed.
import source wasmModule from "./wasm/ratebound_bg.wasm";
import { initSync } from "./wasm/ratebound.js";
initSync({ module: wasmModule });
export * from "./index.js";
