// @convex-dev/rate-limiter's own published tests (0.3.2 and 0.4.0, from their npm tarballs), run
// against ratebound's component. Each version's test files are copied, unmodified, next to ratebound's
// built component (pkg/convex-component) into tests/artifacts/convex-published/<version>/src/, laid
// out as the reference's src/ is: component/ (the component's modules and the tests that glob them),
// shared.js, react/index.js, client/index.js and test.js (re-exporting ratebound's equivalents).
//
//   node scripts/build.mjs --if-stale && node_modules/.bin/vitest run --config tests/convex-component/published/vitest.config.mjs
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { installBuiltPackage } from "../installed-package.mjs";

const repo = fileURLToPath(new URL("../../../", import.meta.url));
const pkg = `${repo}pkg/`;
const staged = `${repo}tests/artifacts/convex-published/`;

/** The published test files run, per version, relative to the tarball's src/. */
export const PUBLISHED = {
  "0.3.2": {
    from: `${repo}node_modules/@convex-dev/rate-limiter/src/`,
    tests: ["component/setup.test.ts", "component/lib.test.ts", "component/getValue.test.ts", "client/index.test.ts", "react/index.test.ts"],
  },
  "0.4.0": {
    from: `${repo}node_modules/rate-limiter-040/src/`,
    tests: [
      "component/setup.test.ts",
      "component/lib.test.ts",
      "component/getValue.test.ts",
      "component/worker.test.ts",
      "react/index.test.ts",
      "client/setup.test.ts",
      "client/index.test.ts",
      "shared.test.ts",
    ],
  },
};

/** What the tests import from the reference's src/ besides the component, mapped onto ratebound's. */
const SHIMS = {
  "shared.js": 'export * from "./component/validators.js";\nexport { calculateRateLimit } from "ratebound";\n',
  "react/index.js": 'export * from "ratebound/convex-component/react";\n',
  "client/index.js": 'export * from "ratebound/convex-component";\nexport { default } from "ratebound/convex-component";\n',
  "test.js": 'export * from "ratebound/convex-component/test";\nexport { default } from "ratebound/convex-component/test";\n',
};

/** Copies ratebound's built component's modules (not its types) into `target`. */
function copyComponent(from, target) {
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    if (entry.isDirectory()) copyComponent(join(from, entry.name), join(target, entry.name));
    else if (entry.name.endsWith(".js")) {
      mkdirSync(target, { recursive: true });
      cpSync(join(from, entry.name), join(target, entry.name));
    }
  }
}

if (!existsSync(`${pkg}convex-component/lib.js`)) throw new Error("pkg/ is not built: run node scripts/build.mjs first");
installBuiltPackage();
rmSync(staged, { recursive: true, force: true });
for (const [version, { from, tests }] of Object.entries(PUBLISHED)) {
  const src = `${staged}${version}/src/`;
  copyComponent(`${pkg}convex-component/`, `${src}component/`);
  for (const test of tests) {
    mkdirSync(dirname(src + test), { recursive: true });
    cpSync(from + test, src + test);
  }
  for (const [file, source] of Object.entries(SHIMS)) {
    mkdirSync(dirname(src + file), { recursive: true });
    writeFileSync(src + file, source);
  }
}

/** Where the staged files' imports of ratebound go: the built package in pkg/, as Node resolves it. */
const alias = (ratebound) => [
  { find: /^ratebound$/, replacement: ratebound },
  { find: /^ratebound\/convex$/, replacement: `${pkg}dist/convex.js` },
  { find: /^ratebound\/convex-component$/, replacement: `${pkg}convex-component/client/index.js` },
  { find: /^ratebound\/convex-component\/react$/, replacement: `${pkg}convex-component/react.hook.js` },
  { find: /^ratebound\/convex-component\/test$/, replacement: `${pkg}convex-component/test.vitest.ts` },
];

export default defineConfig({
  root: repo,
  test: {
    server: { deps: { inline: ["convex-test"] } },
    testTimeout: 60_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        resolve: { alias: alias(`${pkg}dist/node.js`) },
        test: {
          name: "component and client",
          environment: "edge-runtime",
          include: ["tests/artifacts/convex-published/*/src/{component,client}/*.test.ts", "tests/artifacts/convex-published/*/src/*.test.ts"],
        },
      },
      {
        extends: true,
        // As the reference's users run it: ratebound installed (tests/node_modules/ratebound, kept at
        // that path), resolved through its exports under jsdom's conditions, and processed by Vite
        // (inlined), so that the hook's import of convex/react is the one the test mocks.
        resolve: { preserveSymlinks: true },
        test: {
          name: "react",
          environment: "jsdom", // as the files themselves ask (@vitest-environment jsdom)
          include: ["tests/artifacts/convex-published/*/src/react/*.test.ts"],
          server: { deps: { inline: ["convex-test", "ratebound"] } },
        },
      },
    ],
  },
});
