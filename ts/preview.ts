// The `ratebound/preview` entry: its API lives in ts/browser/preview.ts.
export * from "./browser/preview.js";
