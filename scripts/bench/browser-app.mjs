// What a browser app that uses ratebound ships: a small app importing the package, bundled and
// minified by esbuild as a user's build would do it (platform browser, so the package's `browser`
// export conditions resolve), two ways: code splitting on (`--splitting --format=esm`: a dynamic
// `import()` becomes a chunk of its own), and a default bundle (no splitting, one file: what
// wrangler does and a newcomer's first try, where every dynamic `import()` is inlined). Plus
// every `.wasm` the bundle can load, however the package ships it:
//
// - imported as a module (`import wasm from "./x.wasm"`): esbuild's `file` loader emits it;
// - fetched by URL (`new URL("./x.wasm", import.meta.url)`): Vite, webpack 5 and Parcel emit
//   the file that pattern names, esbuild leaves the URL as it is, so the bench copies the file
//   where that URL points, beside the chunk, as the user's server would serve it. Such a file
//   is counted as lazy: the package fetches by URL only the full module, on the first grant
//   (the Chromium run of ./browser-run.mjs counts what a page really fetched);
// - inlined in the JavaScript (base64, or one character per byte): counted with the JavaScript.
//
// Each file gzipped alone at level 9 (`gzip -9`), as a server sends it. ./browser-run.mjs then
// runs the app in Chromium and counts what the page actually downloaded to decide.
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";

/**
 * The apps measured: the main entry (a limiter on a MemoryStore, one decision, and a
 * `calculateRateLimit`), and the preview alone.
 */
export const APPS = {
  main: {
    label: "`RateLimiter` + `MemoryStore` + one `limit()` + `calculateRateLimit`, importing `ratebound`",
    source: `import { RateLimiter, MemoryStore, SECOND, calculateRateLimit } from "ratebound";
const limiter = new RateLimiter(new MemoryStore(), { preview: { kind: "token bucket", rate: 10, period: SECOND } });
const status = await limiter.limit("preview", { key: "button" });
const next = calculateRateLimit({ value: 10, ts: Date.now() }, { kind: "token bucket", rate: 10, period: SECOND }, Date.now(), 1);
document.body.dataset.ok = String(status.ok && next.value === 9);
`,
  },
  preview: {
    label: "one `RateLimitPreview`, importing only `ratebound/preview`",
    source: `import { RateLimitPreview } from "ratebound/preview";
const snapshot = { value: 10, ts: Date.now(), shard: 0, config: { kind: "token bucket", rate: 10, period: 1000, capacity: 10, shards: 1 } };
const preview = new RateLimitPreview(snapshot);
document.body.dataset.ok = String(preview.status().ok);
`,
  },
};

/** `new URL("….wasm", import.meta.url)` in a module: the pattern bundlers turn into an asset. */
const WASM_URL = /new\s+URL\(\s*["'`]([^"'`]+\.wasm)["'`]\s*,\s*import\.meta\.url\s*\)/g;
/** A WebAssembly module's first bytes ("\0asm"), as base64 or as a byte list, inside JavaScript. */
const INLINE_WASM = /AGFzbQ|\\0asm|\\x00asm|\\u0000asm|0,\s*97,\s*115,\s*109/;

const gzip = (bytes) => gzipSync(bytes, { level: 9 }).length;

/**
 * Section sizes of a `.wasm`, raw and gzipped alone: code (functions), data (static bytes:
 * strings, tables), and everything else (types, imports, exports, names).
 *
 * @param {Uint8Array} bytes A WebAssembly module.
 * @returns {{ code: { raw: number, gzip: number }, data: { raw: number, gzip: number }, other: { raw: number }, functions: number }}
 * @example
 * wasmSections(readFileSync("ratebound_bg.wasm")).code.raw; // 60123
 */
export function wasmSections(bytes) {
  let at = 8;
  const leb = () => {
    let result = 0;
    let shift = 0;
    let byte;
    do {
      byte = bytes[at++];
      result += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    } while (byte & 0x80);
    return result;
  };
  const found = { code: undefined, data: undefined };
  let functions = 0;
  while (at < bytes.length) {
    const id = bytes[at++];
    const size = leb();
    const body = bytes.subarray(at, at + size);
    if (id === 10) {
      found.code = body;
      functions = leb(); // the count of function bodies opens the section
    }
    if (id === 11) found.data = body;
    at = body.byteOffset - bytes.byteOffset + size;
  }
  const sized = (body) => ({ raw: body?.length ?? 0, gzip: body ? gzip(body) : 0 });
  const code = sized(found.code);
  const data = sized(found.data);
  return { code, data, other: { raw: bytes.length - code.raw - data.raw }, functions };
}

/**
 * Bundles one of {@link APPS} against the package installed in `project/node_modules/ratebound`.
 *
 * @param {string} project A project with the built package in node_modules/ratebound (./package.mjs).
 * @param {keyof typeof APPS} name Which app.
 * @param {{ splitting?: boolean }} [options] `splitting: false`: a default bundle, one file (default: split).
 * @returns {Promise<object>} `name`, `label`, `root` (the folder to serve), `files` (every file the
 * build made or the bundle fetches: `{ url, aliases, path, kind: "js" | "wasm", raw, gzip, eager, from, text }`,
 * `text` the file's bytes as latin1,
 * `url` relative to `root`, `aliases` every URL that serves the same file, `eager` for the entry,
 * the chunks it imports statically and a `.wasm` it imports as a module),
 * `static` (sums over every file: `{ jsRaw, jsGzip, wasmRaw, wasmGzip, total }`), `eager` (the
 * same over the entry, its static chunks and every `.wasm`: what loads before anything lazy),
 * `inlineWasm` (JS files that carry a module's bytes), `inputs` (each bundled module's minified
 * bytes, largest first), `wasm` (per `.wasm`: its package path and `sections`), `resolvedEntry`
 * (the package file the import resolved to), `splitting`, `esbuildVersion`.
 * @example
 * const app = await measureBrowserApp(project, "main"); // app.static.total: bytes, gzip
 */
export async function measureBrowserApp(project, name, { splitting = true } = {}) {
  const { label, source } = APPS[name];
  const dir = join(project, `browser-${name}${splitting ? "" : "-default"}`);
  const root = join(dir, "out");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "app.js"), source);
  const { metafile } = await build({
    absWorkingDir: project,
    entryPoints: [join(dir, "app.js")],
    outdir: root,
    bundle: true,
    minify: true,
    splitting,
    format: "esm",
    platform: "browser",
    target: "es2022",
    loader: { ".wasm": "file" },
    metafile: true,
    logLevel: "error",
  });
  const packageRoot = join(project, "node_modules", "ratebound");
  const outputs = Object.entries(metafile.outputs).map(([path, output]) => ({ path: resolve(project, path), output }));
  const entry = outputs.find(({ output }) => output.entryPoint);
  // The entry and the chunks it imports statically load first; dynamic imports load when reached.
  const eager = new Set();
  const visit = (path) => {
    if (eager.has(path)) return;
    eager.add(path);
    const output = outputs.find((candidate) => candidate.path === path)?.output;
    for (const imported of output?.imports ?? []) if (imported.kind === "import-statement") visit(resolve(project, imported.path));
  };
  visit(entry.path);
  const files = [];
  const describe = (path, url, kind, from, lazy = false) => {
    const bytes = readFileSync(path);
    files.push({ url, aliases: [url], path, kind, raw: bytes.length, gzip: gzip(bytes), eager: !lazy && (kind === "wasm" || eager.has(path)), from, text: bytes.toString("latin1") });
  };
  for (const { path } of outputs) {
    if (path.endsWith(".js")) describe(path, relative(root, path), "js", "emitted by esbuild");
    else if (path.endsWith(".wasm")) describe(path, relative(root, path), "wasm", "imported as a module, emitted by esbuild");
  }
  // .wasm files a bundled module fetches by URL: served where the URL points from its chunk.
  for (const { path: chunk, output } of outputs.filter(({ path }) => path.endsWith(".js"))) {
    for (const input of Object.keys(output.inputs)) {
      for (const match of readFileSync(resolve(project, input), "utf8").matchAll(WASM_URL)) {
        const source = resolve(project, dirname(input), match[1]);
        const served = resolve(dirname(chunk), match[1]);
        mkdirSync(dirname(served), { recursive: true });
        copyFileSync(source, served);
        // A bundler emits one asset per file, however many modules name it: count it once,
        // under every URL that names it.
        const known = files.find((file) => file.source === source);
        if (known) {
          if (!known.aliases.includes(relative(root, served))) known.aliases.push(relative(root, served));
          continue;
        }
        describe(served, relative(root, served), "wasm", `fetched by URL from \`${relative(packageRoot, resolve(project, input))}\``, true);
        Object.assign(files.at(-1), { source, packagePath: relative(packageRoot, source) });
      }
    }
  }
  const inlineWasm = files.filter((file) => file.kind === "js" && INLINE_WASM.test(readFileSync(file.path, "latin1"))).map((file) => file.url);
  const sum = (chosen) => {
    const js = chosen.filter((file) => file.kind === "js");
    const wasm = chosen.filter((file) => file.kind === "wasm");
    const add = (list, field) => list.reduce((total, file) => total + file[field], 0);
    return { jsRaw: add(js, "raw"), jsGzip: add(js, "gzip"), wasmRaw: add(wasm, "raw"), wasmGzip: add(wasm, "gzip"), total: add(chosen, "gzip"), files: chosen.length };
  };
  if (!files.some((file) => file.kind === "wasm") && inlineWasm.length === 0) {
    throw new Error(`the ${name} app loads no WebAssembly that the bench can find (no .wasm emitted or fetched by URL, none inlined): the browser entry changed how it loads the core`);
  }
  const inputs = outputs
    .filter(({ path }) => path.endsWith(".js"))
    .flatMap(({ output }) => Object.entries(output.inputs))
    .map(([path, { bytesInOutput }]) => ({ path: path.replace(/^node_modules\/ratebound\//, ""), bytes: bytesInOutput }))
    .filter((input) => input.bytes > 0)
    .sort((a, b) => b.bytes - a.bytes);
  const appInput = Object.keys(metafile.inputs).find((path) => path.endsWith(join(relative(project, dir), "app.js")));
  const resolvedEntry = relative(packageRoot, resolve(project, metafile.inputs[appInput].imports[0].path));
  const wasm = files.filter((file) => file.kind === "wasm").map((file) => ({ url: file.url, packagePath: file.packagePath ?? file.url, sections: wasmSections(readFileSync(file.path)) }));
  return {
    name,
    label,
    root,
    files,
    static: sum(files),
    eager: sum(files.filter((file) => file.eager)),
    inlineWasm,
    inputs,
    wasm,
    resolvedEntry,
    splitting,
    esbuildVersion: (await import("esbuild")).version,
  };
}
