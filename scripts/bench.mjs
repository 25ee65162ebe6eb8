// `npm run bench`: the targets of issue 23, each measured against its peer in the same run (or
// as an absolute size or count), with its goal and whether this run met it; then the rows that
// explain them. Prints one table and a closing note derived from the run's numbers, and writes
// both to BENCHMARKS.md (its own section; ./bench/sections.mjs) with the date and machine. A
// measurement, not a test: it asserts nothing about speed (it fails only when a contender takes
// another path than its row names, or a measurement cannot run).
//
//   node scripts/bench.mjs [--pkg DIR] [--rounds N] [--startup-runs N] [--memory-keys N] [--no-native] [--no-write]
//
// --pkg DIR (or RATEBOUND_PKG) measures another built package than this checkout's pkg/
// (./bench/package.mjs). The smaller --rounds, --startup-runs, --memory-keys and --no-native are
// for smoke runs; the figures of record come from the defaults on an idle machine.
//
// Needs a built package (`npm run bench` builds pkg/ when stale), cargo (for the native rows),
// redis-server and PostgreSQL (for the crossings rows; `npm test`'s setup installs both),
// Chromium (optional: the browser apps run in it), and the workspace's devDependencies
// (esbuild, rate-limiter-flexible, @convex-dev/rate-limiter, redis, pg, playwright-core).
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, platform, release, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { APPS, measureBrowserApp } from "./bench/browser-app.mjs";
import { runInChromium } from "./bench/browser-run.mjs";
import { measureBundle } from "./bench/bundle.mjs";
import { measureCrossings } from "./bench/crossings.mjs";
import { ns } from "./bench/format.mjs";
import { median } from "./bench/interleave.mjs";
import { measureIsolation } from "./bench/isolation.mjs";
import { runNative } from "./bench/native.mjs";
import { buildFloor } from "./bench/floor.mjs";
import { closingNote } from "./bench/note.mjs";
import { installPackage, packageDir } from "./bench/package.mjs";
import { report } from "./bench/report.mjs";
import { writeSection } from "./bench/sections.mjs";
import { measureSources } from "./bench/sources.mjs";
import { measureStartup } from "./bench/startup.mjs";
import { KEY_COUNT } from "./bench/timing.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const flag = (name, fallback) => {
  const at = process.argv.indexOf(name);
  return at > 0 ? Number(process.argv[at + 1]) : fallback;
};
const ROUNDS = flag("--rounds", 31);
const BATCH_MS = 15;
const WARMUP_MS = 200;
const STARTUP_RUNS = flag("--startup-runs", 15);
const MEMORY_KEYS = flag("--memory-keys", 1_000_000);
const log = (line) => process.stderr.write(`bench: ${line}\n`);

/** One fresh `node --expose-gc` process, with ./bench/wasm-probe.mjs seeing the wasm memory, measuring heap per key. */
function runMemory(project, mode) {
  const output = execFileSync(
    process.execPath,
    [
      "--expose-gc",
      "--import",
      join(root, "scripts", "bench", "wasm-probe.mjs"),
      join(root, "scripts", "bench", "memory-child.mjs"),
      project,
      mode,
      String(MEMORY_KEYS),
    ],
    { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] },
  );
  return JSON.parse(output);
}

const version = (command, args) => {
  try {
    return execFileSync(command, args, { encoding: "utf8" }).trim();
  } catch {
    return "?";
  }
};

/**
 * The interleaved timings (./bench/timing.mjs) in a fresh process that loads nothing else (see
 * ./bench/timing-child.mjs for why), its progress passed through to stderr.
 */
function timeInChild(pkg, project, floor) {
  const output = execFileSync(
    process.execPath,
    [join(root, "scripts", "bench", "timing-child.mjs"), pkg, project, String(ROUNDS), String(BATCH_MS), String(WARMUP_MS), floor.wasm ?? ""],
    {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "inherit"],
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  const { timing, skipped } = JSON.parse(output.trim().split("\n").at(-1));
  return { timing: new Map(timing), skipped };
}

/** Min–max spread of each timed contender, as a share of its median: how noisy the run was. */
function noise(timing) {
  const spreads = [...timing.values()].map((stats) => (stats.max - stats.min) / stats.median);
  return { median: median(spreads), max: Math.max(...spreads) };
}

async function main() {
  const started = Date.now();
  const pkg = packageDir();
  const loadAtStart = loadavg();
  // One snapshot of the package for every measurement, even if pkg/ is rebuilt meanwhile, in a
  // project that also holds the peers whose figures are compared.
  const work = mkdtempSync(join(tmpdir(), "ratebound-bench-"));
  try {
    const { project, packageRoot } = installPackage(pkg, join(work, "project"));

    log(`measuring the package in ${pkg}`);
    log("sizes: source files, the browser apps, the package's files");
    const sources = measureSources(root);
    const apps = {};
    for (const name of Object.keys(APPS)) {
      apps[name] = await measureBrowserApp(project, name);
      log(`the ${name} browser app in headless Chromium`);
      apps[name].browserRun = await runInChromium(apps[name]);
    }
    const packageBundle = measureBundle(packageRoot);
    log("WebAssembly crossings per Redis and PostgreSQL call (a counting process; it starts both servers)");
    const crossings = await measureCrossings(project);
    if (crossings.error) log(`crossings not measured: ${crossings.error}`);
    const native = process.argv.includes("--no-native") ? { error: "skipped (--no-native)" } : await runNative(root, join(work, "criterion"), log);
    if (native.error) log(`native core not measured: ${native.error}`);
    const floor = buildFloor(root, log);
    if (floor.error) log(`the floor contender not built: ${floor.error}`);
    log(`timing in a fresh process: ${ROUNDS} interleaved rounds of ~${BATCH_MS} ms batches per contender`);
    const { timing, skipped } = timeInChild(pkg, project, floor);
    log("the harness check: the reference and an await, each alone in a fresh process");
    const isolation = measureIsolation(project, { rounds: ROUNDS, batchMs: BATCH_MS, warmupMs: WARMUP_MS });
    log(`memory: ${MEMORY_KEYS.toLocaleString("en-US")} keys in fresh processes`);
    const memory = { keys: MEMORY_KEYS, ratebound: runMemory(project, "ratebound"), map: runMemory(project, "map") };
    log(`startup: ${STARTUP_RUNS} fresh Node processes per probe, the probes taking turns`);
    const startup = await measureStartup(project, STARTUP_RUNS);
    const loadAtEnd = loadavg();

    const run = { timing, skipped, native, apps, packageBundle, memory, startup, sources, crossings, isolation };
    const { table, goals } = report(run);
    const spread = noise(timing);
    const twin = { a: timing.get("limit token bucket allowed 1"), b: timing.get("limit token bucket allowed 1 twin") };
    const seconds = ((Date.now() - started) / 1000).toFixed(0);
    const cpu = cpus();
    const machine = `${cpu[0]?.model ?? "unknown CPU"}, ${cpu.length} cores, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, ${platform()} ${release()}`;
    const tools = `Node ${process.version} (V8 ${process.versions.v8}), ${version("rustc", ["--version"])}, esbuild ${apps.main.esbuildVersion}`;
    const keys = KEY_COUNT.toLocaleString("en-US");
    const smoke = ROUNDS !== 31 || STARTUP_RUNS !== 15 || MEMORY_KEYS !== 1_000_000 || process.argv.includes("--no-native");
    const markdown = `# Benchmarks

Generated by \`npm run bench\` (\`scripts/bench.mjs\`, \`scripts/bench/\`, \`benches/core.rs\`); do not edit by hand.
The hosts against their peers and the contention tables are further down, each generated by its own script.

- **Date**: ${new Date(started).toISOString().replace(/\.\d+Z$/, "Z")}${smoke ? " (**a smoke run**: fewer rounds, runs or keys than the figures of record use; not for comparison)" : ""}
- **Package**: ${pkg === join(root, "pkg") ? "this checkout's \`pkg/\`" : `\`${pkg}\``}
- **Machine**: ${machine}; ${tools}
- **Load average** (1 min) at start ${loadAtStart[0].toFixed(2)}, at end ${loadAtEnd[0].toFixed(2)}
- **Run time**: ${seconds} s for \`scripts/bench.mjs\`, compiling the native bench included (the package build comes before it)

The first section holds the targets of issue 23, each as a ratio against its peer measured in
the same run (or as a size or a count). Speed is compared between contenders timed in the same
process, interleaved: all ${timing.size} JavaScript contenders take turns (A, B, C, …, the starting one
rotating), each running a batch of ~${BATCH_MS} ms per turn, for ${ROUNDS} rounds, after ${WARMUP_MS} ms of warm-up
each, in a process that loads nothing but them (a module that turns on async hooks, as playwright-core
does once it has driven a browser, makes every \`await\` several times slower). No two contenders share type feedback: each one's loop is compiled from a source text of its
own (a comment with its id), and each runs its own copy of the code it times: the package installed
anew for it (its own modules and WebAssembly instance), its own copy of \`rate-limiter-flexible\`, its
own copy of the reference \`calculateRateLimit\` (compiled from the function's text). The harness
check [9] shows what that changes. Figures are medians of the rounds, in brackets the fastest and
slowest round; ratios are of medians, in brackets the range of the ratios within single rounds. How
noisy this run was: a contender's slowest round was on median ${(spread.median * 100).toFixed(0)}% above its fastest (at worst
${(spread.max * 100).toFixed(0)}%), and the same \`limit()\` (token bucket, allowed, one key) timed as two separate
contenders gave ${twin.a && twin.b ? `${ns(twin.a.median)} and ${ns(twin.b.median)} ns` : "(not timed)"}. Absolute times drift with the machine's
load; the ratios are what the goals are about.

${table}

[1] \`scripts/bench/browser-app.mjs\`: two apps of four lines each. The main app imports \`RateLimiter\`,
\`MemoryStore\` and \`SECOND\` from \`"ratebound"\`, makes a limiter on a \`MemoryStore\`, awaits one
\`limit()\` and shows the answer; the preview app imports only \`RateLimitPreview\` from
\`"ratebound/preview"\`, makes one from a \`getValue\`-shaped snapshot and shows its \`status()\`. Each is
bundled by esbuild ${apps.main.esbuildVersion} (\`bundle\`, \`minify\`, \`splitting\`, \`format: "esm"\`, \`platform: "browser"\`, so the
package's \`browser\` export conditions resolve, as a user's bundler resolves them from the package
installed in \`node_modules\`). Its WebAssembly is found as a user's bundler finds it: a \`.wasm\` the
code imports is emitted by esbuild's \`file\` loader; a \`.wasm\` it fetches by
\`new URL("….wasm", import.meta.url)\` (which Vite, webpack 5 and Parcel emit as an asset, and esbuild
leaves as it is) is copied where that URL points, once per file however many modules name it; bytes
inlined in the JavaScript are counted with it (and named in the row). The app then runs in headless
Chromium from a static server on a loopback port (when \`/usr/bin/chromium\` exists): it must decide
without an error, and the figure judged is every file the page downloaded (the bundle, any chunk it
loaded, every \`.wasm\` it fetched), each gzipped alone at level 9, as a server sends it; without
Chromium, every file the build made. The package rows count every \`.wasm\` and every \`.js\` and
\`.cjs\` file in \`dist/\`, and for each file the main export resolves to, the JS it loads (its
imports followed within \`dist/\`).
[2] Fresh \`node\` processes, timed inside with \`performance.now()\` (process start-up not counted):
from the start of \`import("ratebound")\` to the first \`limit()\` result on a \`MemoryStore\`, and from the
start of \`import("rate-limiter-flexible")\` to the first \`RateLimiterMemory.consume()\` result. ${startup.runs} runs
each, the probes taking turns (the first rotating), so they see the same load; the ratio is of the
medians, in brackets the range of the run-by-run ratios. The step-by-step probe (when the build has
the glue it loads) loads the same package one step at a time, so its total differs a little.
[3] The native core is \`benches/core.rs\` (criterion: the figure is the median of its samples, with
criterion's mean beside it), run in the same \`npm run bench\` just before the JavaScript timings (so
these ratios span two stretches of time and move with the machine's load between them), on the cases
it names (\`token_bucket-allowed-unsharded\` is the target's). The probes time the package's exports alone, each on
an instance of its own with the fewest numbers around it: \`rb_plan\` + \`rb_decide_one\` (the two calls of a planned
decision, the state kept in JavaScript as a store keeps it), \`rb_decide_state\` (the decision on a state the caller
holds), \`rb_calculate\` (twelve numbers a call) and \`rb_calculate_next\` (what \`calculateRateLimit\` calls).
[4] Every call is awaited on both sides: ratebound's \`limit()\` and \`RateLimiterMemory.consume()\`
return Promises (\`consume()\` rejects with a \`RateLimiterRes\` on refusal, which is caught). Both cycle
through the same ${keys} keys (\`"user:0"\` …), all with state before timing. The token bucket and
the peer's window (\`RateLimiterMemory\` is a fixed-window counter: \`points\` per \`duration\` seconds)
hold 10¹² tokens for the allowed rows, and 10 tokens an hour, all taken before timing, for the
refused rows. The target is judged on the allowed row (most calls are granted). Every batch
checks that every decision took the row's path.
[5] \`calculateRateLimit(state, config, now, 1)\` on an existing state, the same config object on
every call (as a caller holding its config does), \`now\` varying; the reference is
\`calculateRateLimit\` of \`@convex-dev/rate-limiter\`, pure JavaScript.
[11] The floor (\`scripts/bench/floor/\`, built by \`scripts/bench/floor.mjs\` with cargo in the same run): the core's own
\`advance\` and \`decide\` in a module of their own, numbers in and numbers out, with the least JavaScript around
them: for \`calculateRateLimit\`, one call of four numbers and the answer object; for \`limit()\`, a \`Map\` from key
to slot (the states in the module's memory), \`Date.now()\`, one call of three numbers and a settled Promise. It
checks nothing and knows one limit, set once: what ratebound costs beyond it is its checks, config cache, store and
answers; what the floor costs beyond a peer is the crossing and the answer.
[6] \`scripts/bench/sources.mjs\`: lines as \`wc -l\` counts them, of every \`.rs\` and \`.ts\` file under
\`src/\` and \`ts/\`, leaving out generated code (\`ts/wasm\`, \`_generated\`).
[7] What a user could write instead: the reference \`calculateRateLimit\` over a \`Map\` from key to
state, granted when the value left is \`>= 0\` (a refusal writes nothing), returning
\`Promise.resolve(result)\` for the awaited figure.
[8] A fresh \`node --expose-gc\` process: (JS heap used + the size of every wasm memory the package
made, seen by \`scripts/bench/wasm-probe.mjs\`) after ${MEMORY_KEYS.toLocaleString("en-US")} distinct keys were granted once by one
token bucket, minus the same before, divided by the keys, after forced GCs. Wasm memory never
shrinks, so what the store reserves as it grows is counted in full. The plain \`Map\` shows how much
of the JS share is the keys themselves.
[9] \`scripts/bench/isolation.mjs\`: the same loops, with the same rounds, batches and warm-up, each
alone in a fresh process; and the four \`calculateRateLimit\` contenders once more in a fresh process
as the harness made them before issue 23 (one loop source text for all four, evaluated four times,
and one copy of each library), to show what shared type feedback cost. A contender timed in the main
run near its time alone is not being charged for the others.
[10] \`scripts/bench/crossings.mjs\`: a fresh process with \`scripts/bench/wasm-probe.mjs\` preloaded, which
wraps every WebAssembly instance the package makes and counts each call of an exported function
(JavaScript into wasm: the package's own calls and its glue's, such as an allocator's) and each call
of an imported one (wasm out to JavaScript), by name. It starts redis-server and PostgreSQL on
loopback (the test suites' helpers), puts a counting TCP relay in front of each, and runs ${crossings.warm ?? 20}
uncounted, then ${crossings.calls ?? 100} counted \`limit()\` calls, one at a time, on one key (a token bucket that never runs
out), through \`redisStore\` over node-redis and \`postgresStore\` over a \`pg.Pool\` of 10. Figures are per
call; round trips are what the client sent the server, each send waiting for its answer.

## Closing note

${closingNote(goals, run)}
`;
    process.stdout.write(`${markdown}\n`);
    if (!process.argv.includes("--no-write")) {
      writeSection(join(root, "BENCHMARKS.md"), "bench", markdown);
      log(`wrote its section of BENCHMARKS.md (${seconds} s)`);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
