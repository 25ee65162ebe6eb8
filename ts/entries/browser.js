// Browsers and bundlers: fetch the .wasm shipped next to this file, once, before the first decision.
import init from "./wasm/ratebound.js";
await init({ module_or_path: new URL("./wasm/ratebound_bg.wasm", import.meta.url) });
export * from "./index.js";
