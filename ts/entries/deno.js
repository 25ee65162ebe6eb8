// Deno: a source-phase import compiles the shipped .wasm with no permissions needed.
import source wasmModule from "./wasm/ratebound.wasm";
import { useModule } from "./core/engine.js";
useModule(wasmModule);
export * from "./index.js";
