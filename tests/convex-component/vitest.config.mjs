// ratebound's Convex component (pkg/convex-component) in convex-test: the component registered in
// a test app and in examples/convex-component, called through the app-side client. `ratebound` and
// its subpaths resolve to the built package in pkg/ as an installed package would under Node's
// conditions (the workerd/convex entry default-imports the .wasm, which only Convex's bundler and
// workerd understand).
//
//   node scripts/build.mjs --if-stale && node_modules/.bin/vitest run --config tests/convex-component/vitest.config.mjs
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { installBuiltPackage } from "./installed-package.mjs";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const pkg = `${repo}pkg/`;
installBuiltPackage();

/** ratebound and its subpaths, resolved to the built package; `core` is the entry `ratebound` resolves to. */
const alias = (core) => [
  { find: /^ratebound$/, replacement: core },
  { find: /^ratebound\/convex$/, replacement: `${pkg}dist/convex.js` },
  { find: /^ratebound\/convex-component$/, replacement: `${pkg}convex-component/client/index.js` },
  { find: /^ratebound\/convex-component\/convex\.config(\.js)?$/, replacement: `${pkg}convex-component/convex.config.js` },
  { find: /^ratebound\/convex-component\/react$/, replacement: `${pkg}convex-component/react.hook.js` },
  { find: /^ratebound\/convex-component\/test$/, replacement: `${pkg}convex-component/test.vitest.ts` },
];

export default defineConfig({
  root: repo,
  test: {
    // batch-worker's convex.config imports "./logging" without an extension; the reference's hook must see the mocked convex/react.
    server: { deps: { inline: ["convex-test", "@convex-dev/batch-worker", "rate-limiter-040"] } },
    testTimeout: 60_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        resolve: { alias: alias(`${pkg}dist/node.js`) },
        test: { name: "component", environment: "edge-runtime", include: ["tests/convex-component/*.spec.mjs"] },
      },
      {
        extends: true,
        // As a user's app runs it: ratebound installed (tests/node_modules/ratebound, kept at that
        // path), resolved through its exports under jsdom's conditions, and processed by Vite
        // (inlined), so that the hook's import of convex/react is the mocked one.
        resolve: { preserveSymlinks: true },
        test: {
          name: "react",
          environment: "jsdom",
          include: ["tests/convex-component/react/*.spec.mjs"],
          server: { deps: { inline: ["convex-test", "@convex-dev/batch-worker", "rate-limiter-040", "ratebound"] } },
        },
      },
    ],
  },
});
