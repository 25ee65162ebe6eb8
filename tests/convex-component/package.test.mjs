// The packed tarball ships the Convex component laid out as Convex components are, and the
// package's exports reach it:  node --test tests/convex-component/
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const pkg = fileURLToPath(new URL("../../pkg/", import.meta.url));
const COMPONENT_FILES = [
  "convex.config.js",
  "schema.js",
  "lib.js",
  "time.js",
  "worker.js",
  "queue.js",
  "validators.js",
  "react.hook.js",
  "_generated/api.js",
  "_generated/server.js",
  "_generated/dataModel.js",
  "_generated/component.js",
  "client/index.js",
];

test("npm pack puts convex-component/ in the tarball with its files and their types", () => {
  const [{ files }] = JSON.parse(execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: pkg, encoding: "utf8" }));
  const packed = new Set(files.map((file) => file.path));
  for (const file of COMPONENT_FILES) {
    assert.ok(packed.has(`convex-component/${file}`), `convex-component/${file} is packed`);
    assert.ok(packed.has(`convex-component/${file.replace(/\.js$/, ".d.ts")}`), `its types are packed`);
  }
});

test("the exports ratebound/convex-component and ratebound/convex-component/convex.config reach the client and the config", () => {
  const { exports } = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8"));
  assert.deepEqual(exports["./convex-component"], {
    types: "./convex-component/client/index.d.ts",
    default: "./convex-component/client/index.js",
  });
  assert.deepEqual(exports["./convex-component/convex.config"], {
    types: "./convex-component/convex.config.d.ts",
    default: "./convex-component/convex.config.js",
  });
  for (const target of Object.values(exports["./convex-component"]).concat(Object.values(exports["./convex-component/convex.config"]))) {
    assert.ok(existsSync(join(pkg, target)), `${target} exists`);
  }
});

test("ratebound/convex-component/react and ratebound/convex-component/test reach the hook and the convex-test registration, as the reference's subpaths", () => {
  const [{ files }] = JSON.parse(execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: pkg, encoding: "utf8" }));
  assert.ok(files.some((file) => file.path === "convex-component/test.vitest.ts"), "the test registration is packed as TypeScript source");
  const { exports, peerDependencies, peerDependenciesMeta } = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8"));
  assert.deepEqual(exports["./convex-component/react"], {
    types: "./convex-component/react.hook.d.ts",
    default: "./convex-component/react.hook.js",
  });
  assert.equal(exports["./convex-component/test"], "./convex-component/test.vitest.ts");
  for (const target of [...Object.values(exports["./convex-component/react"]), exports["./convex-component/test"]]) {
    assert.ok(existsSync(join(pkg, target)), `${target} exists`);
  }
  // The component uses @convex-dev/batch-worker: an optional peer, as convex and react are.
  assert.ok(peerDependencies["@convex-dev/batch-worker"]);
  assert.deepEqual(peerDependenciesMeta["@convex-dev/batch-worker"], { optional: true });
});

test("Convex's bundler deploys the component's modules and skips the browser hook and the test registration (two dots)", () => {
  const deployed = (name) => name.endsWith(".js") && (name.match(/\./g) ?? []).length === 1 && name !== "schema.js";
  assert.ok(["lib.js", "worker.js", "queue.js", "time.js", "validators.js"].every(deployed));
  assert.ok(!deployed("react.hook.js") && !deployed("test.vitest.ts") && !deployed("convex.config.js"));
  const hook = readFileSync(join(pkg, "convex-component", "react.hook.js"), "utf8");
  assert.match(hook, /from "react"/);
  for (const file of ["lib.js", "worker.js", "queue.js", "time.js", "validators.js", "schema.js"]) {
    assert.doesNotMatch(readFileSync(join(pkg, "convex-component", file), "utf8"), /from "(react|convex\/react|convex-test)"/, file);
  }
});

test("the component imports the core by the package's own name, never a relative path into dist/", () => {
  for (const file of ["lib.js", "schema.js", "client/index.js", "queue.js", "react.hook.js"]) {
    const source = readFileSync(join(pkg, "convex-component", file), "utf8");
    assert.doesNotMatch(source, /from "\.\.?\/(\.\.\/)*dist\//, file);
    assert.match(source, /from "ratebound(\/convex)?"/, file);
  }
});
