// The `ratebound/sqlite` entry: its API lives in ts/stores/sqlite.ts.
export * from "./stores/sqlite.js";
