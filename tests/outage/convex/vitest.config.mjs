// The Convex outage suite runs as the Convex host suites do (tests/hosts/vitest.config.mjs: the
// edge-runtime environment, convex-test inlined, the built package), on its own spec files.
//
//   node_modules/.bin/vitest run --config tests/outage/convex/vitest.config.mjs
import hosts from "../../hosts/vitest.config.mjs";

export default { ...hosts, test: { ...hosts.test, include: ["tests/outage/convex/**/*.spec.mjs"] } };
