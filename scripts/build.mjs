// Builds the npm package `ratebound` into pkg/: the Rust core for wasm32
// (numbers-only exports, no glue), wasm-opt, its base64 module, tsc, and the CommonJS entry.
// `--if-stale` skips the build when pkg/ is newer than every source file.
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { npmReadme } from "./package-readme.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const at = (...parts) => join(root, ...parts);
const bin = (name) => at("node_modules", ".bin", name);
const run = (command, args) => execFileSync(command, args, { cwd: root, stdio: ["ignore", "inherit", "inherit"] });

function newestSource(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSource(path) : statSync(path).mtimeMs);
  }
  return newest;
}

// One build at a time: several test runs may ask for one at once.
const lock = at("pkg.lock");
for (let waited = 0; ; waited += 200) {
  try {
    mkdirSync(lock);
    break;
  } catch (error) {
    if (error.code !== "EEXIST") throw error;
    if (waited > 10 * 60_000) rmSync(lock, { recursive: true, force: true }); // left by a killed build
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
process.on("exit", () => rmSync(lock, { recursive: true, force: true }));

const stamp = at("pkg", "dist", "wasm", "ratebound.wasm");
if (process.argv.includes("--if-stale") && existsSync(stamp)) {
  const sources = Math.max(
    ...["src", "ts", "pkg-template"].map((dir) => newestSource(at(dir))),
    ...["Cargo.toml", "README.md", "LICENSE-MIT", "LICENSE-APACHE", "scripts/build.mjs", "scripts/package-readme.mjs"].map((file) => statSync(at(file)).mtimeMs),
  );
  if (statSync(stamp).mtimeMs > sources) process.exit(0);
}

run("cargo", ["build", "--quiet", "--profile", "wasm", "--lib", "--target", "wasm32-unknown-unknown"]);
const wasm = at("target", "wasm32-unknown-unknown", "wasm", "ratebound.optimized.wasm");
run(bin("wasm-opt"), [
  "-Oz", "--converge", "--strip-debug", "--strip-producers", "--zero-filled-memory",
  at("target", "wasm32-unknown-unknown", "wasm", "ratebound.wasm"), "-o", wasm,
]);

// The small module a browser app downloads: everything but grants and settles (wasm-metadce keeps
// these exports and what they reach). A grant loads the full module then, once.
const LITE_EXPORTS = [
  "memory", "rb_io", "rb_layout", "rb_compile", "rb_plan", "rb_decide", "rb_decide_one", "rb_check_now",
  "rb_value_draws", "rb_plan_value", "rb_value", "rb_calculate", "rb_decide_state", "rb_figures", "rb_jitter",
  "rb_slab_config", "rb_slab_grow", "rb_slab_slots", "rb_slab_limit",
];
// It is compiled for size (Cargo.toml's `wasm-small` profile): the browser is the one runtime that
// downloads it, and decides too rarely to notice the speed.
const lite = at("target", "wasm32-unknown-unknown", "wasm-small", "ratebound-lite.wasm");
{
  run("cargo", ["build", "--quiet", "--profile", "wasm-small", "--lib", "--target", "wasm32-unknown-unknown"]);
  const small = at("target", "wasm32-unknown-unknown", "wasm-small", "ratebound.optimized.wasm");
  run(bin("wasm-opt"), [
    "-Oz", "--converge", "--strip-debug", "--strip-producers", "--zero-filled-memory",
    at("target", "wasm32-unknown-unknown", "wasm-small", "ratebound.wasm"), "-o", small,
  ]);
  const graph = at("target", "wasm32-unknown-unknown", "wasm-small", "lite-roots.json");
  writeFileSync(graph, JSON.stringify(LITE_EXPORTS.map((name) => ({ name, export: name, root: true }))));
  // (It lists the module's internal globals it finds unused: not news.)
  execFileSync(bin("wasm-metadce"), [small, "--graph-file", graph, "-o", lite], { cwd: root, stdio: ["ignore", "ignore", "inherit"] });
  run(bin("wasm-opt"), ["-Oz", "--converge", "--strip-debug", "--strip-producers", "--zero-filled-memory", lite, "-o", lite]);
}

// Assemble in a fresh directory and swap it in at the end, so that anyone
// importing pkg/ while a build runs sees the old package or the new one.
const out = at(`pkg.building-${process.pid}`);
const outAt = (...parts) => join(out, ...parts);
rmSync(out, { recursive: true, force: true });
run(bin("tsc"), ["-p", at("tsconfig.json"), "--outDir", outAt("dist")]);
mkdirSync(outAt("dist", "wasm"), { recursive: true });
cpSync(wasm, outAt("dist", "wasm", "ratebound.wasm"));
// The same bytes as JavaScript, for the entries that compile them (Node, Bun, browsers, bundlers):
// the full module, and the small one browsers start with.
for (const [file, bytes] of [["ratebound.base64.js", wasm], ["ratebound-lite.base64.js", lite]]) {
  writeFileSync(
    outAt("dist", "wasm", file),
    `// ${file.replace(".base64.js", ".wasm")} in base64 (generated by scripts/build.mjs).\nexport const base64 = "${readFileSync(bytes).toString("base64")}";\n`,
  );
}
// Per-runtime entries (ts/entries/) ship as written: tsc cannot express wasm and source-phase imports.
for (const file of readdirSync(at("ts", "entries"))) cpSync(at("ts", "entries", file), outAt("dist", file));
// require("ratebound"): the Node entry bundled as CommonJS.
await build({
  entryPoints: [outAt("dist", "node.js")],
  outfile: outAt("dist", "node.cjs"),
  bundle: true,
  format: "cjs",
  platform: "node",
  target: "node18",
  logLevel: "warning",
});
// Every subpath module for require(), file for file as the ES modules are (so that the subpaths
// share their modules: ratebound/postgres and ratebound/sqlite one SqlStoreError), the core's
// own imports left as `require("ratebound")`, so that a CommonJS app has one core and one set of
// error classes.
{
  const subpaths = ["preview", "react", "convex", "durable-object", "deno-kv", "postgres", "sqlite", "redis", "http", "otel"];
  const common = {
    bundle: true,
    packages: "external",
    external: ["ratebound"], // not tsconfig.json's path to ts/index.ts
    format: "cjs",
    platform: "node",
    target: "node18",
    logLevel: "warning",
  };
  const { metafile } = await build({ ...common, entryPoints: subpaths.map((name) => at("ts", `${name}.ts`)), write: false, metafile: true, outdir: outAt("dist") });
  const eachFile = {
    name: "each-file-its-own-cjs-module",
    setup(b) {
      b.onResolve({ filter: /^\.\.?\// }, (args) => (args.kind === "entry-point" ? undefined : { path: args.path.replace(/\.js$/, ".cjs"), external: true }));
    },
  };
  await build({
    ...common,
    entryPoints: Object.keys(metafile.inputs).map((input) => join(root, input)),
    outbase: at("ts"),
    outdir: outAt("dist"),
    outExtension: { ".js": ".cjs" },
    plugins: [eachFile],
  });
}
// Declarations for require(): each .d.ts again as .d.cts, its relative imports naming the
// .cjs files, so that TypeScript reads them as CommonJS (a `module: node16` project that
// requires the package gets them through the `types` → `require` condition).
for (const file of readdirSync(outAt("dist"), { recursive: true })) {
  if (!file.endsWith(".d.ts")) continue;
  const text = readFileSync(outAt("dist", file), "utf8").replace(
    /((?:\bfrom|\bimport\()\s*["'])(\.{1,2}\/[^"']*?)\.js(["'])/g,
    (_all, before, path, after) => `${before}${path}.cjs${after}`,
  );
  writeFileSync(outAt("dist", file.replace(/\.d\.ts$/, ".d.cts")), text);
}
for (const file of readdirSync(at("pkg-template"))) cpSync(at("pkg-template", file), outAt(file), { recursive: true });
// The package page's README is the project's guide, its relative links made absolute (npm shows
// it without the repository around it).
const manifest = JSON.parse(readFileSync(at("pkg-template", "package.json"), "utf8"));
writeFileSync(outAt("README.md"), npmReadme(readFileSync(at("README.md"), "utf8"), { repository: manifest.repository }));
// The licence texts the manifest's "MIT OR Apache-2.0" names, shipped as the repository has them.
for (const licence of ["LICENSE-MIT", "LICENSE-APACHE"]) cpSync(at(licence), outAt(licence));
// --- The Convex component (ts/convex-component/ → <out>/convex-component/) -------------------------
// Compiled on its own: it imports the core as "ratebound", which resolves here to the declarations
// just built in <out>/dist (and, once installed, through the package's export conditions).
{
  const tsconfig = outAt("convex-component.tsconfig.json");
  writeFileSync(tsconfig, JSON.stringify({
    extends: at("ts", "convex-component", "tsconfig.json"),
    compilerOptions: {
      rootDir: at("ts", "convex-component"),
      outDir: outAt("convex-component"),
      paths: { ratebound: [outAt("dist", "index.d.ts")], "ratebound/convex": [outAt("dist", "convex.d.ts")] },
    },
    include: [at("ts", "convex-component", "**", "*.ts")],
  }));
  run(bin("tsc"), ["-p", tsconfig]);
  rmSync(tsconfig);
}
// ---------------------------------------------------------------------------------------------------
const previous = at(`pkg.previous-${process.pid}`);
if (existsSync(at("pkg"))) renameSync(at("pkg"), previous);
renameSync(out, at("pkg"));
rmSync(previous, { recursive: true, force: true });
console.error("ratebound: built pkg/");
