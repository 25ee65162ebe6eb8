// Node ESM entry: load the one .wasm from disk, synchronously, then the shared API.
import { readFileSync } from "node:fs";
import { initSync } from "./wasm/ratebound.js";

initSync({ module: readFileSync(new URL("./wasm/ratebound_bg.wasm", import.meta.url)) });

export * from "./index.js";
