// Builds the npm package `ratebound` into pkg/: the Rust core for wasm32
// (numbers-only exports, no glue), wasm-opt, its base64 module, tsc, and the CommonJS entry.
// `--if-stale` skips the build when pkg/ is newer than every source file.
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { jsLoadedBy } from "./bench/bundle.mjs";
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
    ...["Cargo.toml", "README.md", "LICENSE-MIT", "LICENSE-APACHE", "scripts/build.mjs", "scripts/bench/bundle.mjs", "scripts/package-readme.mjs"].map((file) => statSync(at(file)).mtimeMs),
  );
  if (statSync(stamp).mtimeMs > sources) process.exit(0);
}

// The boundary from one source: the buffer's layout and the core's error tables, written from the
// Rust side into ts/core/boundary.ts (when it differs) before anything compiles against them.
run("cargo", ["run", "--quiet", "--bin", "boundary", "--", "--write"]);
run("cargo", ["build", "--quiet", "--profile", "wasm", "--lib", "--target", "wasm32-unknown-unknown"]);
const wasm = at("target", "wasm32-unknown-unknown", "wasm", "ratebound.optimized.wasm");
run(bin("wasm-opt"), [
  "-Oz", "--converge", "--strip-debug", "--strip-producers", "--zero-filled-memory",
  at("target", "wasm32-unknown-unknown", "wasm", "ratebound.wasm"), "-o", wasm,
]);

// The small modules, cut from the size-compiled build (Cargo.toml's `wasm-small` profile: the
// browser is the one runtime that downloads them, and decides too rarely to notice the speed) by
// wasm-metadce, which keeps the listed exports and what they reach.
// - ratebound-lite.wasm, what a browser app compiles: everything but grants and settles (a grant
//   fetches the full module then, once): the exports listed here, every `rb_slab_*` export
//   (MemoryStore's one-crossing path), by prefix, and every export the modules the browser
//   entry imports call, but grant.js (read from them below, once tsc has written them).
// - ratebound-preview.wasm, what `ratebound/preview` alone compiles in a browser: the exports
//   that the preview's modules call (read the same way).
const LITE_EXPORTS = [
  "memory", "rb_io", "rb_layout", "rb_compile", "rb_plan", "rb_decide", "rb_decide_one", "rb_check_now",
  "rb_value_draws", "rb_plan_value", "rb_value", "rb_calculate", "rb_calculate_use", "rb_calculate_next", "rb_decide_state", "rb_figures", "rb_jitter",
  "rb_slab_config", "rb_slab_grow", "rb_slab_slots", "rb_slab_limit",
];
const smallDir = at("target", "wasm32-unknown-unknown", "wasm-small");
const lite = join(smallDir, "ratebound-lite.wasm");
const preview = join(smallDir, "ratebound-preview.wasm");
{
  run("cargo", ["build", "--quiet", "--profile", "wasm-small", "--lib", "--target", "wasm32-unknown-unknown"]);
  const small = join(smallDir, "ratebound.optimized.wasm");
  run(bin("wasm-opt"), [
    "-Oz", "--converge", "--strip-debug", "--strip-producers", "--zero-filled-memory",
    join(smallDir, "ratebound.wasm"), "-o", small,
  ]);
}

/** Cuts `from` down to the exports `roots` and what they reach, into `out`. */
function cutModule(from, roots, out) {
  const graph = out.replace(/\.wasm$/, "-roots.json");
  writeFileSync(graph, JSON.stringify(roots.map((name) => ({ name, export: name, root: true }))));
  // (It lists the module's internal globals it finds unused: not news.)
  execFileSync(bin("wasm-metadce"), [from, "--graph-file", graph, "-o", out], { cwd: root, stdio: ["ignore", "ignore", "inherit"] });
  run(bin("wasm-opt"), ["-Oz", "--converge", "--strip-debug", "--strip-producers", "--zero-filled-memory", "--strip-target-features", out, "-o", out]);
}

/** The names a WebAssembly module exports (its export section, id 7). */
function exportNames(bytes) {
  let at = 8;
  const leb = () => {
    let result = 0;
    for (let shift = 0; ; shift += 7) {
      const byte = bytes[at++];
      result += (byte & 0x7f) * 2 ** shift;
      if (!(byte & 0x80)) return result;
    }
  };
  while (at < bytes.length) {
    const id = bytes[at++];
    const size = leb();
    if (id !== 7) {
      at += size;
      continue;
    }
    const names = [];
    for (let count = leb(); count > 0; count--) {
      const length = leb();
      names.push(new TextDecoder().decode(bytes.subarray(at, at + length)));
      at += length + 1; // the name, then its kind
      leb(); // and index
    }
    return names;
  }
  return [];
}

/**
 * A module's bytes as a JavaScript string literal, one character per byte (U+0000 to U+00FF),
 * the file written in UTF-8: once bundled by esbuild and gzipped, 15 % smaller than base64 (13.8
 * against 16.2 KB for the small module; a byte above 0x7F is two bytes of UTF-8, which gzip codes
 * nearly as well as one). Quotes, backslashes and every control character are escaped, so that
 * no tool reads the file as binary.
 */
function latin1Literal(bytes) {
  let text = "";
  for (const byte of bytes) {
    if (byte === 0x22 || byte === 0x5c) text += `\\${String.fromCharCode(byte)}`;
    else if (byte < 0x20 || byte === 0x7f) text += `\\x${byte.toString(16).padStart(2, "0")}`;
    else text += String.fromCharCode(byte);
  }
  return `"${text}"`;
}

// Assemble in a fresh directory and swap it in at the end, so that anyone
// importing pkg/ while a build runs sees the old package or the new one.
const out = at(`pkg.building-${process.pid}`);
const outAt = (...parts) => join(out, ...parts);
rmSync(out, { recursive: true, force: true });
run(bin("tsc"), ["-p", at("tsconfig.json"), "--outDir", outAt("dist")]);
mkdirSync(outAt("dist", "wasm"), { recursive: true });
// Per-runtime entries (ts/entries/) ship as written: tsc cannot express wasm and source-phase imports.
for (const file of readdirSync(at("ts", "entries"))) cpSync(at("ts", "entries", file), outAt("dist", file));
cpSync(wasm, outAt("dist", "wasm", "ratebound.wasm"));
// The same bytes as JavaScript, for the entries that compile them: the full module in base64
// (Node and Bun decode it natively), and the small ones browsers start with as latin1 strings
// (smaller gzipped; see latin1Literal).
writeFileSync(
  outAt("dist", "wasm", "ratebound.base64.js"),
  `// ratebound.wasm in base64 (generated by scripts/build.mjs).\nexport const base64 = "${readFileSync(wasm).toString("base64")}";\n`,
);
// The small modules' exports: those listed, and those the modules of their entries call
// (`core.rb_…(`), imported statically or lazily, but for grant.js: a grant's calls run on the
// full module.
{
  const small = join(smallDir, "ratebound.optimized.wasm");
  const calledBy = (entry) => {
    const calls = new Set(["memory", "rb_io", "rb_layout"]);
    const files = new Set();
    const visit = (file) => {
      for (const loaded of jsLoadedBy(outAt("dist"), file)) {
        if (files.has(loaded)) continue;
        files.add(loaded);
        const text = readFileSync(outAt("dist", loaded), "utf8");
        for (const [, name] of text.matchAll(/\bcore\.(rb_\w+)\(/g)) calls.add(name);
        for (const [, lazy] of text.matchAll(/\bimport\(\s*"(\.{1,2}\/[^"]+\.js)"\s*\)/g)) {
          const target = join(dirname(loaded), lazy);
          if (basename(target) !== "grant.js") visit(target);
        }
      }
    };
    visit(entry);
    return [...calls];
  };
  // (Written below: read now as modules of the entries.)
  for (const file of ["ratebound-lite.bytes.js", "ratebound-preview.bytes.js"]) writeFileSync(outAt("dist", "wasm", file), "");
  const slab = exportNames(readFileSync(small)).filter((name) => name.startsWith("rb_slab_"));
  cutModule(small, [...new Set([...LITE_EXPORTS, ...slab, ...calledBy("browser.js")])], lite);
  cutModule(small, calledBy("preview-core.js"), preview);
}
for (const [file, bytes] of [["ratebound-lite.bytes.js", lite], ["ratebound-preview.bytes.js", preview]]) {
  writeFileSync(
    outAt("dist", "wasm", file),
    `// ${file.replace(".bytes.js", ".wasm")}, one character per byte (generated by scripts/build.mjs).\nexport const bytes = ${latin1Literal(readFileSync(bytes))};\n`,
  );
}
// `ratebound/preview` (and `ratebound/react`) in browsers: the same modules, importing only the
// calls they make (and the tiny module those run on, when the app has loaded no other) instead of
// the whole package.
{
  const source = readFileSync(outAt("dist", "browser", "preview.js"), "utf8");
  const imports = source.match(/\bfrom "ratebound";/g) ?? [];
  if (imports.length !== 1) throw new Error(`build: dist/browser/preview.js imports "ratebound" ${imports.length} times, expected once`);
  writeFileSync(outAt("dist", "browser", "preview-small.js"), source.replace(/\bfrom "ratebound";/, 'from "../preview-core.js";'));
  // And `ratebound/react`, which is the preview and a hook.
  const react = readFileSync(outAt("dist", "browser", "react.js"), "utf8");
  if ((react.match(/\bfrom "\.\/preview\.js";/g) ?? []).length !== 1) throw new Error('build: dist/browser/react.js no longer imports "./preview.js" once');
  writeFileSync(outAt("dist", "browser", "react-small.js"), react.replace(/\bfrom "\.\/preview\.js";/, 'from "./preview-small.js";'));
}
// import("ratebound") in Node and Bun: the Node entry bundled as one ES module. Loading the ~40
// modules of dist/ one by one is most of an import's time (17 of 19 ms, scripts/bench/startup.mjs);
// the modules stay beside it for the subpaths' own relative imports and the tests.
await build({
  entryPoints: [outAt("dist", "node.js")],
  outfile: outAt("dist", "node.bundle.js"),
  bundle: true,
  format: "esm",
  platform: "node",
  target: "node18",
  logLevel: "warning",
});
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
