// Startup cost of ratebound, per runtime: the time from the start of `import("ratebound")` to
// the first decision completing, measured inside the runtime with performance.now(), as the
// median over several fresh processes (fresh workerd instances, fresh browsers). Process
// startup itself is not counted. A measurement, not a test: it prints a table and asserts
// nothing. Needs a built pkg/ (`npm run bench:startup` builds it when stale), or another build
// of the package given with --pkg (to compare two builds). The browser rows also give the bytes the
// page downloaded: every file it fetched, each gzipped alone at level 9, as a server sends it.
//
//   node scripts/bench-startup.mjs [--runs N] [--pkg DIR]
import { spawn } from "node:child_process";
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { basename, extname, join, normalize, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const root = fileURLToPath(new URL("..", import.meta.url));
// Deno lives in tools/deno, outside the root lockfile (see tools/deno/package.json).
const bin = (name) =>
  name === "deno" ? join(root, "tools", "deno", "node_modules", ".bin", "deno") : join(root, "node_modules", ".bin", name);
const runsFlag = process.argv.indexOf("--runs");
const RUNS = runsFlag > 0 ? Number(process.argv[runsFlag + 1]) : 7;
const pkgFlag = process.argv.indexOf("--pkg");
const PKG = pkgFlag > 0 ? process.argv[pkgFlag + 1] : join(root, "pkg");
const CHROMIUM = "/usr/bin/chromium";
const CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];

// The probe every runtime runs: import, make a limiter, decide once.
const PROBE_BODY = `
  const { RateLimiter, MemoryStore } = LOAD;
  const imported = performance.now();
  const limiter = new RateLimiter(new MemoryStore(), { probe: { kind: "token bucket", rate: 10, period: 1000 } });
  const result = await limiter.limit("probe");
  if (!result.ok) throw new Error("the first decision was refused");
  const decided = performance.now();
  const timing = { importMs: imported - start, totalMs: decided - start, fromStartMs: decided };`;
const probe = (load) => `const start = performance.now();${PROBE_BODY.replace("LOAD", load)}`;

const ESM_PROBE = `${probe('await import("ratebound")')}\nconsole.log(JSON.stringify(timing));\n`;
const CJS_PROBE = `(async () => {${probe('require("ratebound")')}\nconsole.log(JSON.stringify(timing));\n})();\n`;
const WORKER_PROBE = `export default {\n  async fetch() {${probe('await import("ratebound")')}\n    return Response.json(timing);\n  },\n};\n`;
const PAGE = `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,">
<script type="importmap">{"imports":{"ratebound":"/node_modules/ratebound/ENTRY"}}</script>
<script type="module">${probe('await import("ratebound")')}\nwindow.timing = timing;</script></head><body></body></html>`;

/** Runs a command within a time limit in its own process group; resolves with its stdout. */
function run(command, args, { cwd, env = {}, timeoutMs = 60_000 }) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: { ...process.env, NO_COLOR: "1", ...env }, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk) => (stderr += chunk));
    const kill = () => {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // already gone
      }
    };
    const timer = setTimeout(kill, timeoutMs);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      kill();
      if (code === 0) resolve(stdout);
      else reject(new Error(`${command} ${args.join(" ")} exited with ${code}: ${stderr.trim().split("\n").slice(-3).join(" | ")}`));
    });
  });
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};

/**
 * `RUNS` fresh samples of one runtime, summarised. `setup` prepares and returns the sampler;
 * a failure anywhere becomes the row's note instead of a figure.
 */
async function measure(label, setup) {
  process.stderr.write(`bench:startup: ${label} `);
  try {
    const sample = await setup();
    const samples = [];
    for (let i = 0; i < RUNS; i++) {
      samples.push(await sample());
      process.stderr.write(".");
    }
    process.stderr.write("\n");
    const totals = samples.map((timing) => timing.totalMs);
    const row = { label, importMs: median(samples.map((timing) => timing.importMs)), totalMs: median(totals), minMs: Math.min(...totals), maxMs: Math.max(...totals), fromStartMs: median(samples.map((timing) => timing.fromStartMs)) };
    if (samples[0].downloaded) row.downloaded = samples[0].downloaded;
    return row;
  } catch (error) {
    process.stderr.write(` failed\n`);
    return { label, note: `not measured: ${error.message.split("\n")[0]}` };
  }
}

const version = async (command, args, cwd) => (await run(command, args, { cwd }).catch(() => "?")).trim().split("\n")[0];

async function main() {
  const pkg = PKG;
  if (!existsSync(join(pkg, "dist", "index.js"))) {
    console.error(`bench:startup: ${pkg} is not built; run \`node scripts/build.mjs\` first`);
    process.exit(1);
  }
  const manifest = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8"));
  const work = mkdtempSync(join(tmpdir(), "ratebound-bench-"));
  try {
    // A project with a copy of the built package as its dependency.
    cpSync(pkg, join(work, "node_modules", "ratebound"), { recursive: true });
    writeFileSync(join(work, "package.json"), JSON.stringify({ name: "ratebound-bench", private: true, type: "module" }));
    writeFileSync(join(work, "probe.mjs"), ESM_PROBE);
    writeFileSync(join(work, "probe.cjs"), CJS_PROBE);
    // Each sample a fresh process that prints the probe's JSON.
    const freshProcesses = (command, args, env) => () => async () => JSON.parse(await run(command, args, { cwd: work, env }));
    const closers = [];

    const rows = [];
    const nodeVersion = process.version;
    rows.push(await measure(`Node ${nodeVersion}, import (${manifest.exports["."].node.import})`, freshProcesses(process.execPath, ["probe.mjs"])));
    rows.push(await measure(`Node ${nodeVersion}, require (${manifest.exports["."].node.require})`, freshProcesses(process.execPath, ["probe.cjs"])));
    const denoEnv = { DENO_DIR: join(work, "deno-dir"), DENO_NO_UPDATE_CHECK: "1" };
    const deno = (await version(bin("deno"), ["--version"], work)).replace(/ \(.*/, "").replace(/^deno/, "Deno");
    rows.push(await measure(`${deno}, no permissions (${manifest.exports["."].deno})`, freshProcesses(bin("deno"), ["run", "--no-prompt", "probe.mjs"], denoEnv)));
    const bun = await version(bin("bun"), ["--version"], work);
    rows.push(await measure(`Bun ${bun} (${manifest.exports["."].bun})`, freshProcesses(bin("bun"), ["probe.mjs"], { DO_NOT_TRACK: "1" })));
    rows.push(await measure(`workerd via Miniflare (${manifest.exports["."].workerd}) [1]`, () => workerdSampler(work)));
    const browser = manifest.exports["."].browser;
    const pages = writeBrowserPages(work, browser);
    rows.push(await measure(`Chromium, native ES modules (${browser}) [2]`, async () => (await pages, chromiumSampler(work, "index.html", closers))));
    rows.push(await measure(`Chromium, esbuild bundle (${browser}) [3]`, async () => (await pages, chromiumSampler(work, "bundle/index.html", closers))));
    print(rows);
    await Promise.all(closers.map((close) => close()));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** One fresh Miniflare (workerd) per sample, the worker bundled as wrangler would. */
async function workerdSampler(work) {
  const { build } = await import("esbuild");
  const { Miniflare } = await import("miniflare");
  const outdir = join(work, "worker");
  writeFileSync(join(work, "worker.mjs"), WORKER_PROBE);
  const wasmNextToBundle = {
    name: "wasm-modules-next-to-the-bundle",
    setup(b) {
      b.onResolve({ filter: /\.wasm$/ }, (args) => {
        mkdirSync(outdir, { recursive: true });
        copyFileSync(join(args.resolveDir, args.path), join(outdir, basename(args.path)));
        return { path: `./${basename(args.path)}`, external: true };
      });
    },
  };
  await build({
    entryPoints: [join(work, "worker.mjs")],
    outfile: join(outdir, "worker.mjs"),
    absWorkingDir: work,
    bundle: true,
    format: "esm",
    platform: "neutral",
    conditions: ["workerd", "worker", "browser"], // as wrangler resolves
    plugins: [wasmNextToBundle],
    logLevel: "silent",
  });
  return async () => {
    const worker = new Miniflare({
      modules: true,
      scriptPath: join(outdir, "worker.mjs"),
      modulesRoot: outdir,
      modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }],
      compatibilityDate: "2026-04-01",
      host: "127.0.0.1",
      port: 0,
      cf: false,
    });
    try {
      const response = await worker.dispatchFetch("http://127.0.0.1/", { signal: AbortSignal.timeout(30_000) });
      if (!response.ok) throw new Error(await response.text());
      return await response.json();
    } finally {
      await worker.dispose();
    }
  };
}

const MIME = { ".html": "text/html", ".js": "text/javascript", ".mjs": "text/javascript", ".wasm": "application/wasm" };

/**
 * Samples of a page of `work` in headless Chromium: per sample a fresh browser, first settled on
 * a trivial page of the same server, then a new context (empty HTTP and code caches) opens the
 * page from loopback.
 */
async function chromiumSampler(work, page, closers) {
  const { chromium } = await import("playwright-core");
  let downloaded = new Map(); // path → gzip -9 bytes, per sample
  const server = createServer(async (request, response) => {
    const path = normalize(join(work, decodeURIComponent(new URL(request.url, "http://127.0.0.1").pathname)));
    if (!path.startsWith(work + sep)) return response.writeHead(403).end();
    try {
      const body = await readFile(path);
      if (!path.endsWith("warmup.html")) downloaded.set(path.slice(work.length), gzipSync(body, { level: 9 }).length);
      response.writeHead(200, { "content-type": MIME[extname(path)] ?? "application/octet-stream" }).end(body);
    } catch {
      response.writeHead(404).end();
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(() => new Promise((resolve) => {
    server.closeAllConnections();
    server.close(resolve);
  }));
  const url = `http://127.0.0.1:${server.address().port}/${page}`;
  return async () => {
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, timeout: 30_000 });
    try {
      await (await browser.newPage()).goto(new URL("/warmup.html", url).href); // the browser settles first
      const tab = await (await browser.newContext()).newPage();
      downloaded = new Map();
      await tab.goto(url, { timeout: 30_000 });
      const timing = await (await tab.waitForFunction(() => window.timing, null, { timeout: 30_000 })).jsonValue();
      return { ...timing, downloaded: [...downloaded] };
    } finally {
      await browser.close();
    }
  };
}

/** The browser pages: native ES modules through an import map, and an esbuild bundle. */
async function writeBrowserPages(work, entry) {
  const { build } = await import("esbuild");
  writeFileSync(join(work, "index.html"), PAGE.replace("ENTRY", entry.replace(/^\.\//, "")));
  writeFileSync(join(work, "warmup.html"), `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"><script type="module">window.ready = true;</script></head></html>`);
  writeFileSync(join(work, "probe-browser.mjs"), `${probe('await import("ratebound")')}\nwindow.timing = timing;\n`);
  const outdir = join(work, "bundle");
  await build({ entryPoints: [join(work, "probe-browser.mjs")], outdir, absWorkingDir: work, bundle: true, minify: true, format: "esm", platform: "browser", logLevel: "silent" });
  // esbuild keeps a `new URL("./wasm/….wasm", import.meta.url)` (builds that fetch their .wasm): ship the file there.
  for (const [, file] of readFileSync(join(outdir, "probe-browser.js"), "utf8").matchAll(/"\.\/wasm\/([\w.-]+\.wasm)"/g)) {
    mkdirSync(join(outdir, "wasm"), { recursive: true });
    copyFileSync(join(work, "node_modules", "ratebound", "dist", "wasm", file), join(outdir, "wasm", file));
  }
  writeFileSync(join(outdir, "index.html"), `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"><script type="module" src="./probe-browser.js"></script></head><body></body></html>`);
}

function print(rows) {
  const ms = (value) => value.toFixed(1);
  const header = ["runtime (entry)", "import (ms)", "import → first decision (ms)", "min–max (ms)", "start → first decision (ms) [4]"];
  const lines = rows.map((row) => (row.note ? [row.label, row.note, "", "", ""] : [row.label, ms(row.importMs), ms(row.totalMs), `${ms(row.minMs)}–${ms(row.maxMs)}`, row.fromStartMs < 1e9 ? ms(row.fromStartMs) : "n/a"]));
  const widths = header.map((title, column) => Math.max(title.length, ...lines.map((line) => line[column].length)));
  const format = (cells) => `| ${cells.map((cell, column) => cell.padEnd(widths[column])).join(" | ")} |`;
  console.log(`Startup: median of ${RUNS} fresh processes each, measured inside the runtime with performance.now().\n`);
  console.log(format(header));
  console.log(`|${widths.map((width) => "-".repeat(width + 2)).join("|")}|`);
  for (const line of lines) console.log(format(line));
  const kib = (bytes) => `${(bytes / 1024).toFixed(1)} KiB`;
  for (const row of rows.filter((row) => row.downloaded)) {
    const total = row.downloaded.reduce((sum, [, bytes]) => sum + bytes, 0);
    console.log(`\n${row.label}: downloaded ${kib(total)} gzip -9 (${row.downloaded.map(([path, bytes]) => `${path} ${kib(bytes)}`).join(", ")})`);
  }
  console.log(`
[1] The worker is bundled (esbuild turns the dynamic import into lazy module initialisation) and
    workerd compiles the .wasm when it loads the worker, before the request: the figure is
    instantiation plus the first decision. workerd's clock has 1 ms resolution.
[2] A fresh browser per run, the page in a new context (empty caches), served from loopback: the
    figure includes fetching the entry, its modules (and the .wasm, for builds that fetch it),
    and compiling the .wasm.
[3] The same, with the page's script bundled and minified by esbuild.
[4] performance.now() at the first decision: from the process's start (Node, Deno, Bun), or from
    the navigation's start (Chromium: loading the page and its scripts included, which the import
    column does not see in a bundle). workerd's performance.now() is the time of day: n/a.
Convex is not measured: its runtime is not available locally (convex-test runs functions in Node).`);
}

await main();
