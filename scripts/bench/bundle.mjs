// Bundle sizes of the built package: the .wasm raw and gzipped, the JS each runtime entry loads
// (its static imports followed within dist/), and every JS file the package ships. gzip is
// zlib at level 9, the equivalent of `gzip -9`; each file is gzipped alone, as it is served.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { gzipSync } from "node:zlib";

/** The runtime entries of the package's main export, as files in dist/. */
export const ENTRIES = ["node.js", "node.cjs", "browser.js", "deno.js", "workerd.js"];
const WASM = join("wasm", "ratebound_bg.wasm");

const gzipped = (path) => gzipSync(readFileSync(path), { level: 9 }).length;

/** Relative specifiers of the static imports and re-exports (and `require`s) in a JS file. */
function specifiers(source) {
  const found = [];
  const patterns = [
    /\b(?:import|export)\s+(?:source\s+)?(?:[\w*{}\s,$]+?\s+from\s+)?["'](\.{1,2}\/[^"']+)["']/g,
    /\brequire\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/g,
  ];
  for (const pattern of patterns) for (const match of source.matchAll(pattern)) found.push(match[1]);
  return found;
}

/**
 * The JS files `entry` loads, itself included, as paths relative to `dist`.
 * @param {string} dist The package's dist/ folder.
 * @param {string} entry A file in it.
 * @returns {string[]}
 * @example
 * jsLoadedBy(dist, "node.js"); // ["node.js", "wasm/ratebound.js", "index.js", …]
 */
export function jsLoadedBy(dist, entry) {
  const seen = new Set();
  const visit = (file) => {
    if (seen.has(file) || !/\.(c|m)?js$/.test(file)) return;
    seen.add(file);
    for (const specifier of specifiers(readFileSync(join(dist, file), "utf8"))) {
      visit(relative(dist, join(dist, dirname(file), specifier)));
    }
  };
  visit(entry);
  return [...seen];
}

function allJs(dist, dir = dist) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return allJs(dist, path);
    return /\.(c|m)?js$/.test(entry.name) ? [relative(dist, path)] : [];
  });
}

/**
 * The `.wasm` raw and gzipped, the JS each runtime entry loads, and every JS file shipped.
 * @param {string} dist The package's dist/ folder.
 * @returns {{ wasmRaw: number, wasmGzip: number, entries: { entry: string, files: string[], jsGzip: number }[], everyJs: string[], allJsGzip: number, total: number }}
 * @example
 * measureBundle(dist).allJsGzip; // bytes, every .js and .cjs file gzipped alone
 */
export function measureBundle(dist) {
  const sum = (files) => files.reduce((total, file) => total + gzipped(join(dist, file)), 0);
  const wasmRaw = readFileSync(join(dist, WASM)).length;
  const wasmGzip = gzipped(join(dist, WASM));
  const entries = ENTRIES.map((entry) => {
    const files = jsLoadedBy(dist, entry);
    return { entry, files, jsGzip: sum(files) };
  });
  const everyJs = allJs(dist);
  return { wasmRaw, wasmGzip, entries, everyJs, allJsGzip: sum(everyJs), total: wasmGzip + sum(everyJs) };
}
