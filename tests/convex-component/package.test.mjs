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

test("the component imports the core by the package's own name, never a relative path into dist/", () => {
  for (const file of ["lib.js", "schema.js", "client/index.js"]) {
    const source = readFileSync(join(pkg, "convex-component", file), "utf8");
    assert.doesNotMatch(source, /from "\.\.?\/(\.\.\/)*dist\//, file);
    assert.match(source, /from "ratebound(\/convex)?"/, file);
  }
});
