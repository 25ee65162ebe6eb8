// The `ratebound/durable-object` entry: its API lives in ts/stores/durable-object.ts.
export * from "./stores/durable-object.js";
