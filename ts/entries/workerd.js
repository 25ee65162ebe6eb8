// Cloudflare workerd (wrangler) and Convex: workerd may not compile WebAssembly from bytes,
// and both hand a `.wasm` import over as a compiled WebAssembly.Module.
import wasmModule from "./wasm/ratebound.wasm";
import { useModule } from "./core/engine.js";
useModule(wasmModule);
export * from "./index.js";
