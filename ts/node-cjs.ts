// Node require() entry (bundled to CommonJS): the same API, the same .wasm file.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { useModule } from "./core/engine.js";

declare const __dirname: string;
useModule(new WebAssembly.Module(readFileSync(join(__dirname, "wasm", "ratebound.wasm"))));

export * from "./index.js";
