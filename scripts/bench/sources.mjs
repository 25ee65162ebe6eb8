// The size of the house: the longest Rust or TypeScript source files under src/ and ts/, in
// lines as `wc -l` counts them (newline characters, plus a last line without one). Generated
// code is left out: ts/wasm (wasm-bindgen's output) and every `_generated` folder.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";

/** The folders searched, relative to the repository root. */
export const SOURCE_DIRS = ["src", "ts"];
const SOURCE_FILE = /\.(rs|ts|tsx|mts|cts)$/;
const GENERATED = new Set([join("ts", "wasm")]);

/** Lines of a text as `wc -l` reports them, counting a last line that lacks its newline. */
export function lineCount(text) {
  let lines = 0;
  for (let at = text.indexOf("\n"); at >= 0; at = text.indexOf("\n", at + 1)) lines++;
  return text.length > 0 && !text.endsWith("\n") ? lines + 1 : lines;
}

function sourceFiles(root, dir) {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return GENERATED.has(path) || entry.name === "_generated" || entry.name === "node_modules" ? [] : sourceFiles(root, path);
    return SOURCE_FILE.test(entry.name) ? [path] : [];
  });
}

/**
 * Every Rust and TypeScript source file under src/ and ts/ with its line count, longest first.
 *
 * @param {string} root The repository root.
 * @returns {{ files: { path: string, lines: number }[], largest: { path: string, lines: number } }}
 * @example
 * const { largest } = measureSources(root); // { path: "src/slab.rs", lines: 336 }
 */
export function measureSources(root) {
  const files = SOURCE_DIRS.flatMap((dir) => sourceFiles(root, dir))
    .map((path) => ({ path: relative(root, join(root, path)), lines: lineCount(readFileSync(join(root, path), "utf8")) }))
    .sort((a, b) => b.lines - a.lines || a.path.localeCompare(b.path));
  if (files.length === 0) throw new Error(`no .rs or .ts file under ${SOURCE_DIRS.join(", ")}`);
  return { files, largest: files[0] };
}
