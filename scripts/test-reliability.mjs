#!/usr/bin/env node
// The reliability report (issue 7): runs the reliability suites and the fuzz
// targets, collects their counts, and prints one summary table.
//
//   node scripts/test-reliability.mjs                     # everything; each fuzz target 25 s
//   node scripts/test-reliability.mjs --fuzz-seconds=600  # longer fuzzing, by hand
//   node scripts/test-reliability.mjs --skip-fuzz         # the suites only
//
// Suites: tests/reliability_core.rs (Rust core: clocks, drift, faults,
// regressions) and tests/reliability/*.test.mjs (the built package: no panic,
// hostile objects, the bad input matrix, faults, clocks, hostile callers, the
// bounded store, and the library's records on the hosts without server-side code). Each appends JSON
// lines of counts to the file named by RATEBOUND_RELIABILITY_COUNTS.
// Fuzzing: cargo fuzz (libFuzzer) on fuzz/fuzz_targets/*, on stable Rust with
// RUSTC_BOOTSTRAP=1, time-boxed by -max_total_time. Exits non-zero when any
// test fails or any fuzz target finds a crash.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const args = process.argv.slice(2);
const option = (name) => args.find((arg) => arg.startsWith(`--${name}=`))?.split("=")[1];
const fuzzSeconds = Number(option("fuzz-seconds") ?? process.env.RATEBOUND_FUZZ_SECONDS ?? 25);
const skipFuzz = args.includes("--skip-fuzz");
const FUZZ_TARGETS = ["config", "transition", "decisions"];

if (!Number.isFinite(fuzzSeconds) || fuzzSeconds < 1) {
  console.error(`--fuzz-seconds must be a number of seconds >= 1 (got ${option("fuzz-seconds")})`);
  process.exit(2);
}

const work = mkdtempSync(join(tmpdir(), "ratebound-reliability-"));
const countsFile = join(work, "counts.jsonl");

/**
 * Runs a command; its output goes to the terminal (`echo`) and is returned.
 * @returns {Promise<{ code: number, output: string, seconds: number }>}
 */
function run(command, commandArgs, { env = {}, cwd = root, echo = true } = {}) {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(command, commandArgs, { cwd, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    const take = (stream, sink) =>
      stream.on("data", (chunk) => {
        output += chunk;
        if (echo) sink.write(chunk);
      });
    take(child.stdout, process.stdout);
    take(child.stderr, process.stderr);
    child.on("close", (code) => resolve({ code: code ?? 1, output, seconds: (Date.now() - started) / 1000 }));
    child.on("error", (error) => resolve({ code: 127, output: String(error), seconds: 0 }));
  });
}

const heading = (text) => console.log(`\n== reliability: ${text}`);
const rows = [];
let failed = false;
/** The classes of hostile input the suites count (a Tally field each), with their titles in the report. */
const HOSTILE_CLASSES = [
  ["hostile options", "hostile options (bad, misspelled, null, inherited, unreachable waits)"],
  ["polluted prototypes", "polluted prototypes (an option name on Object.prototype, per call)"],
  ["trap attempts", "trap attempts (names that once reached a WebAssembly trap)"],
  ["waits retried", "refusals retried at now + retryAfter (no traffic between)"],
  ["bounded = unbounded decisions", "bounded MemoryStore answers equal to an unbounded one's"],
  ["STORE_FULL", "bounded MemoryStore calls failed closed with STORE_FULL"],
  ["evictions", "keys the bounded MemoryStore dropped (full again)"],
  ["grant records", "grants against records: rolled-back charges, callers' keys that spell a record, keyless and \"\" grants"],
  ["callers' keys at the old record keys", "callers at the old ledger and settled-mark keys, on Deno KV, D1, Durable Objects and Convex (answers unchanged)"],
  ['keyless grants beside "" grants', 'keyless grants beside "" grants, on Deno KV, D1, Durable Objects and Convex (no refund shared)'],
  ["cancels of rolled-back grants", "cancels of grants whose charge rolled back, on Deno KV, D1 and Convex (nothing refunded)"],
];

// 1. The package must be built (a no-op when nothing changed).
heading("build pkg/ if stale");
if ((await run("node", ["scripts/build.mjs", "--if-stale"])).code !== 0) {
  console.error("reliability: building pkg/ failed");
  process.exit(1);
}

// 2. The Rust core's reliability tests.
heading("Rust core (tests/reliability_core.rs)");
const rust = await run("cargo", ["test", "--quiet", "--test", "reliability_core"], { env: { RATEBOUND_RELIABILITY_COUNTS: countsFile } });
const rustTally = [...rust.output.matchAll(/test result: \w+\. (\d+) passed; (\d+) failed/g)];
const rustPassed = rustTally.reduce((sum, match) => sum + Number(match[1]), 0);
const rustFailed = rustTally.reduce((sum, match) => sum + Number(match[2]), 0) + (rust.code !== 0 && rustTally.length === 0 ? 1 : 0);
failed ||= rust.code !== 0;

// 3. The JS suites on the built package.
heading("JS suites on pkg/ (tests/reliability/)");
const specLog = join(work, "spec.log");
const js = await run(
  "node",
  ["--test", "--test-reporter=dot", "--test-reporter-destination=stdout", "--test-reporter=spec", `--test-reporter-destination=${specLog}`, "tests/reliability/"],
  { env: { RATEBOUND_RELIABILITY_COUNTS: countsFile } },
);
const spec = existsSync(specLog) ? readFileSync(specLog, "utf8") : "";
// Known defects are kept as todo tests (their reason after "# "): the ones that failed in this run
// (reproduced the defect), grouped by reason for the report.
const todoReasons = new Map();
for (const line of new Set(spec.split("\n").filter((line) => /^\s+✖.* # /.test(line) && !/# (SKIP|test name does not match)/.test(line)))) {
  const reason = line.slice(line.lastIndexOf(" # ") + 3).trim();
  todoReasons.set(reason, (todoReasons.get(reason) ?? 0) + 1);
}
const specCount = (name) => Number(spec.match(new RegExp(`ℹ ${name} (\\d+)`))?.[1] ?? 0);
const jsTests = { tests: specCount("tests"), pass: specCount("pass"), fail: specCount("fail"), todo: specCount("todo") };
if (js.code !== 0) {
  failed = true;
  const failures = spec.indexOf("✖ failing tests:");
  console.log(failures >= 0 ? spec.slice(failures) : spec.slice(-4000));
}

// 4. The fuzz targets, time-boxed.
const fuzzRows = [];
let rustPassedOracle = 0;
if (!skipFuzz) {
  heading(`fuzzing: ${FUZZ_TARGETS.join(", ")}, ${fuzzSeconds} s each (cargo fuzz, libFuzzer)`);
  const fuzzEnv = { RUSTC_BOOTSTRAP: "1" };
  const hasCargoFuzz = (await run("cargo", ["fuzz", "--version"], { echo: false })).code === 0;
  if (!hasCargoFuzz) {
    console.error("reliability: `cargo fuzz` is missing; `bash scripts/ensure-toolchain.sh` installs it");
    process.exit(1);
  }
  // The fuzz targets' oracle can fail: its own tests feed it broken decisions.
  const oracle = await run("cargo", ["test", "--quiet", "--manifest-path", "fuzz/Cargo.toml", "--lib"]);
  const oracleTally = oracle.output.match(/test result: \w+\. (\d+) passed; (\d+) failed/);
  rustPassedOracle = Number(oracleTally?.[1] ?? 0);
  failed ||= oracle.code !== 0;
  // Build first, so that building is not counted in the fuzzing time. No sanitizer:
  // ratebound has no unsafe code; panics, overflow checks and assertions are what is hunted.
  const build = await run("cargo", ["fuzz", "build", "--sanitizer", "none", "--fuzz-dir", "fuzz"], { env: fuzzEnv });
  if (build.code !== 0) {
    console.error("reliability: building the fuzz targets failed");
    process.exit(1);
  }
  for (const target of FUZZ_TARGETS) {
    const corpus = join(root, "fuzz", "corpus", target);
    const seeds = join(root, "fuzz", "seeds", target);
    mkdirSync(corpus, { recursive: true });
    const artifacts = join(root, "fuzz", "artifacts", target);
    const before = new Set(existsSync(artifacts) ? readdirSync(artifacts) : []);
    const corpora = existsSync(seeds) ? [corpus, seeds] : [corpus];
    const result = await run(
      "cargo",
      ["fuzz", "run", "--sanitizer", "none", "--fuzz-dir", "fuzz", target, ...corpora, "--",
        `-max_total_time=${fuzzSeconds}`, "-print_final_stats=1", "-timeout=10", "-print_pcs=0", "-print_coverage=0"],
      { env: fuzzEnv, echo: false },
    );
    const executions = Number(result.output.match(/stat::number_of_executed_units:\s*(\d+)/)?.[1] ?? result.output.match(/Done (\d+) runs/)?.[1] ?? 0);
    const newArtifacts = (existsSync(artifacts) ? readdirSync(artifacts) : []).filter((name) => !before.has(name));
    const crashes = result.code === 0 ? 0 : Math.max(1, newArtifacts.length);
    fuzzRows.push({ target, executions, crashes, seconds: result.seconds, artifacts: newArtifacts.map((name) => join("fuzz", "artifacts", target, name)) });
    console.log(`fuzz ${target}: ${executions.toLocaleString("en")} executions, ${crashes} crashes (${result.seconds.toFixed(0)} s)`);
    if (result.code !== 0) {
      failed = true;
      const panic = result.output.indexOf("panicked at");
      console.log(panic >= 0 ? result.output.slice(panic, panic + 3000) : result.output.slice(-3000));
      for (const artifact of fuzzRows.at(-1).artifacts) {
        console.log(`reproduce: RUSTC_BOOTSTRAP=1 cargo fuzz run --sanitizer none --fuzz-dir fuzz ${target} ${artifact}`);
      }
    }
  }
}

// 5. The counts, gathered.
const lines = existsSync(countsFile) ? readFileSync(countsFile, "utf8").trim().split("\n").filter(Boolean).map((line) => JSON.parse(line)) : [];
const sum = (suite, ...fields) => lines.filter((line) => suite === null || line.suite === suite).reduce((total, line) => total + fields.reduce((acc, field) => acc + (Number(line[field]) || 0), 0), 0);
const suites = [...new Set(lines.map((line) => line.suite))];
for (const suite of suites) {
  rows.push({
    suite,
    inputs: sum(suite, "inputs tried", "hostile options", "polluted prototypes", "trap attempts"),
    failing: sum(suite, "failing calls"),
    faults: sum(suite, "faults injected", "faults"),
    decisions: sum(suite, "decisions checked", "decisions"),
    bound: sum(suite, "decisions checked against the bound"),
    clockSteps: sum(suite, "clock steps", "clock_steps"),
  });
}
// Hostile and careless callers (issue 18): counts per class, and the polluted
// prototypes per constructor and function (fields "polluted: <target>").
const hostileRows = HOSTILE_CLASSES.map(([field, title]) => ({ title, count: sum(null, field) })).filter((row) => row.count > 0);
const pollutedTargets = [...new Set(lines.flatMap((line) => Object.keys(line).filter((field) => field.startsWith("polluted: "))))];
const hostileTable = [
  "| hostile callers: class | cases |",
  "|---|---:|",
  ...hostileRows.map((row) => `| ${row.title} | ${row.count.toLocaleString("en")} |`),
  ...pollutedTargets.map((field) => `| polluted prototypes: ${field.slice("polluted: ".length)} | ${sum(null, field).toLocaleString("en")} |`),
];
const worstDriftMs = Math.max(0, ...lines.map((line) => Number(line.worst_drift_ms) || 0));
const worstDriftTokens = Math.max(0, ...lines.map((line) => Number(line.worst_drift_tokens) || 0));
const fmt = (n) => (n === 0 ? "0" : n.toLocaleString("en"));

const COLUMNS = [
  ["inputs tried", "inputs"],
  ["failing calls", "failing"],
  ["faults injected", "faults"],
  ["decisions checked", "decisions"],
  ["against the bound", "bound"],
  ["clock steps", "clockSteps"],
];
const total = (field) => rows.reduce((sum, row) => sum + row[field], 0);
const table = [
  `| suite | ${COLUMNS.map(([title]) => title).join(" | ")} |`,
  `|---|${COLUMNS.map(() => "---:").join("|")}|`,
  ...rows.map((row) => `| ${row.suite} | ${COLUMNS.map(([, field]) => fmt(row[field])).join(" | ")} |`),
  `| **total** | ${COLUMNS.map(([, field]) => `**${fmt(total(field))}**`).join(" | ")} |`,
];
const fuzzTable = [
  "| fuzz target | executions | crashes | seconds |",
  "|---|---:|---:|---:|",
  ...fuzzRows.map((row) => `| ${row.target} | ${fmt(row.executions)} | ${row.crashes} | ${row.seconds.toFixed(0)} |`),
  `| **total** | **${fmt(fuzzRows.reduce((t, r) => t + r.executions, 0))}** | **${fuzzRows.reduce((t, r) => t + r.crashes, 0)}** | **${fuzzRows.reduce((t, r) => t + r.seconds, 0).toFixed(0)}** |`,
];

console.log("\n## ratebound reliability report\n");
console.log(table.join("\n"));
console.log("");
if (hostileRows.length > 0) {
  console.log(hostileTable.join("\n"));
  console.log("");
}
if (skipFuzz) console.log("(fuzzing skipped)");
else console.log(fuzzTable.join("\n"));
console.log("");
console.log(
  `Tests: Rust core ${rustPassed} passed, ${rustFailed} failed; JS ${jsTests.pass} passed, ${jsTests.fail} failed, ${jsTests.todo} todo (of ${jsTests.tests})` +
    (skipFuzz ? "." : `; the fuzz oracle's own checks ${rustPassedOracle} passed.`),
);
if (todoReasons.size > 0) {
  console.log(`Known defects, reproduced by failing todo tests (${[...todoReasons.values()].reduce((a, b) => a + b, 0)} tests; not counted as failures):`);
  for (const [reason, count] of todoReasons) console.log(`- ${reason} (${count})`);
}
console.log(`Drift over ten simulated years at 1 token a week: ${worstDriftMs} ms in grant time, ${worstDriftTokens.toExponential(1)} tokens in value.`);
console.log(
  failed
    ? "RESULT: FAILED (see above)."
    : (todoReasons.size > 0 ? "RESULT: no test failed, but the known defects listed above stand (their todo tests reproduce them). Apart from those: " : "RESULT: nothing lost. ") +
      "Every stored state was two finite numbers, no limit admitted past its bound, every committed call replayed exactly, no failed call left a write behind (bar the documented non-transactional two-shard case, which only spends), and the fuzz targets found no crash.",
);
rmSync(work, { recursive: true, force: true });
process.exit(failed ? 1 : 0);
