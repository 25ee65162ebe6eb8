// `npm run bench`: the targets of issue 11, each measured against its peer in the same run (or
// as an absolute size), with its goal and whether this run met it; then the rows that explain
// them. Prints one table and a closing note derived from the run's numbers, and writes both to
// BENCHMARKS.md with the date and machine. A measurement, not a test: it asserts nothing about
// speed (it fails only when a contender takes another path than its row names, or a
// measurement cannot run).
//
//   node scripts/bench.mjs [--rounds N] [--no-write]
//
// Needs a built pkg/ (`npm run bench` builds it when stale), cargo (for the native rows), and
// the workspace's devDependencies (esbuild, rate-limiter-flexible, @convex-dev/rate-limiter).
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, platform, release, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { measureBrowserApp } from "./bench/browser-app.mjs";
import { runInChromium } from "./bench/browser-run.mjs";
import { measureBundle } from "./bench/bundle.mjs";
import { ns } from "./bench/format.mjs";
import { median } from "./bench/interleave.mjs";
import { runNative } from "./bench/native.mjs";
import { closingNote } from "./bench/note.mjs";
import { report } from "./bench/report.mjs";
import { measureSources } from "./bench/sources.mjs";
import { measureStartup } from "./bench/startup.mjs";
import { KEY_COUNT, timeEverything } from "./bench/timing.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const flag = (name, fallback) => {
  const at = process.argv.indexOf(name);
  return at > 0 ? Number(process.argv[at + 1]) : fallback;
};
const ROUNDS = flag("--rounds", 31);
const BATCH_MS = 15;
const WARMUP_MS = 200;
const STARTUP_RUNS = 15;
const MEMORY_KEYS = 1_000_000;
const log = (line) => process.stderr.write(`bench: ${line}\n`);

/** One fresh `node --expose-gc` process measuring heap per key. */
function runMemory(dist, mode) {
  const output = execFileSync(process.execPath, ["--expose-gc", join(root, "scripts", "bench", "memory-child.mjs"), dist, mode, String(MEMORY_KEYS)], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  return JSON.parse(output);
}

const version = (command, args) => {
  try {
    return execFileSync(command, args, { encoding: "utf8" }).trim();
  } catch {
    return "?";
  }
};

/** Min–max spread of each timed contender, as a share of its median: how noisy the run was. */
function noise(timing) {
  const spreads = [...timing.values()].map((stats) => (stats.max - stats.min) / stats.median);
  return { median: median(spreads), max: Math.max(...spreads) };
}

async function main() {
  const started = Date.now();
  const pkg = join(root, "pkg");
  if (!existsSync(join(pkg, "dist", "wasm", "ratebound_bg.wasm"))) {
    console.error("bench: pkg/ is not built; run `node scripts/build.mjs` first (`npm run bench` does)");
    process.exit(1);
  }
  const loadAtStart = loadavg();
  // One snapshot of the package for every measurement, even if pkg/ is rebuilt meanwhile, in a
  // project that also holds the peer whose startup is compared.
  const work = mkdtempSync(join(tmpdir(), "ratebound-bench-"));
  try {
    cpSync(pkg, join(work, "node_modules", "ratebound"), { recursive: true });
    cpSync(join(root, "node_modules", "rate-limiter-flexible"), join(work, "node_modules", "rate-limiter-flexible"), { recursive: true });
    writeFileSync(join(work, "package.json"), JSON.stringify({ name: "ratebound-bench", private: true, type: "module" }));
    const dist = join(work, "node_modules", "ratebound", "dist");

    log("sizes: source files, the browser app, the package's files");
    const sources = measureSources(root);
    const app = await measureBrowserApp(work);
    log("the browser app in headless Chromium");
    app.browserRun = await runInChromium(app);
    const packageBundle = measureBundle(dist);
    const native = await runNative(root, join(work, "criterion"), log);
    if (native.error) log(`native core not measured: ${native.error}`);
    log(`timing in this process: ${ROUNDS} interleaved rounds of ~${BATCH_MS} ms batches per contender`);
    const { timing, skipped } = await timeEverything({ dist, rounds: ROUNDS, batchMs: BATCH_MS, warmupMs: WARMUP_MS, log: (line) => log(`  ${line}`) });
    log(`memory: ${MEMORY_KEYS.toLocaleString("en-US")} keys in fresh processes`);
    const memory = { keys: MEMORY_KEYS, ratebound: runMemory(dist, "ratebound"), map: runMemory(dist, "map") };
    log(`startup: ${STARTUP_RUNS} fresh Node processes per probe, three probes taking turns`);
    const startup = await measureStartup(work, STARTUP_RUNS);
    const loadAtEnd = loadavg();

    const run = { timing, skipped, native, app, packageBundle, memory, startup, sources };
    const { table, goals } = report(run);
    const spread = noise(timing);
    const twin = { a: timing.get("limit token bucket allowed 1"), b: timing.get("limit token bucket allowed 1 twin") };
    const seconds = ((Date.now() - started) / 1000).toFixed(0);
    const cpu = cpus();
    const machine = `${cpu[0]?.model ?? "unknown CPU"}, ${cpu.length} cores, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, ${platform()} ${release()}`;
    const tools = `Node ${process.version} (V8 ${process.versions.v8}), ${version("rustc", ["--version"])}, esbuild ${app.esbuildVersion}`;
    const keys = KEY_COUNT.toLocaleString("en-US");
    const markdown = `# Benchmarks

Generated by \`npm run bench\` (\`scripts/bench.mjs\`, \`scripts/bench/\`, \`benches/core.rs\`); do not edit by hand.

- **Date**: ${new Date(started).toISOString().replace(/\.\d+Z$/, "Z")}
- **Machine**: ${machine}; ${tools}
- **Load average** (1 min) at start ${loadAtStart[0].toFixed(2)}, at end ${loadAtEnd[0].toFixed(2)}
- **Run time**: ${seconds} s for \`scripts/bench.mjs\`, compiling the native bench included (the package build comes before it)

The first section holds the targets of issue 11, each as a ratio against its peer measured in
the same run (or as a size). Speed is compared between contenders timed in the same process,
interleaved: all ${timing.size} JavaScript contenders take turns (A, B, C, …, the starting one
rotating), each running a batch of ~${BATCH_MS} ms per turn, for ${ROUNDS} rounds, after ${WARMUP_MS} ms of warm-up
each. Figures are medians of the rounds, in brackets the fastest and slowest round; ratios are of
medians, in brackets the range of the ratios within single rounds. How noisy this run was: a
contender's slowest round was on median ${(spread.median * 100).toFixed(0)}% above its fastest (at worst
${(spread.max * 100).toFixed(0)}%), and the same \`limit()\` (token bucket, allowed, one key) timed as two separate
contenders gave ${twin.a && twin.b ? `${ns(twin.a.median)} and ${ns(twin.b.median)} ns` : "(not timed)"}. Absolute times drift with the machine's
load; the ratios are what the goals are about.

${table}

[1] \`scripts/bench/browser-app.mjs\`: an app of four lines (import \`RateLimiter\`, \`MemoryStore\` and
\`SECOND\` from \`"ratebound"\`, make a limiter on a \`MemoryStore\`, await one \`limit()\`, show the
answer), bundled by esbuild ${app.esbuildVersion} (\`bundle\`, \`minify\`, \`format: "esm"\`, \`platform: "browser"\`, so the
package's \`browser\` export condition resolves, as a user's bundler resolves it from the built
package copied into \`node_modules\`), plus the \`.wasm\` that bundle fetches at run time
(${app.wasmFiles.map((file) => `\`${file}\``).join(", ")}, found from the \`new URL(…, import.meta.url)\` in the bundled modules). The app is then
run in headless Chromium from a static server on a loopback port (when \`/usr/bin/chromium\` exists): it
must decide without an error, and the \`.wasm\` it fetches must be the one counted. Each file
gzipped alone at level 9, as a server sends it. The package rows count every \`.js\` and \`.cjs\` file in
\`dist/\`, and for each runtime entry the JS it loads (its imports followed within \`dist/\`).
[2] Fresh \`node\` processes, timed inside with \`performance.now()\` (process start-up not counted):
from the start of \`import("ratebound")\` to the first \`limit()\` result on a \`MemoryStore\`, and from the
start of \`import("rate-limiter-flexible")\` to the first \`RateLimiterMemory.consume()\` result. ${startup.runs} runs
each, the two probes and the step-by-step probe taking turns (the first of the three rotating),
so they see the same load; the ratio is of the medians, in brackets the range of the run-by-run
ratios. The step-by-step probe loads the same package one step at a time, so its total differs a little.
[3] The native core is \`benches/core.rs\` (criterion: 30 samples over 2 s after 0.5 s of warm-up;
the figure is the median of the samples, with criterion's mean beside it), run in the same
\`npm run bench\` just before the JavaScript timings (so these ratios span two stretches of time
and move with the machine's load between them): one \`decide_and_maybe_write\` on one key's block
of a \`Slab\`, the structure \`MemoryStore\` keeps in wasm memory, with the same configs; no clock call
(\`now\` moves 1 µs per decision), random numbers (sharded limits only) from xorshift.
\`decideInSlab\` is the one wasm call \`limit()\` makes on a \`MemoryStore\`, timed alone with \`now\` passed in.
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
[6] \`scripts/bench/sources.mjs\`: lines as \`wc -l\` counts them, of every \`.rs\` and \`.ts\` file under
\`src/\` and \`ts/\`, leaving out generated code (\`ts/wasm\`, \`_generated\`).
[7] What a user could write instead: the reference \`calculateRateLimit\` over a \`Map\` from key to
state, granted when the value left is \`>= 0\` (a refusal writes nothing), returning
\`Promise.resolve(result)\` for the awaited figure.
[8] A fresh \`node --expose-gc\` process: (JS heap used + the wasm memory's \`buffer.byteLength\`) after
${MEMORY_KEYS.toLocaleString("en-US")} distinct keys were granted once by one token bucket, minus the same before, divided
by the keys, after forced GCs. Wasm memory never shrinks, so what the slab's vectors reserve as
they grow is counted in full. The plain \`Map\` shows how much of the JS share is the keys themselves.

## Closing note

${closingNote(goals, run)}
`;
    process.stdout.write(`${markdown}\n`);
    if (!process.argv.includes("--no-write")) {
      writeFileSync(join(root, "BENCHMARKS.md"), markdown);
      log(`wrote BENCHMARKS.md (${seconds} s)`);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
