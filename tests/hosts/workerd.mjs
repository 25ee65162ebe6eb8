// Helpers of the workerd host suites (not a test file itself): bundle a Worker against the built
// package as wrangler would, and run it in real workerd through Miniflare.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { Miniflare } from "miniflare";

const repo = fileURLToPath(new URL("../../", import.meta.url));

/** A scratch directory, removed by the returned `remove()`. */
export function scratch(prefix) {
  const dir = mkdtempSync(join(tmpdir(), `ratebound-${prefix}-`));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Bundles `entry` into `outdir/worker.mjs` with the conditions wrangler uses. `ratebound` and its
 * subpaths resolve through pkg/package.json's exports, as from an installed copy (a symlinked
 * node_modules/ratebound), never through the repository's tsconfig paths; the `.wasm` stays an
 * import, copied next to the bundle, for workerd to hand over as a compiled module.
 * @returns the bundle's metafile inputs, to check which package files it took in.
 */
export async function bundleWorker(entry, outdir) {
  const installed = join(outdir, "resolve");
  mkdirSync(join(installed, "node_modules"), { recursive: true });
  const link = join(installed, "node_modules", "ratebound");
  if (!existsSync(link)) symlinkSync(join(repo, "pkg"), link, "dir");
  const { metafile } = await build({
    entryPoints: [entry],
    outfile: join(outdir, "worker.mjs"),
    bundle: true,
    format: "esm",
    platform: "neutral",
    conditions: ["workerd", "worker", "browser"],
    tsconfigRaw: {},
    external: ["cloudflare:*"], // workerd's built-in modules
    metafile: true,
    logLevel: "warning",
    plugins: [
      {
        name: "ratebound-as-installed",
        setup(esbuild) {
          esbuild.onResolve({ filter: /^ratebound(\/|$)/ }, (args) =>
            args.pluginData === installed
              ? undefined
              : esbuild.resolve(args.path, { kind: args.kind, resolveDir: installed, pluginData: installed }),
          );
          esbuild.onResolve({ filter: /\.wasm$/ }, (args) => {
            copyFileSync(join(args.resolveDir, args.path), join(outdir, basename(args.path)));
            return { path: `./${basename(args.path)}`, external: true };
          });
        },
      },
    ],
  });
  return Object.keys(metafile.inputs);
}

/** Miniflare options for a bundle made by {@link bundleWorker}, on loopback, never fetching from Cloudflare. */
export function workerOptions(outdir, extra = {}) {
  return {
    modules: true,
    scriptPath: join(outdir, "worker.mjs"),
    modulesRoot: outdir,
    modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }],
    compatibilityDate: "2026-04-01",
    host: "127.0.0.1",
    port: 0,
    cf: false,
    ...extra,
  };
}

/** Starts Miniflare and waits until it is ready. */
export async function startMiniflare(options) {
  const miniflare = new Miniflare(options);
  await miniflare.ready;
  return miniflare;
}

/** POSTs `body` as JSON to the Worker and returns its status and JSON answer. */
export async function post(miniflare, path, body) {
  const response = await miniflare.dispatchFetch(`http://127.0.0.1${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  try {
    return { status: response.status, body: JSON.parse(text) };
  } catch {
    throw new Error(`the Worker answered ${response.status} with non-JSON: ${text}`);
  }
}
