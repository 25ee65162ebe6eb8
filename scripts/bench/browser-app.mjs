// What a browser app that uses ratebound ships: a small app importing the main entry `ratebound`,
// bundled and minified by esbuild as a user's build would do it (platform browser, so the
// package's `browser` export condition resolves), plus the `.wasm` that bundle fetches at run
// time. Each file gzipped alone at level 9 (`gzip -9`), as a server would send it.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";

/** The app: import, make a limiter on a MemoryStore, decide once, show the answer. */
export const APP_SOURCE = `import { RateLimiter, MemoryStore, SECOND } from "ratebound";
const limiter = new RateLimiter(new MemoryStore(), { preview: { kind: "token bucket", rate: 10, period: SECOND } });
const status = await limiter.limit("preview", { key: "button" });
document.body.dataset.ok = String(status.ok);
`;

/** The `.wasm` files the bundled code fetches: `new URL("….wasm", import.meta.url)` in an input. */
const WASM_URL = /new\s+URL\(\s*["']([^"']+\.wasm)["']\s*,\s*import\.meta\.url\s*\)/g;

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
 * Bundles {@link APP_SOURCE} against the package installed in `work/node_modules/ratebound`.
 *
 * @param {string} work A project directory with the built package in node_modules/ratebound.
 * @returns {Promise<object>} `jsRaw`, `jsGzip`, `wasmRaw`, `wasmGzip`, `total` (both gzipped),
 * `wasmFiles` (paths in the package), `fetched` (each `.wasm` URL relative to the bundle, with the
 * file to serve there), `bundle` (the bundle's path), `inputs` (each bundled module's minified bytes, largest
 * first), `sections` (of the `.wasm`), `resolvedEntry` (the package file the import resolved to).
 * @example
 * const app = await measureBrowserApp(work); // app.total <= 24 * 1024 is the target
 */
export async function measureBrowserApp(work) {
  const dir = join(work, "browser-app");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "app.js"), APP_SOURCE);
  const outfile = join(dir, "out", "app.js");
  const { metafile } = await build({
    absWorkingDir: work,
    entryPoints: [join(dir, "app.js")],
    outfile,
    bundle: true,
    minify: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    // Should the browser entry ever import the .wasm itself, emit it as a file, as a user's
    // esbuild config would have to; today the entry fetches it by URL, which esbuild leaves as is.
    loader: { ".wasm": "file" },
    metafile: true,
    logLevel: "error",
  });
  const [outputPath, output] = Object.entries(metafile.outputs).find(([path]) => path.endsWith(".js"));
  const js = readFileSync(resolve(work, outputPath));
  const inputs = Object.entries(output.inputs)
    .map(([path, { bytesInOutput }]) => ({ path: path.replace(/^node_modules\/ratebound\//, ""), bytes: bytesInOutput }))
    .filter((input) => input.bytes > 0)
    .sort((a, b) => b.bytes - a.bytes);
  const packageRoot = join(work, "node_modules", "ratebound");
  const appInput = Object.keys(metafile.inputs).find((path) => path.endsWith("app.js") && !path.includes("node_modules"));
  const resolvedEntry = relative(packageRoot, resolve(work, metafile.inputs[appInput].imports[0].path));
  // The .wasm: emitted next to the bundle if esbuild handled it as an asset, else the file the
  // package's code fetches relative to itself (which the app must serve beside the bundle).
  // `fetched` maps each URL (relative to the bundle) to the file to serve there.
  const fetched = new Map(Object.keys(metafile.outputs).filter((path) => path.endsWith(".wasm")).map((path) => [relative(dirname(outfile), resolve(work, path)), resolve(work, path)]));
  if (fetched.size === 0) {
    for (const input of Object.keys(output.inputs)) {
      for (const match of readFileSync(resolve(work, input), "utf8").matchAll(WASM_URL)) fetched.set(match[1], resolve(work, dirname(input), match[1]));
    }
  }
  const wasmFiles = new Set(fetched.values());
  if (wasmFiles.size === 0) throw new Error("the bundled app fetches no .wasm: the browser entry changed how it loads the core");
  const wasm = [...wasmFiles].map((path) => readFileSync(path));
  const wasmRaw = wasm.reduce((sum, bytes) => sum + bytes.length, 0);
  const wasmGzip = wasm.reduce((sum, bytes) => sum + gzip(bytes), 0);
  const jsGzip = gzip(js);
  return {
    jsRaw: js.length,
    jsGzip,
    wasmRaw,
    wasmGzip,
    total: jsGzip + wasmGzip,
    wasmFiles: [...wasmFiles].map((path) => relative(packageRoot, path)),
    inputs,
    sections: wasmSections(wasm[0]),
    resolvedEntry,
    bundle: outfile,
    fetched: [...fetched].map(([url, path]) => ({ url, path })),
    esbuildVersion: (await import("esbuild")).version,
  };
}
