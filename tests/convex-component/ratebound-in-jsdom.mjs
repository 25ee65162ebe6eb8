// `ratebound` for the React tests. Their jsdom environment is transformed as web code, where Vite
// rewrites `new URL("./wasm/ratebound_bg.wasm", import.meta.url)` (ratebound's ESM entries) into an
// http URL that Node cannot read; ratebound's CommonJS entry for Node reads the same .wasm by path.
import { createRequire } from "node:module";

const ratebound = createRequire(import.meta.url)("../../pkg/dist/node.cjs");

export const { calculateRateLimit, decideRateLimit, isRateLimitError, SECOND, MINUTE, HOUR, DAY, WEEK } = ratebound;
