// Builds the npm package `ratebound` into pkg/: the Rust core for wasm32,
// wasm-bindgen's glue and types, wasm-opt, tsc, and the CommonJS entry.
// `--if-stale` skips the build when pkg/ is newer than every source file.
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = fileURLToPath(new URL("..", import.meta.url));
const at = (...parts) => join(root, ...parts);
const bin = (name) => at("node_modules", ".bin", name);
const run = (command, args) => execFileSync(command, args, { cwd: root, stdio: ["ignore", "inherit", "inherit"] });

function newestSource(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === "wasm" && dir.endsWith("ts")) continue; // generated
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSource(path) : statSync(path).mtimeMs);
  }
  return newest;
}

const stamp = at("pkg", "dist", "wasm", "ratebound_bg.wasm");
if (process.argv.includes("--if-stale") && existsSync(stamp)) {
  const sources = Math.max(
    ...["src", "ts", "pkg-template"].map((dir) => newestSource(at(dir))),
    ...["Cargo.toml", "scripts/build.mjs"].map((file) => statSync(at(file)).mtimeMs),
  );
  if (statSync(stamp).mtimeMs > sources) process.exit(0);
}

run("cargo", ["build", "--quiet", "--release", "--lib", "--target", "wasm32-unknown-unknown"]);
rmSync(at("ts", "wasm"), { recursive: true, force: true });
run("wasm-bindgen", [
  "--target", "web",
  "--out-dir", at("ts", "wasm"),
  at("target", "wasm32-unknown-unknown", "release", "ratebound.wasm"),
]);
const wasm = at("ts", "wasm", "ratebound_bg.wasm");
run(bin("wasm-opt"), ["-Oz", "--strip-debug", "--strip-producers", wasm, "-o", wasm]);

rmSync(at("pkg"), { recursive: true, force: true });
run(bin("tsc"), ["-p", at("tsconfig.json")]);
mkdirSync(at("pkg", "dist", "wasm"), { recursive: true });
for (const file of ["ratebound.js", "ratebound.d.ts", "ratebound_bg.wasm"]) {
  cpSync(at("ts", "wasm", file), at("pkg", "dist", "wasm", file));
}
// Per-runtime entries that tsc cannot express (wasm and source-phase imports) ship as written.
for (const file of readdirSync(at("ts", "entries"))) cpSync(at("ts", "entries", file), at("pkg", "dist", file));
await build({
  entryPoints: [at("ts", "node-cjs.ts")],
  outfile: at("pkg", "dist", "node.cjs"),
  bundle: true,
  format: "cjs",
  platform: "node",
  target: "node18",
  logLevel: "warning",
  // The glue's async default init (never used by this entry) reads import.meta.url.
  define: { "import.meta.url": "undefined" },
});
for (const file of readdirSync(at("pkg-template"))) cpSync(at("pkg-template", file), at("pkg", file));
console.error("ratebound: built pkg/");
