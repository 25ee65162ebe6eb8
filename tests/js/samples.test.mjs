// Every TypeScript and JavaScript sample of README.md and docs/ compiles as a newcomer would
// compile it, and the ones that can run, run. Each fenced `ts`, `tsx`, `js`, `jsx` or `mjs` block is
// written to its own module in a scratch project inside tests/artifacts/ (so `express`, `pg`,
// `redis`… resolve from the repository's node_modules, and `ratebound` is the built pkg/ through
// its exports map), then type-checked by TypeScript 5.9 under `strict` with `module: nodenext`
// (JavaScript with `checkJs`): a wrong name, argument or shape fails either.
//
// A sample is self-contained, or plainly a fragment: its first line is a comment that starts
// `// fragment:` and says what it assumes (a Convex `ctx`, a `limiter` made above). Fragments
// are counted but not compiled. A self-contained sample whose imports are only `ratebound`'s own
// (in-memory) entry points and Node's built-ins, and which starts no server, is also run with
// Node, and must exit 0.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { transformSync } from "esbuild";

const root = fileURLToPath(new URL("../../", import.meta.url));
const pages = ["README.md", ...readdirSync(join(root, "docs")).filter((name) => name.endsWith(".md")).map((name) => `docs/${name}`)];
const EXTENSIONS = { ts: "ts", typescript: "ts", tsx: "tsx", js: "mjs", javascript: "mjs", mjs: "mjs", jsx: "jsx" };
const RUN_TIMEOUT_MS = 15_000;

/** The code samples of a page: `{ page, line, lang, code, fragment }`, `line` the fence's (1-based). */
function samplesOf(page) {
  const lines = readFileSync(join(root, page), "utf8").split("\n");
  const samples = [];
  for (let index = 0; index < lines.length; index++) {
    const fence = /^(`{3,}|~{3,})\s*([\w-]*)/.exec(lines[index]);
    if (!fence) continue;
    const end = lines.findIndex((line, at) => at > index && line.startsWith(fence[1]) && line.trim() === fence[1]);
    assert.ok(end > index, `${page}:${index + 1}: a fenced block that never closes`);
    const lang = fence[2].toLowerCase();
    const code = lines.slice(index + 1, end).join("\n");
    if (lang in EXTENSIONS) samples.push({ page, line: index + 1, lang, code, fragment: /^\s*\/\/ fragment:/.test(code) });
    index = end;
  }
  return samples;
}

/** The module specifiers a sample imports. */
function importsOf(code) {
  return [...code.matchAll(/(?:^|\n)\s*(?:import|export)[^'"]*?from\s*["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)|(?:^|\n)\s*import\s*["']([^"']+)["']/g)].map(
    (match) => match[1] ?? match[2] ?? match[3],
  );
}

/** Whether a sample can run here on its own: only ratebound's in-memory entries and Node's built-ins, no server. */
function runnable(sample) {
  const imports = importsOf(sample.code);
  if (imports.length === 0 || sample.lang.endsWith("x")) return false;
  const local = imports.every((specifier) => specifier === "ratebound" || specifier === "ratebound/preview" || specifier.startsWith("node:"));
  // A server, a timer, a fetch of the app's own routes or another runtime's global: not here.
  return local && !/\.listen\(|setInterval\(|setTimeout\(|\bfetch\(|Deno\.|Bun\.|\bctx\b/.test(sample.code);
}

/** The runtime a sample is written for: its globals and built-in modules say which. */
function environmentOf(sample) {
  if (sample.app !== undefined) return sample.app;
  const imports = importsOf(sample.code);
  if (/\bDeno\./.test(sample.code) || imports.includes("node:sqlite")) return "deno";
  if (/\bBun\./.test(sample.code) || imports.some((specifier) => specifier.startsWith("bun:"))) return "bun";
  if (imports.some((specifier) => specifier.startsWith("cloudflare:"))) return "workers";
  return "node";
}

/** A strict nodenext tsconfig for one environment's samples, with its own type packages and libs. */
function tsconfig(dir, types, lib, files = []) {
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        target: "ES2022",
        module: "NodeNext",
        moduleResolution: "NodeNext",
        lib,
        types,
        typeRoots: [join(root, "node_modules", "@types"), join(root, "node_modules")],
        jsx: "react-jsx",
        strict: true,
        allowJs: true,
        checkJs: true,
        noEmit: true,
        skipLibCheck: true,
      },
      include: ["*.ts", "*.tsx", "*.mjs", "*.jsx"],
      ...(files.length > 0 ? { files } : {}),
    }),
  );
}

/** TypeScript 5.9 on a directory of samples: its diagnostics. */
function tsc(dir) {
  const run = spawnSync(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", dir, "--pretty", "false"], { encoding: "utf8" });
  return run.stdout + run.stderr;
}

/**
 * A Convex app's files in `dir/convex/`, over the `_generated/` of the repository's example that
 * uses the same entry (ratebound/convex or ratebound/convex-component), with that example's schema
 * when the page shows none; checked with the example's compiler options (Convex's own).
 */
function convexApp(dir, files) {
  const component = files.some((sample) => sample.code.includes("ratebound/convex-component"));
  const example = join(root, "examples", component ? "convex-component" : "convex", "convex");
  const app = join(dir, "convex");
  mkdirSync(app, { recursive: true });
  cpSync(join(example, "_generated"), join(app, "_generated"), { recursive: true });
  if (!files.some((sample) => sample.file === "schema.ts")) cpSync(join(example, "schema.ts"), join(app, "schema.ts"));
  for (const sample of files) writeFileSync(join(app, sample.file), sample.code);
  // The generated api names the example's modules: one the page does not show is an empty module.
  for (const module of ["messages.ts", "rateLimits.ts"]) if (!existsSync(join(app, module))) writeFileSync(join(app, module), "export {};\n");
  const options = JSON.parse(readFileSync(join(example, "tsconfig.json"), "utf8").replace(/^\/\*[\s\S]*?\*\//, ""));
  const pkg = join(root, "pkg");
  options.compilerOptions.paths = {
    ratebound: [join(pkg, "dist", "index.d.ts")],
    "ratebound/convex": [join(pkg, "dist", "convex.d.ts")],
    "ratebound/convex-component": [join(pkg, "convex-component", "client", "index.d.ts")],
    "ratebound/convex-component/convex.config": [join(pkg, "convex-component", "convex.config.d.ts")],
  };
  options.compilerOptions.typeRoots = [join(root, "node_modules", "@types")];
  options.compilerOptions.types = [];
  writeFileSync(join(app, "tsconfig.json"), JSON.stringify(options));
  return tsc(app);
}

/** How each environment's samples are checked: by tsc, with each runtime's own type packages and libs. */
const ENVIRONMENTS = {
  node(dir) {
    tsconfig(dir, ["node"], ["ES2022", "DOM", "DOM.Iterable"]);
    return tsc(dir);
  },
  bun(dir) {
    tsconfig(dir, ["bun"], ["ES2022", "DOM", "DOM.Iterable"]);
    return tsc(dir);
  },
  workers(dir) {
    tsconfig(dir, ["@cloudflare/workers-types"], ["ES2022"]);
    return tsc(dir);
  },
  // Deno's own `deno check` cannot follow a local package's `.d.ts` files (it reads `./x.js` as the
  // JavaScript file), so Deno's samples are checked by tsc with the Deno namespace (@types/deno) and,
  // for `node:sqlite`, Node 22's declaration of it.
  deno(dir) {
    // What Deno's own lib (lib.deno.ns.d.ts) adds to import.meta and @types/deno leaves out.
    writeFileSync(join(dir, "import-meta.d.ts"), "interface ImportMeta { main: boolean; filename?: string; dirname?: string }\n");
    tsconfig(dir, ["node", "deno"], ["ES2022", "DOM", "DOM.Iterable"], [join(root, "node_modules", "node-types-22", "sqlite.d.ts"), join(dir, "import-meta.d.ts")]);
    return tsc(dir);
  },
};

const samples = pages.flatMap(samplesOf);
// A page's samples whose first line is `// convex/FILE` are the files of a Convex app, checked
// together as Convex checks them (moduleResolution Bundler), over the `_generated/` of the
// repository's matching example; a file name met again starts the page's next app.
{
  let app;
  let files;
  let page;
  for (const sample of samples) {
    const file = /^\/\/ convex\/(\S+\.ts)\b/.exec(sample.code)?.[1];
    if (file === undefined) continue;
    if (sample.page !== page || files.has(file)) {
      page = sample.page;
      files = new Set();
      app = `convex-${sample.page.replace(/\W/g, "_")}-${sample.line}`;
    }
    files.add(file);
    Object.assign(sample, { app, file });
  }
}
const work = join(root, "tests", "artifacts", "samples");
const fileOf = (sample) => `${sample.page.replace(/[/.]/g, "_")}_${sample.line}.${EXTENSIONS[sample.lang]}`;

describe("the documentation's code samples", () => {
  const compiled = samples.filter((sample) => !sample.fragment);

  test("there are samples, and most are self-contained", () => {
    assert.ok(samples.length >= 30, `found ${samples.length} samples`);
    assert.ok(compiled.length >= samples.length * 0.6, `${samples.length - compiled.length} of ${samples.length} are fragments`);
  });

  test("every self-contained sample type-checks under strict TypeScript 5.9, module nodenext (JavaScript with checkJs)", () => {
    rmSync(work, { recursive: true, force: true });
    const errors = new Map();
    const groups = new Map();
    for (const sample of compiled) groups.set(environmentOf(sample), [...(groups.get(environmentOf(sample)) ?? []), sample]);
    for (const [environment, group] of groups) {
      const dir = join(work, environment);
      mkdirSync(join(dir, "node_modules"), { recursive: true });
      symlinkSync(join(root, "pkg"), join(dir, "node_modules", "ratebound"), "dir");
      writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module", private: true }));
      // `export {}` makes a sample without imports a module, so samples never share globals.
      if (!environment.startsWith("convex-")) for (const sample of group) writeFileSync(join(dir, fileOf(sample)), `${sample.code}\nexport {};\n`);
      const output = environment.startsWith("convex-") ? convexApp(dir, group) : ENVIRONMENTS[environment](dir, group.map(fileOf));
      if (process.env.RATEBOUND_SAMPLES_REPORT) writeFileSync(`${process.env.RATEBOUND_SAMPLES_REPORT}.${environment}`, output);
      for (const line of output.split("\n")) {
        const error = /^(?:.*?)([\w.-]+\.(?:ts|tsx|mjs|jsx))[(:](\d+)[,:]\d+\)?:?\s*(?:error\s*)?-?\s*(TS\d+.*)$/.exec(line);
        if (!error) continue;
        const sample = group.find((candidate) => (candidate.file ?? fileOf(candidate)) === basename(error[1]));
        const where = sample ? `${sample.page}:${sample.line + Number(error[2])} (${environment})` : error[1];
        errors.set(where, [...(errors.get(where) ?? []), error[3]]);
      }
      if (errors.size === 0) assert.doesNotMatch(output, /error/i, `${environment}: ${output}`);
    }
    const report = [...errors].map(([where, messages]) => `${where}: ${messages.join("; ")}`).join("\n");
    if (process.env.RATEBOUND_SAMPLES_REPORT) writeFileSync(process.env.RATEBOUND_SAMPLES_REPORT, report);
    assert.equal(errors.size, 0, `samples that do not compile:\n${report}`);
  });

  for (const sample of compiled.filter(runnable)) {
    test(`${sample.page}:${sample.line} runs`, () => {
      const dir = join(work, "run");
      if (!existsSync(dir)) {
        mkdirSync(join(dir, "node_modules"), { recursive: true });
        symlinkSync(join(root, "pkg"), join(dir, "node_modules", "ratebound"), "dir");
      }
      const file = join(dir, fileOf(sample).replace(/\.\w+$/, ".run.mjs"));
      const { code } = transformSync(sample.code, { loader: sample.lang.startsWith("t") ? "ts" : "js", format: "esm", target: "node20" });
      writeFileSync(file, code);
      const run = spawnSync(process.execPath, [file], { encoding: "utf8", timeout: RUN_TIMEOUT_MS, cwd: dir });
      assert.equal(run.status, 0, `${sample.page}:${sample.line} exited ${run.status}${run.signal ? ` (${run.signal})` : ""}\n${run.stdout}${run.stderr}`);
    });
  }
});
