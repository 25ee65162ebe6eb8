// The bytes of issue 30 against their targets: each browser app of ./bench/browser-app.mjs (the
// main entry's `RateLimiter` + `MemoryStore` + `limit()` + `calculateRateLimit`, and
// `ratebound/preview` alone), bundled by esbuild both ways users ship it (a default bundle, one
// file; and `--splitting --format=esm`), gzip -9, what loads before the first decision (the
// entry, the chunks it imports statically and the inlined `.wasm`; a grant's lazy chunk and the
// full module it fetches are not). Prints one line per figure against its target; a measurement,
// it exits 0 whether the targets are met or not (tests/js/bundle-size.test.mjs checks what the
// bundles must not hold).
//
//   node scripts/size-check.mjs [--pkg DIR]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { APPS, measureBrowserApp } from "./bench/browser-app.mjs";
import { installPackage, packageDir } from "./bench/package.mjs";

/** The targets, gzip bytes, per app (issue 30 item 3). */
export const SIZE_TARGETS = { main: 12 * 1024, preview: 6 * 1024 };

/**
 * Every app, bundled both ways, against its target.
 *
 * @param {string} pkg A built package directory.
 * @returns {Promise<{ app: string, bundle: "default" | "split", eagerGzip: number, allGzip: number, target: number, met: boolean, measured: object }[]>}
 * `eagerGzip` what loads before the first decision, `allGzip` every file the build made, `measured`
 * measureBrowserApp's whole answer (its `root` is gone once this returns).
 * @example
 * const rows = await measureSizes(packageDir()); // rows[0].eagerGzip <= rows[0].target
 */
export async function measureSizes(pkg) {
  const work = mkdtempSync(join(tmpdir(), "ratebound-sizes-"));
  try {
    const { project } = installPackage(pkg, join(work, "project"));
    const rows = [];
    for (const app of Object.keys(APPS)) {
      for (const splitting of [false, true]) {
        const measured = await measureBrowserApp(project, app, { splitting });
        const eagerGzip = measured.eager.total;
        rows.push({ app, bundle: splitting ? "split" : "default", eagerGzip, allGzip: measured.static.total, target: SIZE_TARGETS[app], met: eagerGzip <= SIZE_TARGETS[app], measured });
      }
    }
    return rows;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** One line per figure: `main, default bundle: 32.3 KiB gzip (target ≤ 12.0 KiB): not met`. */
export function sizeLines(rows) {
  const kib = (bytes) => `${(bytes / 1024).toFixed(1)} KiB`;
  return rows.map(
    (row) =>
      `${row.app === "main" ? "browser app (ratebound)" : "ratebound/preview alone"}, ${row.bundle === "split" ? "--splitting --format=esm" : "default bundle"}: ` +
      `${kib(row.eagerGzip)} gzip before the first decision (${kib(row.allGzip)} every file), target ≤ ${kib(row.target)}: ${row.met ? "met" : "not met"}`,
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const line of sizeLines(await measureSizes(packageDir()))) console.log(line);
}
