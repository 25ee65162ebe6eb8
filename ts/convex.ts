// The `ratebound/convex` entry: its API lives in ts/stores/convex.ts.
export * from "./stores/convex.js";
