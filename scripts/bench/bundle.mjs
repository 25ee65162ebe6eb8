// Bundle sizes of the built package: every .wasm it ships, raw and gzipped, the JS each runtime
// entry of its main export loads (its static imports followed within dist/), and every JS file
// the package ships. gzip is zlib at level 9, the equivalent of `gzip -9`; each file is gzipped
// alone, as it is served.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { gzipSync } from "node:zlib";

/**
 * The files the main export (`"."`) resolves to, one per runtime condition, as paths in dist/.
 * @param {string} packageRoot The package's folder (with package.json).
 * @returns {string[]}
 * @example
 * mainEntries(packageRoot); // ["node.js", "node.cjs", "browser.js", "deno.js", "workerd.js"]
 */
export function mainEntries(packageRoot) {
  const { exports } = JSON.parse(readFileSync(join(packageRoot, "package.json"), "utf8"));
  const files = new Set();
  const visit = (target) => {
    if (typeof target === "string") {
      if (/\.(c|m)?js$/.test(target)) files.add(relative("dist", target));
    } else if (target && typeof target === "object") {
      for (const [condition, value] of Object.entries(target)) if (condition !== "types") visit(value);
    }
  };
  visit(typeof exports === "object" && exports !== null && "." in exports ? exports["."] : exports);
  return [...files];
}

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

function allFiles(dist, pattern, dir = dist) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return allFiles(dist, pattern, path);
    return pattern.test(entry.name) ? [relative(dist, path)] : [];
  });
}

/**
 * Every `.wasm` shipped, the JS each runtime entry loads, and every JS file shipped.
 * @param {string} packageRoot The package's folder (with package.json and dist/).
 * @returns {{ wasm: { file: string, raw: number, gzip: number }[], entries: { entry: string, files: string[], jsGzip: number }[], everyJs: string[], allJsGzip: number }}
 * @example
 * measureBundle(packageRoot).allJsGzip; // bytes, every .js and .cjs file gzipped alone
 */
export function measureBundle(packageRoot) {
  const dist = join(packageRoot, "dist");
  const sum = (files) => files.reduce((total, file) => total + gzipped(join(dist, file)), 0);
  const wasm = allFiles(dist, /\.wasm$/).map((file) => ({ file, raw: readFileSync(join(dist, file)).length, gzip: gzipped(join(dist, file)) }));
  const entries = mainEntries(packageRoot).map((entry) => {
    const files = jsLoadedBy(dist, entry);
    return { entry, files, jsGzip: sum(files) };
  });
  const everyJs = allFiles(dist, /\.(c|m)?js$/);
  return { wasm, entries, everyJs, allJsGzip: sum(everyJs) };
}
