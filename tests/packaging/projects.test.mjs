// The packed package in the projects users have: one scratch project installs the tarball beside
// the latest major of every optional peer (as `npm install ratebound redis ioredis …` would,
// with no flag), and then, in that one install:
//
// - the install itself: no ERESOLVE, and npm took the latest major of every peer rather than
//   falling back to an older one that fits a stale peer range;
// - the package page: `repository`, `homepage` and `bugs`, and the README (the project's guide)
//   with no relative link;
// - the declarations: none names RequestInfo, BufferSource or the WebAssembly namespace;
// - strict projects (`skipLibCheck: false`) compiled by TypeScript 5.9 and 7: a Node service
//   without the DOM lib as ESM (nodenext) and as CommonJS (node16, `.d.cts` through `require`),
//   the same service for a bundler (`moduleResolution: bundler`), and an edge function without
//   Node's types;
// - every error family: `instanceof` and an exhaustive `switch (error.code)` compile (a missing
//   case does not), and, compiled by each compiler as ESM and as CommonJS and run by Node, each
//   family's error provoked for real reaches its own case;
// - a typo in a limit's name fails to compile with a message that names it.
//
// Needs the npm registry (the peers are installed from it) and pkg/ built. The compilers are the
// workspace's (typescript 5.9 and typescript-7). RATEBOUND_KEEP_PACKAGING=1 keeps the project.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { npmReadme, relativeTargets } from "../../scripts/package-readme.mjs";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const fixtures = fileURLToPath(new URL("./fixtures/projects/", import.meta.url));
const require = createRequire(import.meta.url);
const semver = require("semver");
const ts = require("typescript");
const execFileAsync = promisify(execFile);

const COMPILERS = {
  "5.9": join(repo, "node_modules", "typescript", "bin", "tsc"),
  7: join(repo, "node_modules", "typescript-7", "bin", "tsc"),
};
/** Types a TypeScript user of these clients installs beside them. */
const TYPES = ["@types/node@20", "@types/express", "@types/pg", "@types/better-sqlite3"];

/**
 * Peers whose previous major the ranges leave out, and why. Every other peer's range covers its
 * current major and the one before (or, before 1.0, every 0.x release since the adapter's first).
 */
const PREVIOUS_MAJOR_UNSUPPORTED = {
  pg: "pg 7 hangs on connect on Node 14 and later (fixed in 8.0.3); the package supports Node 18 and later",
  postgres: "postgres.js 2 (last released in 2021) is untested; the adapter's suites run on 3",
  hono: "Hono 3 is no longer maintained and untested; the middleware's types follow Hono 4",
  convex: "Convex 0.x predates the APIs the adapter and the component use (the range starts at 1.43)",
  "@upstash/redis": "@upstash/redis 0.x is untested; the adapter's suites run on 1.x",
  "@opentelemetry/api": "@opentelemetry/api 0.x was the API's pre-1.0 draft; ratebound/otel's histogram advice needs 1.7",
};

let work;
let scratch; // the one project: the tarball and every peer installed
let manifest; // the package.json inside the tarball

/** Runs a command; resolves with its output, rejects with it. */
async function run(command, args, { cwd = work, timeout = 600_000 } = {}) {
  try {
    return await execFileAsync(command, args, { cwd, timeout, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, NO_COLOR: "1" } });
  } catch (error) {
    throw new Error(`${[command, ...args].join(" ")} failed (${error.code ?? error.signal}):\n--- stdout\n${error.stdout}\n--- stderr\n${error.stderr}`);
  }
}

const npm = (args, options) => run("npm", [...args, "--no-audit", "--no-fund", "--loglevel=error"], options);

before(async () => {
  assert.ok(existsSync(join(repo, "pkg", "dist", "wasm", "ratebound.wasm")), "pkg/ is not built: run `node scripts/build.mjs` first");
  work = mkdtempSync(join(tmpdir(), "ratebound-projects-"));
  const { stdout } = await npm(["pack", join(repo, "pkg"), "--pack-destination", work, "--json"]);
  const tarball = join(work, JSON.parse(stdout)[0].filename);
  manifest = JSON.parse((await run("tar", ["-xzOf", tarball, "package/package.json"])).stdout);
  scratch = join(work, "app");
  mkdirSync(scratch);
  writeFileSync(join(scratch, "package.json"), JSON.stringify({ name: "app", private: true }, null, 2));
  // What a user types: the package and the clients by name, no version, no resolution flag.
  // --ignore-scripts changes nothing npm resolves: it skips native builds this test never runs
  // (better-sqlite3 compiles from source here, where its prebuilt binaries are out of reach).
  await npm(["install", tarball, ...Object.keys(manifest.peerDependencies), ...TYPES, "--ignore-scripts"], { cwd: scratch });
});

after(() => {
  if (!work) return;
  if (process.env.RATEBOUND_KEEP_PACKAGING) console.log(`# project kept in ${work}`);
  else rmSync(work, { recursive: true, force: true });
});

test("npm installs ratebound beside the latest major of every optional peer, with no flag and no ERESOLVE", async () => {
  assert.ok(Object.keys(manifest.peerDependencies).length >= 12);
  for (const peer of Object.keys(manifest.peerDependencies)) assert.equal(manifest.peerDependenciesMeta?.[peer]?.optional, true, `${peer} is optional`);
  await npm(["ls", "--all"], { cwd: scratch }); // exits non-zero on an invalid or missing peer
  const behind = [];
  await Promise.all(
    Object.keys(manifest.peerDependencies).map(async (peer) => {
      const installed = JSON.parse(readFileSync(join(scratch, "node_modules", peer, "package.json"), "utf8")).version;
      const viewed = JSON.parse((await npm(["view", `${peer}@latest`, "version", "engines", "--json"])).stdout);
      const latest = typeof viewed === "string" ? { version: viewed } : viewed; // npm prints the version alone when there is no engines
      // npm passes over a release whose `engines.node` excludes this Node (better-sqlite3 13 needs 22).
      const runsHere = !latest.engines?.node || semver.satisfies(process.versions.node, latest.engines.node);
      if (runsHere && semver.major(installed) !== semver.major(latest.version)) behind.push(`${peer}: installed ${installed}, latest ${latest.version}`);
      assert.ok(semver.satisfies(latest.version, manifest.peerDependencies[peer]), `${peer}@${latest.version} (latest) is within the peer range ${manifest.peerDependencies[peer]}`);
      // The previous major stays supported, but where it never was (PREVIOUS_MAJOR_UNSUPPORTED).
      if (semver.major(latest.version) > 0 && !Object.hasOwn(PREVIOUS_MAJOR_UNSUPPORTED, peer)) {
        const previous = `${semver.major(latest.version) - 1}.999.999`;
        assert.ok(semver.satisfies(previous, manifest.peerDependencies[peer]), `${peer}'s previous major is within ${manifest.peerDependencies[peer]}`);
      }
    }),
  );
  assert.deepEqual(behind, [], "npm installed the latest major of every peer");
});

test("the package page: repository, homepage and bugs, and the project's README with no relative link", async () => {
  assert.match(manifest.repository.url, /^git\+https:\/\/github\.com\/[^/]+\/[^/]+\.git$/);
  const web = manifest.repository.url.replace(/^git\+/, "").replace(/\.git$/, "");
  assert.equal(manifest.homepage, `${web}#readme`);
  assert.equal(manifest.bugs.url, `${web}/issues`);
  const readme = readFileSync(join(scratch, "node_modules", "ratebound", "README.md"), "utf8");
  const guide = npmReadme(readFileSync(join(repo, "README.md"), "utf8"), { repository: manifest.repository });
  assert.ok(readme === guide, "the package README is the root README, its links made absolute");
  assert.deepEqual(relativeTargets(readme), [], "no link or image of the packed README is relative");
});

test("no shipped declaration names RequestInfo, BufferSource or the WebAssembly namespace", () => {
  const root = join(scratch, "node_modules", "ratebound");
  const named = [];
  const declarations = readdirSync(root, { recursive: true }).filter((file) => /\.d\.c?ts$/.test(file));
  assert.ok(declarations.some((file) => file.endsWith(".d.cts")), "CommonJS declarations are shipped");
  for (const file of declarations) {
    const source = ts.createSourceFile(file, readFileSync(join(root, file), "utf8"), ts.ScriptTarget.Latest, false);
    const visit = (node) => {
      if (ts.isIdentifier(node) && ["RequestInfo", "BufferSource", "WebAssembly"].includes(node.text)) named.push(`${file}: ${node.text}`);
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  assert.deepEqual(named, []);
});

/** The scratch projects: a folder each, with its package.json `type`, compiler options and sources. */
const PROJECTS = {
  // A Node service without the DOM lib, as ES modules.
  esm: {
    type: "module",
    options: { module: "nodenext", moduleResolution: "nodenext", lib: ["es2022"], types: ["node"] },
    files: ["service.ts", "errors.ts", "main.ts"],
  },
  // The same service as CommonJS: its imports are require()s, typed by the .d.cts declarations.
  cjs: {
    type: "commonjs",
    options: { module: "node16", moduleResolution: "node16", lib: ["es2022"], types: ["node"] },
    files: ["service.ts", "errors.ts", "main.ts"],
  },
  // The same service for a bundler (Next.js, Vite).
  bundler: {
    type: "module",
    options: { module: "esnext", moduleResolution: "bundler", lib: ["es2022", "dom", "dom.iterable"], types: ["node"], noEmit: true },
    files: ["service.ts", "errors.ts"],
  },
  // An edge function: the DOM lib, no Node types.
  edge: {
    type: "module",
    options: { module: "esnext", moduleResolution: "bundler", lib: ["es2022", "dom", "dom.iterable"], types: [], noEmit: true },
    files: ["edge.ts"],
  },
  // A typo in a limit's name (expected to fail).
  typo: {
    type: "module",
    options: { module: "nodenext", moduleResolution: "nodenext", lib: ["es2022"], types: [], noEmit: true },
    files: ["typo.ts"],
  },
};

/** Lays out `name` for `compiler` (its own folder, emitting to `out`) and compiles it. */
async function compile(name, compiler) {
  const { type, options, files } = PROJECTS[name];
  const dir = join(scratch, `${name}-ts${compiler}`);
  mkdirSync(dir, { recursive: true });
  for (const file of files) cpSync(join(fixtures, file), join(dir, file));
  writeFileSync(join(dir, "package.json"), JSON.stringify({ type }));
  const compilerOptions = { target: "es2022", strict: true, skipLibCheck: false, outDir: "out", ...options };
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions, files }, null, 2));
  try {
    await run(process.execPath, [COMPILERS[compiler], "-p", dir], { cwd: dir });
    return { dir, output: "" };
  } catch (error) {
    return { dir, output: error.message };
  }
}

for (const compiler of Object.keys(COMPILERS)) {
  for (const name of ["esm", "cjs", "bundler", "edge"]) {
    test(`TypeScript ${compiler}: the ${name} project compiles (strict, skipLibCheck false)`, async () => {
      const { dir, output } = await compile(name, compiler);
      assert.equal(output, "", "no compile error");
      if (name !== "esm" && name !== "cjs") return;
      // Compiled, it runs: every error family provoked for real reaches its own case.
      const { stdout } = await run(process.execPath, [join(dir, "out", "main.js")], { cwd: dir, timeout: 60_000 });
      assert.deepEqual(JSON.parse(stdout.trim().split("\n").at(-1)), {
        refused: "RateLimitError RATE_LIMITED RateLimited",
        tooMany: "RateboundError COUNT_EXCEEDS_MAX",
        unknown: "RateboundError UNKNOWN_LIMIT",
        rawClient: "RateboundTypeError INVALID_ARGUMENT",
        timeout: "StoreTimeoutError STORE_TIMEOUT",
        redis: "RedisStoreError REDIS_ERROR",
        sql: "SqlStoreError SQL_FAILED",
        http: "HttpGuardError HTTP_GUARD_CONFIG",
        oneSqlStoreError: true,
        isRateboundError: true,
      });
      if (name === "cjs") {
        const { stdout: loaded } = await run(process.execPath, ["-p", 'require.resolve("ratebound") + " " + require.resolve("ratebound/redis")'], { cwd: dir });
        assert.match(loaded, /dist\/node\.cjs .*dist\/redis\.cjs/, "require() loads the CommonJS files");
      }
    });
  }

  test(`TypeScript ${compiler}: a typo in a limit's name is a compile error that names it`, async () => {
    const { output } = await compile("typo", compiler);
    assert.match(output, /typo\.ts\(7,\d+\): error TS\d+/, "the typo does not compile");
    assert.match(output, /Argument of type '"lgoin"' is not assignable to parameter of type '"login"'/, "the message names the unknown name and the limits");
    assert.doesNotMatch(output, /Inline|'config' is missing/, "the message is not about a missing inline config");
  });
}
