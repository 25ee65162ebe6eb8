// The `ratebound/postgres` entry: its API lives in ts/stores/postgres.ts.
export * from "./stores/postgres.js";
