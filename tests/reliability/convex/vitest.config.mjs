// The Convex part of the records suite (tests/reliability/hostile-records.test.mjs) runs as the
// Convex host suites do (tests/hosts/vitest.config.mjs), on its own spec files.
import hosts from "../../hosts/vitest.config.mjs";

export default { ...hosts, test: { ...hosts.test, include: ["tests/reliability/convex/**/*.spec.mjs"] } };
