// The `ratebound/deno-kv` entry: its API lives in ts/stores/deno-kv.ts.
export * from "./stores/deno-kv.js";
