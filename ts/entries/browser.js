// Browsers and bundlers: fetch the .wasm shipped next to this file, once, before the first decision.
import { useModule } from "./core/engine.js";
const response = await fetch(new URL("./wasm/ratebound.wasm", import.meta.url));
useModule(await WebAssembly.compile(await response.arrayBuffer()));
export * from "./index.js";
