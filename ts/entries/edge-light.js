// Vercel's edge runtime (Next.js `runtime = "edge"`, both bundlers): it may not compile WebAssembly
// from bytes, and hands a `.wasm?module` import over as a compiled WebAssembly.Module.
import wasmModule from "./wasm/ratebound.wasm?module";
import { useModule } from "./core/engine.js";
useModule(wasmModule);
export * from "./index.js";
