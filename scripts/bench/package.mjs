// Which built package the benchmarks measure, and how they load it: as a user would, by the
// name `ratebound` from a project's node_modules, so the package's own `exports` decide which
// file each import resolves to.
//
// The package directory is `--pkg DIR` on the command line, else the RATEBOUND_PKG environment
// variable, else this checkout's `pkg/` (what `npm run build` writes). Any built ratebound
// package directory works, for example one built from an older commit in another worktree:
//
//   node scripts/bench-hosts.mjs --pkg ../wt-old/pkg
//   RATEBOUND_PKG=../wt-old/pkg npm run bench:contention
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/** The repository root (this checkout). */
export const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/**
 * The package directory to measure: `--pkg DIR`, else `$RATEBOUND_PKG`, else `<root>/pkg`.
 * Exits the process with a message when it holds no built `ratebound` package.
 *
 * @param {string[]} [argv] The command line (default `process.argv`).
 * @returns {string} An absolute path.
 * @example
 * const pkg = packageDir(); // "/work/main/pkg"
 */
export function packageDir(argv = process.argv) {
  const at = argv.indexOf("--pkg");
  const given = at > 0 ? argv[at + 1] : process.env.RATEBOUND_PKG;
  const dir = resolve(given ?? join(ROOT, "pkg"));
  const manifest = join(dir, "package.json");
  const name = existsSync(manifest) ? JSON.parse(readFileSync(manifest, "utf8")).name : undefined;
  if (name !== "ratebound" || !existsSync(join(dir, "dist"))) {
    console.error(
      `bench: ${dir} holds no built ratebound package (package.json named "ratebound" and dist/). ` +
        "Run `node scripts/build.mjs`, or point --pkg / RATEBOUND_PKG at a built package directory.",
    );
    process.exit(1);
  }
  return dir;
}

/**
 * Drops `--pkg DIR` from an argument list, for scripts that parse the rest with `parseArgs`.
 * @param {string[]} args
 * @returns {string[]}
 * @example
 * withoutPkg(["--pkg", "x", "--seconds", "3"]); // ["--seconds", "3"]
 */
export function withoutPkg(args) {
  const at = args.indexOf("--pkg");
  return at < 0 ? args : [...args.slice(0, at), ...args.slice(at + 2)];
}

/**
 * Installs a copy of the package in `project/node_modules/ratebound` (its `package.json` and
 * `dist/`: a snapshot, so a rebuild meanwhile changes nothing) and links the workspace's other
 * packages beside it, so the copy resolves its peers and the project resolves everything a user's
 * project would. Returns loaders that resolve from the project.
 *
 * @param {string} pkg A built package directory (see {@link packageDir}).
 * @param {string} project A directory to make (or reuse) as the project.
 * @param {{ copies?: string[], link?: boolean }} [options] `copies`: workspace packages to copy instead
 * of link (a copy is a module instance of its own; a link resolves to the workspace's one). `link:
 * false` links nothing: for a project nested inside an installed one, whose node_modules resolve
 * the rest.
 * @returns {{ project: string, packageRoot: string, dist: string, load: (specifier: string) => Promise<any>, require: NodeRequire }}
 * @example
 * const { load } = installPackage(packageDir(), mkdtempSync(join(tmpdir(), "bench-")));
 * const { RateLimiter, MemoryStore } = await load("ratebound");
 */
export function installPackage(pkg, project, { copies = [], link = true } = {}) {
  const modules = join(project, "node_modules");
  const packageRoot = join(modules, "ratebound");
  mkdirSync(modules, { recursive: true });
  if (!existsSync(packageRoot)) {
    mkdirSync(packageRoot);
    cpSync(join(pkg, "package.json"), join(packageRoot, "package.json"));
    cpSync(join(pkg, "dist"), join(packageRoot, "dist"), { recursive: true });
  }
  const workspaceModules = join(ROOT, "node_modules");
  const place = (name) => {
    const target = join(modules, name);
    if (existsSync(target)) return;
    if (name.includes("/")) mkdirSync(join(modules, name.split("/")[0]), { recursive: true });
    if (copies.includes(name)) cpSync(join(workspaceModules, name), target, { recursive: true, dereference: true });
    else symlinkSync(join(workspaceModules, name), target);
  };
  for (const name of copies) place(name);
  for (const entry of link ? readdirSync(workspaceModules) : []) {
    if (entry.startsWith(".") || entry === "ratebound") continue;
    if (entry.startsWith("@")) for (const scoped of readdirSync(join(workspaceModules, entry))) place(`${entry}/${scoped}`);
    else place(entry);
  }
  if (!existsSync(join(project, "package.json")))
    writeFileSync(join(project, "package.json"), JSON.stringify({ name: "ratebound-bench-project", private: true, type: "module" }));
  const loader = join(project, "load.mjs");
  if (!existsSync(loader))
    writeFileSync(loader, "// Imports resolved from this project, as its own code would.\nexport const load = (specifier) => import(specifier);\n");
  let loadFrom;
  return {
    project,
    packageRoot,
    dist: join(packageRoot, "dist"),
    load: async (specifier) => {
      loadFrom ??= (await import(pathToFileURL(loader).href)).load;
      return loadFrom(specifier);
    },
    require: createRequire(loader),
  };
}
