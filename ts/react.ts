// The `ratebound/react` entry: its API lives in ts/browser/react.ts.
export * from "./browser/react.js";
