// The `ratebound/redis` entry: its API lives in ts/stores/redis.ts.
export * from "./stores/redis.js";
