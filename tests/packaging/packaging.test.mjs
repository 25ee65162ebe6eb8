// The packed package, installed as users install it, in every runtime it promises to work in.
//
// `npm pack pkg/` once; then per runtime a throwaway project that installs the tarball and runs
// the one shared scenario (scenario.mjs) there, with no init() call: Node ESM and require(),
// Deno (npm: specifier and node_modules), Bun, Cloudflare workerd through Miniflare, headless
// Chromium (native ES modules and an esbuild bundle), a Node server bundled by Vite, and Convex
// functions in convex-test.
// Each run also reports which file of the package the runtime loaded, and that must be the one
// the package's conditional exports name for it.
//
// Builds nothing: run `node scripts/build.mjs` first. Set RATEBOUND_KEEP_PACKAGING=1 to keep
// the throwaway projects for a look afterwards.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { basename, dirname, extname, join, normalize, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { serveStatic } from "./static-server.mjs";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const here = fileURLToPath(new URL("./", import.meta.url));
const fixtures = join(here, "fixtures");
const require = createRequire(import.meta.url);
// Deno lives in tools/deno, outside the root lockfile (see tools/deno/package.json).
const bin = (name) =>
  name === "deno" ? join(repo, "tools", "deno", "node_modules", ".bin", "deno") : join(repo, "node_modules", ".bin", name);

const CHROMIUM = "/usr/bin/chromium";
const CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];
const RUN_TIMEOUT_MS = 90_000;
const TEST_TIMEOUT_MS = 150_000;

let work; // the temp dir holding the tarball and every throwaway project
let tarball;
let manifest; // the package.json inside the tarball
const children = new Set();

before(async () => {
  const pkg = join(repo, "pkg");
  assert.ok(existsSync(join(pkg, "dist", "wasm", "ratebound.wasm")), "pkg/ is not built: run `node scripts/build.mjs` first");
  work = mkdtempSync(join(tmpdir(), "ratebound-packaging-"));
  mkdirSync(join(work, "pack"));
  const { stdout } = await run("npm", ["pack", pkg, "--pack-destination", join(work, "pack"), "--json", ...npmFlags()]);
  tarball = join(work, "pack", JSON.parse(stdout)[0].filename);
  manifest = JSON.parse((await run("tar", ["-xzOf", tarball, "package/package.json"])).stdout);
});

after(() => {
  for (const child of children) killGroup(child);
  if (!work) return;
  if (process.env.RATEBOUND_KEEP_PACKAGING) console.log(`# packaging projects kept in ${work}`);
  else rmSync(work, { recursive: true, force: true });
});

test("the tarball carries both licences its manifest names, as the repository has them", async () => {
  assert.equal(manifest.license, "MIT OR Apache-2.0");
  for (const licence of ["LICENSE-MIT", "LICENSE-APACHE"]) {
    const { stdout } = await run("tar", ["-xzOf", tarball, `package/${licence}`]);
    assert.equal(stdout, readFileSync(join(repo, licence), "utf8"), `${licence} in the tarball`);
  }
});

/** npm flags for a hermetic, offline, quiet run. */
function npmFlags() {
  return ["--offline", "--no-audit", "--no-fund", "--loglevel=error", `--cache=${join(work, "npm-cache")}`];
}

/** The file the package's exports map names for one condition path, e.g. `["node", "import"]`. */
function exported(...conditions) {
  let target = manifest.exports["."];
  for (const condition of conditions) target = target?.[condition];
  assert.equal(typeof target, "string", `exports["."] has ${conditions.join(" → ")}`);
  return target.replace(/^\.\//, "");
}

/** Asserts that `entry` (a path or file URL a runtime reported) is the package file `expected`. */
function assertEntry(entry, expected) {
  const path = String(entry).startsWith("file:") ? fileURLToPath(entry) : String(entry);
  const posix = path.split(sep).join("/");
  assert.ok(posix.includes("ratebound") && posix.endsWith(`/${expected}`), `loaded ${posix}, expected ratebound's ${expected}`);
}

/** Kills a child's whole process group (it was spawned detached), ignoring one already gone. */
function killGroup(child) {
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    // already exited
  }
  children.delete(child);
}

/**
 * Runs a command to completion within `timeoutMs`, in its own process group so that a timeout
 * kills it with everything it started. Rejects with its output on a non-zero exit.
 */
function run(command, args, { cwd = work, env = {}, timeoutMs = RUN_TIMEOUT_MS } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: { ...process.env, NO_COLOR: "1", ...env }, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    children.add(child);
    let stdout = "";
    let stderr = "";
    let timedOut = false;
    child.stdout.setEncoding("utf8").on("data", (chunk) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk) => (stderr += chunk));
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child);
    }, timeoutMs);
    const describe = () => `${[command, ...args].join(" ")}\n--- stdout\n${stdout}\n--- stderr\n${stderr}`;
    child.on("error", (error) => {
      clearTimeout(timer);
      children.delete(child);
      reject(error);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      killGroup(child); // whatever it left running
      if (timedOut) reject(new Error(`timed out after ${timeoutMs} ms: ${describe()}`));
      else if (code !== 0) reject(new Error(`exited with ${code ?? signal}: ${describe()}`));
      else resolve({ stdout, stderr });
    });
  });
}

/** The JSON a harness printed as its last line of output. */
function lastJsonLine(stdout) {
  const line = stdout.trim().split("\n").at(-1);
  try {
    return JSON.parse(line);
  } catch {
    throw new Error(`expected a JSON line from the harness, got:\n${stdout}`);
  }
}

/**
 * A throwaway project that installs the tarball with npm, plus the shared scenario and the
 * given fixture files or directories (each copied to the project's root under its own name).
 * `links` are dev tools symlinked from this repository's node_modules (after the install,
 * which would prune them).
 */
async function project(name, { files = [], links = [] } = {}) {
  const dir = join(work, name);
  mkdirSync(dir);
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: `packaging-${name}`, private: true, type: "module" }, null, 2));
  await run("npm", ["install", tarball, ...npmFlags()], { cwd: dir });
  copyFileSync(join(here, "scenario.mjs"), join(dir, "scenario.mjs"));
  for (const file of files) cpSync(join(fixtures, file), join(dir, basename(file)), { recursive: true });
  for (const link of links) {
    mkdirSync(dirname(join(dir, "node_modules", link)), { recursive: true });
    symlinkSync(join(repo, "node_modules", link), join(dir, "node_modules", link), "dir");
  }
  return dir;
}

/** What every runtime's scenario must have seen. */
function assertScenario(seen) {
  assert.deepEqual(seen, {
    decisions: 11,
    refusal: { kind: "RateLimited", name: "sendMessage", retryAfter: 250 },
    errors: ["INVALID_CONFIG", "COUNT_EXCEEDS_MAX"],
  });
}


/**
 * Opens `page` of a static server over `root` in headless Chromium and waits for the page's
 * `window.rateboundResult`. Any page error, console error or warning, or failed request fails.
 */
async function inChromium(root, page) {
  const { chromium } = await import("playwright-core");
  const server = await serveStatic(root);
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, timeout: 30_000 });
  try {
    const tab = await browser.newPage();
    const problems = [];
    let failed;
    const failure = new Promise((_resolve, reject) => (failed = reject));
    failure.catch(() => {});
    tab.on("pageerror", (error) => failed(new Error(`page error: ${error.stack ?? error.message}`)));
    tab.on("console", (message) => {
      if (["error", "warning"].includes(message.type())) problems.push(`console ${message.type()}: ${message.text()}`);
    });
    tab.on("requestfailed", (request) => problems.push(`request failed: ${request.url()} ${request.failure()?.errorText}`));
    await tab.goto(`${server.origin}/${page}`, { timeout: 30_000 });
    const done = tab.waitForFunction(() => window.rateboundResult, null, { timeout: 30_000 }).then((handle) => handle.jsonValue());
    const result = await Promise.race([done, failure]).catch((error) => {
      throw new Error([error.message, ...problems].join("\n"));
    });
    assert.deepEqual(problems, [], "the page ran without errors or warnings");
    if (result.error) assert.fail(`the page threw: ${result.error}`);
    return { ...result, served: server.served };
  } finally {
    await browser.close();
    await server.close();
  }
}

/** The HTML page of the browser tests: an import map (or none) and the module to load. */
function writePage(dir, file, { importMap, script }) {
  const html = readFileSync(join(fixtures, "browser.html"), "utf8")
    .replace("%IMPORT_MAP%", importMap ? `<script type="importmap">${JSON.stringify({ imports: importMap })}</script>` : "")
    .replace("%SCRIPT%", script);
  writeFileSync(join(dir, file), html);
}

/** Which of the package's entry files (the targets of its exports map) a bundle took in. */
function bundledEntry(metafile) {
  const targets = new Set();
  const collect = (target) => (typeof target === "string" ? targets.add(target.replace(/^\.\//, "")) : Object.values(target).forEach(collect));
  collect(manifest.exports["."]);
  const entries = Object.keys(metafile.inputs).filter((input) => [...targets].some((target) => input.endsWith(`node_modules/ratebound/${target}`)));
  assert.equal(entries.length, 1, `the bundle took in exactly one entry of the package (got ${entries.join(", ")})`);
  return entries[0];
}

/**
 * An esbuild plugin that does what wrangler does with a `.wasm` import: copy the file next to
 * the bundle and leave the import for workerd, which hands it over as a compiled module.
 */
function wasmModulesNextTo(outdir) {
  return {
    name: "wasm-modules-next-to-the-bundle",
    setup(build) {
      build.onResolve({ filter: /\.wasm$/ }, (args) => {
        const source = join(args.resolveDir, args.path);
        mkdirSync(outdir, { recursive: true });
        copyFileSync(source, join(outdir, basename(source)));
        return { path: `./${basename(source)}`, external: true };
      });
    },
  };
}

test("Node ESM imports the installed package and decides with no init() call", { timeout: TEST_TIMEOUT_MS }, async () => {
  const dir = await project("node-esm", { files: ["esm.mjs"] });
  const { entry, seen } = lastJsonLine((await run(process.execPath, ["esm.mjs"], { cwd: dir })).stdout);
  assertScenario(seen);
  assertEntry(entry, exported("node", "import"));
});

test("Node require() loads the CommonJS entry and decides with no init() call", { timeout: TEST_TIMEOUT_MS }, async () => {
  const dir = await project("node-require", { files: ["require.cjs"] });
  const { entry, seen } = lastJsonLine((await run(process.execPath, ["require.cjs"], { cwd: dir })).stdout);
  assertScenario(seen);
  assertEntry(entry, exported("node", "require"));
});

test("Deno imports npm:ratebound from a registry, with no permissions", { timeout: TEST_TIMEOUT_MS }, async () => {
  // A one-package npm registry on loopback, so Deno fetches and caches the tarball as from npm.
  const bytes = readFileSync(tarball);
  const registry = createServer((request, response) => {
    const base = `http://127.0.0.1:${registry.address().port}`;
    const file = `/ratebound/-/${basename(tarball)}`;
    if (request.url === "/ratebound") {
      const dist = {
        tarball: base + file,
        integrity: `sha512-${createHash("sha512").update(bytes).digest("base64")}`,
        shasum: createHash("sha1").update(bytes).digest("hex"),
      };
      const packument = { name: manifest.name, "dist-tags": { latest: manifest.version }, versions: { [manifest.version]: { ...manifest, dist } } };
      response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(packument));
    } else if (request.url === file) {
      response.writeHead(200, { "content-type": "application/octet-stream" }).end(bytes);
    } else {
      response.writeHead(404).end();
    }
  });
  await new Promise((resolve) => registry.listen(0, "127.0.0.1", resolve));
  try {
    const dir = join(work, "deno-npm");
    mkdirSync(dir);
    copyFileSync(join(here, "scenario.mjs"), join(dir, "scenario.mjs"));
    copyFileSync(join(fixtures, "deno-npm.mjs"), join(dir, "main.mjs"));
    const env = { DENO_DIR: join(work, "deno-dir-npm"), DENO_NO_UPDATE_CHECK: "1", NPM_CONFIG_REGISTRY: `http://127.0.0.1:${registry.address().port}/` };
    const { stdout } = await run(bin("deno"), ["run", "--no-prompt", "main.mjs"], { cwd: dir, env });
    const { entry, seen } = lastJsonLine(stdout);
    assertScenario(seen);
    assertEntry(entry, exported("deno"));
    assert.ok(!existsSync(join(dir, "node_modules")), "Deno used its own npm cache, not a node_modules");
  } finally {
    registry.closeAllConnections();
    await new Promise((resolve) => registry.close(resolve));
  }
});

test("Deno imports ratebound through node_modules, with no permissions", { timeout: TEST_TIMEOUT_MS }, async () => {
  const dir = await project("deno-node-modules", { files: ["esm.mjs"] });
  const env = { DENO_DIR: join(work, "deno-dir-node-modules"), DENO_NO_UPDATE_CHECK: "1" };
  const { entry, seen } = lastJsonLine((await run(bin("deno"), ["run", "--no-prompt", "esm.mjs"], { cwd: dir, env })).stdout);
  assertScenario(seen);
  assertEntry(entry, exported("deno"));
});

test("Bun imports the installed package and decides with no init() call", { timeout: TEST_TIMEOUT_MS }, async () => {
  const dir = await project("bun", { files: ["esm.mjs"] });
  const { entry, seen } = lastJsonLine((await run(bin("bun"), ["esm.mjs"], { cwd: dir, env: { DO_NOT_TRACK: "1" } })).stdout);
  assertScenario(seen);
  assertEntry(entry, exported("bun"));
});

test("workerd (Miniflare) runs a worker bundled with the workerd condition, the .wasm a compiled module", { timeout: TEST_TIMEOUT_MS }, async () => {
  const { build } = await import("esbuild");
  const { Miniflare } = await import("miniflare");
  const dir = await project("workerd", { files: ["worker.mjs"] });
  const outdir = join(dir, "bundle");
  const { metafile } = await build({
    entryPoints: [join(dir, "worker.mjs")],
    outfile: join(outdir, "worker.mjs"),
    absWorkingDir: dir,
    bundle: true,
    format: "esm",
    platform: "neutral",
    conditions: ["workerd", "worker", "browser"], // as wrangler resolves
    plugins: [wasmModulesNextTo(outdir)],
    metafile: true,
    logLevel: "silent",
  });
  const worker = new Miniflare({
    modules: true,
    scriptPath: join(outdir, "worker.mjs"),
    modulesRoot: outdir,
    modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }],
    compatibilityDate: "2026-04-01",
    host: "127.0.0.1",
    port: 0,
    cf: false, // placeholder request.cf: never fetch Cloudflare's
  });
  try {
    const response = await worker.dispatchFetch("http://127.0.0.1/", { signal: AbortSignal.timeout(30_000) });
    const body = await response.json();
    if (body.error) assert.fail(`the worker threw: ${body.error}`);
    assertScenario(body.seen);
    assert.equal(body.compilesWasmFromBytes, false, "workerd refuses to compile WebAssembly from bytes, so the test means something");
  } finally {
    await worker.dispose();
  }
  assertEntry(bundledEntry(metafile), exported("workerd"));
});

test("Chromium runs the package as native ES modules from a static server", { timeout: TEST_TIMEOUT_MS }, async () => {
  const dir = await project("chromium-esm", { files: ["browser.mjs"] });
  const entry = exported("browser");
  writePage(dir, "index.html", { importMap: { ratebound: `/node_modules/ratebound/${entry}` }, script: "./browser.mjs" });
  const { seen, fetched, served } = await inChromium(dir, "index.html");
  assertScenario(seen);
  assert.ok(served.includes(`/node_modules/ratebound/${entry}`), `the page loaded ${entry}`);
  assert.ok(served.includes("/node_modules/ratebound/dist/wasm/ratebound-lite.bytes.js"), "the small .wasm (no grants) came inlined in a module");
  assert.ok(!served.some((path) => /\/ratebound\.(wasm|base64\.js)$/.test(path)), "the full .wasm is not loaded by a page that takes no grant");
  assert.deepEqual(fetched.filter((path) => path.endsWith(".wasm")), [], "no .wasm was fetched");
});

test("Chromium runs an esbuild bundle of the package", { timeout: TEST_TIMEOUT_MS }, async () => {
  const { build } = await import("esbuild");
  const dir = await project("chromium-bundle", { files: ["browser.mjs"] });
  const { metafile } = await build({
    entryPoints: [join(dir, "browser.mjs")],
    outdir: join(dir, "public"),
    absWorkingDir: dir,
    bundle: true,
    format: "esm",
    platform: "browser",
    metafile: true,
    logLevel: "silent",
  });
  // The .wasm is inside the bundle: the user ships the bundle and nothing else.
  writePage(dir, join("public", "index.html"), { script: "./browser.js" });
  const { seen, served } = await inChromium(dir, "public/index.html");
  assertScenario(seen);
  assert.deepEqual(served, ["/public/index.html", "/public/browser.js"], "the page loaded its bundle and nothing else (no .wasm)");
  assertEntry(bundledEntry(metafile), exported("browser"));
});

test("Chromium takes a grant: the page fetches the full module by URL then, natively and from an esbuild bundle that serves it beside", { timeout: TEST_TIMEOUT_MS }, async () => {
  const { build } = await import("esbuild");
  const dir = await project("chromium-grant", { files: ["browser-grant.mjs"] });
  const entry = exported("browser");
  const answer = { ok: true, refunded: 25, value: 85 };
  writePage(dir, "index.html", { importMap: { ratebound: `/node_modules/ratebound/${entry}` }, script: "./browser-grant.mjs" });
  const native = await inChromium(dir, "index.html");
  assert.deepEqual({ ok: native.ok, refunded: native.refunded, value: native.value }, answer);
  assert.ok(native.fetched.includes("/node_modules/ratebound/dist/wasm/ratebound.wasm"), "the grant fetched the full module beside the entry");
  // esbuild leaves the URL as written, relative to the bundle: the app serves the file there (docs/browser.md).
  await build({ entryPoints: [join(dir, "browser-grant.mjs")], outdir: join(dir, "public"), absWorkingDir: dir, bundle: true, format: "esm", platform: "browser", logLevel: "silent" });
  mkdirSync(join(dir, "public", "wasm"));
  copyFileSync(join(dir, "node_modules", "ratebound", "dist", "wasm", "ratebound.wasm"), join(dir, "public", "wasm", "ratebound.wasm"));
  writePage(dir, join("public", "index.html"), { script: "./browser-grant.js" });
  const bundled = await inChromium(dir, "public/index.html");
  assert.deepEqual({ ok: bundled.ok, refunded: bundled.refunded, value: bundled.value }, answer);
  assert.deepEqual(bundled.served, ["/public/index.html", "/public/browser-grant.js", "/public/wasm/ratebound.wasm"], "the bundle, then the full module on the grant");
});

test("Vite bundles the package into a Node server bundle (SSR, noExternal) that decides alone, moved away from node_modules", { timeout: TEST_TIMEOUT_MS }, async () => {
  // Before the .wasm was inlined, Vite kept `new URL("./wasm/ratebound.wasm", import.meta.url)`
  // and the bundle failed with ENOENT wherever the file was not copied next to it by hand.
  const { build } = await import("vite");
  const dir = await project("vite-ssr", { files: ["server-bundle.mjs"] });
  const output = await build({
    root: dir,
    configFile: false,
    logLevel: "silent",
    ssr: { noExternal: true, target: "node" },
    build: { ssr: join(dir, "server-bundle.mjs"), outDir: join(dir, "dist"), emptyOutDir: true },
  });
  const files = (Array.isArray(output) ? output : [output]).flatMap((result) => result.output.map((chunk) => chunk.fileName));
  assert.ok(files.includes("server-bundle.js") && files.every((file) => file.endsWith(".js")), `JavaScript only, no .wasm asset: ${files.join(", ")}`);
  const away = join(work, "vite-ssr-deployed");
  cpSync(join(dir, "dist"), away, { recursive: true });
  writeFileSync(join(away, "package.json"), JSON.stringify({ type: "module" }));
  const { seen } = lastJsonLine((await run(process.execPath, ["server-bundle.js"], { cwd: away })).stdout);
  assertScenario(seen);
});

/** The Convex app fixture with its dev tools, ready for `vitest run`. */
const convexProject = (name) =>
  project(name, {
    files: ["convex", "ratebound.spec.mjs", "vitest.config.mjs", "node20-shims.mjs"].map((file) => join("convex-app", file)),
    links: ["vitest", "convex", "convex-test", "@edge-runtime"],
  });

async function vitestRun(dir) {
  await run(process.execPath, [join(repo, "node_modules", "vitest", "vitest.mjs"), "run", "--root", dir], { cwd: dir });
}

test("Convex functions decide with ratebound in convex-test, the package resolved as vitest resolves it", { timeout: TEST_TIMEOUT_MS }, async () => {
  const dir = await convexProject("convex-vitest");
  await vitestRun(dir);
  assertEntry(readFileSync(join(dir, "ratebound-entry.txt"), "utf8"), exported("node", "import"));
});

test("Convex functions bundled as Convex's bundler bundles them decide with ratebound in convex-test", { timeout: TEST_TIMEOUT_MS }, async () => {
  const dir = await convexProject("convex-bundled");
  // Convex's own esbuild and its own .wasm plugin (which turns a .wasm import into
  // `new WebAssembly.Module(bytes)`), with the options of convex/dist/cjs/bundler/debugBundle.js.
  const convexMain = require.resolve("convex");
  const convexRequire = createRequire(convexMain);
  const { build } = convexRequire("esbuild");
  const { wasmPlugin } = convexRequire(join(dirname(convexMain), "bundler", "wasm.js"));
  const convexExternal = {
    name: "convex-external", // the app's `convex` package stays shared with convex-test
    setup: (b) => b.onResolve({ filter: /^convex(\/|$)/ }, (args) => ({ path: args.path, external: true })),
  };
  const functions = join(dir, "convex", "limits.js");
  const { metafile, outputFiles } = await build({
    entryPoints: [functions],
    outdir: join(dir, "out"),
    absWorkingDir: dir,
    bundle: true,
    platform: "browser",
    format: "esm",
    target: "esnext",
    conditions: ["convex", "module"],
    plugins: [convexExternal, wasmPlugin],
    write: false,
    metafile: true,
    logLevel: "silent",
  });
  writeFileSync(functions, outputFiles[0].contents); // convex-test now runs the bundle
  await vitestRun(dir);
  assert.ok(!existsSync(join(dir, "ratebound-entry.txt")), "the functions no longer import the package: it is inside the bundle");
  assertEntry(bundledEntry(metafile), exported("convex"));
  assert.match(outputFiles[0].text, /new WebAssembly\.Module\(/, "the bundle compiles the inlined .wasm as Convex does");
});
