// Node ESM entry: compile the one .wasm from disk, synchronously, then the shared API.
import { readFileSync } from "node:fs";
import { useModule } from "./core/engine.js";

useModule(new WebAssembly.Module(readFileSync(new URL("./wasm/ratebound.wasm", import.meta.url))));

export * from "./index.js";
