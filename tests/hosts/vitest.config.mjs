// The Convex host suites: convex-test's recommended setup (the edge-runtime environment,
// convex-test inlined), run on the built package in pkg/. `ratebound` and its subpaths resolve to
// pkg/dist as an installed package would under Node's conditions (the workerd/convex entry
// default-imports the .wasm, which only Convex's bundler and workerd understand).
//
//   node_modules/.bin/vitest run --config tests/hosts/vitest.config.mjs
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const dist = `${repo}pkg/dist/`;

export default defineConfig({
  root: repo,
  resolve: {
    alias: [
      { find: /^ratebound$/, replacement: `${dist}node.js` },
      { find: /^ratebound\/(convex|durable-object|deno-kv)$/, replacement: `${dist}$1.js` },
    ],
  },
  test: {
    environment: "edge-runtime",
    include: ["tests/hosts/convex/**/*.spec.mjs"],
    server: { deps: { inline: ["convex-test"] } },
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
