// Node require() entry (bundled to CommonJS): the same API, the same .wasm file.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { initSync } from "./wasm/ratebound.js";

declare const __dirname: string;
initSync({ module: readFileSync(join(__dirname, "wasm", "ratebound_bg.wasm")) });

export * from "./index.js";
