// Cloudflare workerd, Convex and edge bundlers: they may not compile WebAssembly
// from bytes, and hand a `.wasm` import over as a compiled WebAssembly.Module.
import wasmModule from "./wasm/ratebound_bg.wasm";
import { initSync } from "./wasm/ratebound.js";
initSync({ module: wasmModule });
export * from "./index.js";
