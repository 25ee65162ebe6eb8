// The packed tarball ships the Convex component laid out as Convex components are, and the
// package's exports reach it:  node --test tests/convex-component/
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { basename, join } from "node:path";
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

test("every module Convex's bundler deploys from the component bundles with Convex's esbuild; the browser hook and the test registration are skipped (two dots)", async () => {
  // Convex deploys every .js of a component's directory except schema.js, _generated/ and names with
  // more than one dot (convex/src/bundler/index.ts, entryPoints).
  const listed = (dir) =>
    readdirSync(join(pkg, "convex-component", dir), { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory() ? listed(join(dir, entry.name)) : [join(dir, entry.name)],
    );
  const files = listed("");
  const deployed = files.filter(
    (file) => file.endsWith(".js") && !file.startsWith("_generated") && file !== "schema.js" && basename(file).split(".").length === 2,
  );
  assert.deepEqual(deployed.sort(), ["client/asynchronous.js", "client/ctx.js", "client/grants.js", "client/hook.js", "client/index.js", "client/leases.js", "grants.js", "leases.js", "lib.js", "queue.js", "references.js", "time.js", "validators.js", "worker.js"]);
  assert.ok(files.includes("react.hook.js") && files.includes("test.vitest.ts"));
  const convexRequire = createRequire(createRequire(import.meta.url).resolve("convex"));
  const { build } = convexRequire("esbuild");
  const { metafile } = await build({
    entryPoints: deployed.map((file) => join(pkg, "convex-component", file)),
    outdir: join(pkg, "..", "tests", "artifacts", "convex-component-bundle"),
    bundle: true,
    platform: "browser",
    format: "esm",
    target: "esnext",
    conditions: ["convex", "module"],
    external: ["convex", "convex/*", "ratebound", "ratebound/*"], // the app's convex; ratebound: the package itself
    write: false,
    metafile: true,
    logLevel: "silent",
  });
  const inputs = Object.keys(metafile.inputs);
  assert.ok(inputs.some((input) => input.includes("@convex-dev/batch-worker")), "the worker bundles @convex-dev/batch-worker");
  assert.ok(!inputs.some((input) => /node_modules\/(react|convex-test)\//.test(input)), "nothing deployed pulls in react or convex-test");
});

test("the component imports the core by the package's own name, never a relative path into dist/", () => {
  for (const file of ["lib.js", "schema.js", "client/index.js", "queue.js", "react.hook.js"]) {
    const source = readFileSync(join(pkg, "convex-component", file), "utf8");
    assert.doesNotMatch(source, /from "\.\.?\/(\.\.\/)*dist\//, file);
    assert.match(source, /from "ratebound(\/convex)?"/, file);
  }
});
