// `npm run bench`: what a decision costs, side by side with what a user would pick instead, as
// ratios measured in one run (absolute times on shared machines drift). Prints one table with
// every goal and whether it is met, and writes it to BENCHMARKS.md with the date and machine.
// A measurement, not a test: it asserts nothing about speed (it fails only when a contender
// takes another path than the row names, or a measurement cannot run).
//
//   node scripts/bench.mjs [--rounds N] [--no-write]
//
// Needs a built pkg/ (`npm run bench` builds it when stale) and cargo (for the native floor).
import { spawn, execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, platform, release, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { measureBundle } from "./bench/bundle.mjs";
import { median } from "./bench/interleave.mjs";
import { measureStartup } from "./bench/startup.mjs";
import { timeEverything } from "./bench/timing.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const flag = (name, fallback) => {
  const at = process.argv.indexOf(name);
  return at > 0 ? Number(process.argv[at + 1]) : fallback;
};
const ROUNDS = flag("--rounds", 31);
const BATCH_MS = 15;
const WARMUP_MS = 200;
const STARTUP_RUNS = 11;
const MEMORY_KEYS = 1_000_000;
const log = (line) => process.stderr.write(`bench: ${line}\n`);

// The native cases, as benches/core.rs names them, and the JS cases they pair with.
const NATIVE_CASES = [];
for (const kind of ["token bucket", "fixed window"]) {
  for (const shards of [1, 10]) {
    for (const path of ["allowed", "refused"]) {
      NATIVE_CASES.push({
        js: `${kind} ${path} ${shards}`,
        native: `${kind.replace(" ", "_")}-${path}-${shards === 1 ? "unsharded" : "10_shards"}`,
        label: `${kind}, ${path}, ${shards === 1 ? "unsharded" : "10 shards"}`,
      });
    }
  }
}
const NATIVE_TRANSITIONS = { "token bucket": "calculate_rate_limit-token_bucket", "fixed window": "calculate_rate_limit-fixed_window" };

/**
 * Runs `cargo bench --bench core` (progress to stderr); returns each benchmark's median and mean
 * ns per iteration from criterion's estimates. The median of criterion's samples is the figure
 * compared, as the JavaScript side reports medians of its rounds.
 */
function runNative(criterionHome) {
  return new Promise((resolve) => {
    log("native core: cargo bench --bench core");
    const child = spawn("cargo", ["bench", "--bench", "core"], {
      cwd: root,
      env: { ...process.env, CRITERION_HOME: criterionHome },
      stdio: ["ignore", process.stderr, process.stderr],
    });
    child.on("error", (error) => resolve({ error: error.message }));
    child.on("close", (code) => {
      if (code !== 0) return resolve({ error: `cargo bench exited with ${code}` });
      const estimates = {};
      for (const id of [...NATIVE_CASES.map((c) => c.native), ...Object.values(NATIVE_TRANSITIONS)]) {
        const path = join(criterionHome, id, "new", "estimates.json");
        if (!existsSync(path)) continue;
        const { median: middle, mean } = JSON.parse(readFileSync(path, "utf8"));
        estimates[id] = { median: middle.point_estimate, mean: mean.point_estimate };
      }
      resolve({ estimates });
    });
  });
}

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

// ---- formatting ----

const ns = (value) => (value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2));
const nsCell = (stats) => `${ns(stats.median)} ns (${ns(stats.min)}–${ns(stats.max)})`;
const kib = (bytes) => `${(bytes / 1024).toFixed(1)} KiB`;
const times = (ratio) => `${ratio >= 10 ? ratio.toFixed(0) : ratio.toFixed(2)}×`;
/** "peer / ratebound" as a speed-up of ratebound. */
const speedup = (ratio) => (ratio >= 1 ? `${times(ratio)} faster` : `${times(1 / ratio)} slower`);
const verdict = (met) => (met === undefined ? "not measured" : met ? "met" : "**missed**");
/**
 * The range of the per-round ratios of the peer to ratebound (round r of one against round r of
 * the other), worded like the headline: "3.10–4.20× faster", or "from 1.2× slower to 1.3× faster".
 */
const pairedRange = (peer, ours) => {
  const ratios = peer.samples.map((value, round) => value / ours.samples[round]);
  const [low, high] = [Math.min(...ratios), Math.max(...ratios)];
  if (low >= 1) return `${times(low).replace("×", "")}–${times(high)} faster`;
  if (high < 1) return `${times(1 / high).replace("×", "")}–${times(1 / low)} slower`;
  return `from ${speedup(low)} to ${speedup(high)}`;
};

function report(run) {
  const { timing, native, bundle, memory, startup } = run;
  const rows = [];
  const goals = [];
  const section = (title) => rows.push([`**${title}**`, "", "", "", "", ""]);
  const row = (...cells) => rows.push(cells);
  const goal = (name, met, detail) => {
    goals.push({ name, met, detail });
    return verdict(met);
  };
  const nativeNs = (id) => native.estimates?.[id]?.median;
  const nativeMeanNs = (id) => native.estimates?.[id]?.mean;

  section("Pure transition: `calculateRateLimit` on an existing state");
  for (const kind of ["token bucket", "fixed window"]) {
    const [ours, theirs] = [timing.get(`transition ${kind} ratebound`), timing.get(`transition ${kind} reference`)];
    const ratio = theirs.median / ours.median;
    const nativeTransition = nativeNs(NATIVE_TRANSITIONS[kind]);
    row(
      `${kind}`,
      nsCell(ours),
      `\`@convex-dev/rate-limiter\`: ${nsCell(theirs)}${nativeTransition === undefined ? "" : `; the native core: ${ns(nativeTransition)} ns`}`,
      `${speedup(ratio)} (per round: ${pairedRange(theirs, ours)})`,
      "at least as fast (≥ 1×)",
      goal(`calculateRateLimit, ${kind}`, ratio >= 1, { ours, theirs, ratio }),
    );
  }

  section("`limit()` on `MemoryStore`, token bucket, awaited [1]");
  for (const path of ["allowed", "refused"]) {
    for (const keySet of ["hot", "10k"]) {
      const id = `limit ${path} ${keySet}`;
      const ours = timing.get(`${id} ratebound`);
      const flexible = timing.get(`${id} flexible`);
      const plain = timing.get(`${id} plain`);
      const plainSync = timing.get(`${id} plain sync`);
      const target = path === "allowed" ? 3 : 10;
      const ratio = flexible.median / ours.median;
      const label = `${path}, ${keySet === "hot" ? "one hot key" : "10,000 keys"}`;
      row(
        label,
        nsCell(ours),
        `\`RateLimiterMemory\`: ${nsCell(flexible)}`,
        `${speedup(ratio)} (per round: ${pairedRange(flexible, ours)})`,
        `≥ ${target}× faster`,
        goal(`limit() ${label} vs RateLimiterMemory`, ratio >= target, { ours, flexible, ratio, target, path, keySet }),
      );
      row(
        "",
        "",
        `plain JS limiter [2]: ${nsCell(plain)}; synchronous, not awaited: ${ns(plainSync.median)} ns`,
        speedup(plain.median / ours.median),
        "—",
        "",
      );
    }
  }

  const pieces = timing;
  section("A sharded limit: 10 shards against the same limit unsharded (`limit()`, one key)");
  for (const kind of ["token bucket", "fixed window"]) {
    for (const path of ["allowed", "refused"]) {
      const sharded = pieces.get(`limit ${kind} ${path} 10`);
      const unsharded = pieces.get(`limit ${kind} ${path} 1`);
      row(`${kind}, ${path}`, `10 shards: ${nsCell(sharded)}`, `unsharded: ${nsCell(unsharded)}`, `${times(sharded.median / unsharded.median)} the cost`, "—", "");
    }
  }

  section("The WebAssembly path against the native core, ns per decision (one key) [3]");
  for (const { js, native: id, label } of NATIVE_CASES) {
    const wasm = pieces.get(`limit ${js}`);
    const slabOnly = pieces.get(`decideInSlab ${js}`);
    const floor = nativeNs(id);
    const ratio = floor === undefined ? undefined : wasm.median / floor;
    row(
      label,
      `\`limit()\`: ${nsCell(wasm)}; \`decideInSlab\` alone: ${ns(slabOnly.median)} ns`,
      floor === undefined ? `native core: not measured (${native.error ?? "missing"})` : `native core (criterion): ${ns(floor)} ns (mean ${ns(nativeMeanNs(id))})`,
      ratio === undefined ? "—" : `${times(ratio)} the native cost`,
      "within 5×",
      goal(`WebAssembly within 5× of native, ${label}`, ratio === undefined ? undefined : ratio <= 5, { wasm, slabOnly, floor, ratio }),
    );
  }

  section("Bundle: gzip -9 (zlib level 9), each file alone [4]");
  row("`.wasm`", `${kib(bundle.wasmRaw)} raw, ${kib(bundle.wasmGzip)} gzip`, "", "", "", "");
  for (const { entry, files, jsGzip } of bundle.entries) {
    row(`JS loaded by \`${entry}\``, `${kib(jsGzip)} gzip (${files.length} file${files.length === 1 ? "" : "s"})`, `with the \`.wasm\`: ${kib(jsGzip + bundle.wasmGzip)}`, "", "", "");
  }
  row(
    `\`.wasm\` + all package JS (${bundle.everyJs.length} files)`,
    `${kib(bundle.total)} gzip`,
    `of which JS ${kib(bundle.allJsGzip)}`,
    "",
    "≤ 32 KiB",
    goal("bundle", bundle.total <= 32 * 1024, bundle),
  );

  section("Memory");
  row(
    `heap per key in \`MemoryStore\` at ${MEMORY_KEYS.toLocaleString("en-US")} keys [5]`,
    `${memory.ratebound.perKey.toFixed(1)} B (JS heap ${(memory.ratebound.heapBytes / MEMORY_KEYS).toFixed(1)} + wasm memory ${(memory.ratebound.wasmBytes / MEMORY_KEYS).toFixed(1)})`,
    `a plain \`Map<string, number>\` of the same keys: ${memory.map.perKey.toFixed(1)} B`,
    "",
    "≤ 200 B",
    goal("memory", memory.ratebound.perKey <= 200, memory),
  );

  section("Startup");
  row(
    "Node (ESM): `import` → first decision [6]",
    `${startup.medianMs.toFixed(1)} ms (${startup.minMs.toFixed(1)}–${startup.maxMs.toFixed(1)})`,
    `median of ${startup.runs} fresh processes`,
    "",
    "< 5 ms",
    goal("startup", startup.medianMs < 5, startup),
  );

  section(`Where \`limit()\` spends its time (token bucket, allowed, one key; same run as the rows above)`);
  const total = pieces.get("limit token bucket allowed 1");
  const slab = pieces.get("decideInSlab token bucket allowed 1");
  const now = pieces.get("Date.now()");
  const settled = pieces.get("await Promise.resolve(result)");
  const trivial = pieces.get("trivial wasm call");
  const rest = total.median - slab.median - now.median - settled.median;
  const floor = nativeNs("token_bucket-allowed-unsharded");
  row("`limit()`, whole", nsCell(total), "", "", "", "");
  row("`decideInSlab` alone (the wasm call)", nsCell(slab), floor === undefined ? "" : `native core: ${ns(floor)} ns`, floor === undefined ? "" : `${times(slab.median / floor)} the native cost`, "", "");
  row("a trivial wasm call (`MemorySlab.occupied()`)", nsCell(trivial), "", "", "", "");
  row("`Date.now()`", nsCell(now), "", "", "", "");
  row("`await` of a settled Promise", nsCell(settled), "", "", "", "");
  row("the rest: options, `Map` lookups, decoding the answer", `${ns(rest)} ns (by difference)`, "", "", "", "");
  const steps = startup.steps;
  row(
    "startup, step by step (medians) [6]",
    `${steps.total.toFixed(1)} ms`,
    `glue module ${steps.glue.toFixed(1)}, read .wasm ${steps.read.toFixed(1)}, compile ${steps.compile.toFixed(1)}, instantiate ${steps.instantiate.toFixed(1)}, API modules ${steps.api.toFixed(1)}, first decision ${steps.firstDecision.toFixed(1)} ms`,
    "",
    "",
    "",
  );

  const header = ["Measurement", "ratebound", "Compared with", "Ratio", "Goal", "Goal met?"];
  const table = [`| ${header.join(" | ")} |`, `|${header.map(() => "---").join("|")}|`, ...rows.map((cells) => `| ${cells.join(" | ")} |`)].join("\n");
  return { table, goals, pieces: { total, slab, now, settled, trivial, rest, floor } };
}

/** Min–max spread of each timed contender, as a share of its median: how noisy the run was. */
function noise(timing) {
  const spreads = [...timing.values()].map((stats) => (stats.max - stats.min) / stats.median);
  return { median: median(spreads), max: Math.max(...spreads) };
}

/** What each missed goal's numbers say: where the time or the bytes go, and what would close it. */
function closingNote(goals, pieces, run) {
  const missed = goals.filter((goal) => goal.met === false);
  const unmeasured = goals.filter((goal) => goal.met === undefined);
  const met = goals.length - missed.length - unmeasured.length;
  const lines = [`${met} of ${goals.length} goals met in this run.${unmeasured.length ? ` Not measured: ${unmeasured.map((goal) => goal.name).join("; ")}.` : ""}`];
  if (missed.length === 0) return lines.join("\n");
  const p = pieces;
  const byPrefix = (prefix) => missed.filter((goal) => goal.name.startsWith(prefix));
  const nativeTransition = run.native.estimates?.[NATIVE_TRANSITIONS["token bucket"]]?.median;
  const breakdown =
    `One awaited \`limit()\` (token bucket, allowed, one key) took ${ns(p.total.median)} ns: ` +
    [
      [p.slab.median, `the wasm call \`decideInSlab\` ${ns(p.slab.median)} ns`],
      [p.rest, `the TypeScript around it ${ns(p.rest)} ns (the \`{ key }\` options, the name and key \`Map\` lookups, decoding the answer, \`Promise.resolve\`)`],
      [p.now.median, `\`Date.now()\` ${ns(p.now.median)} ns`],
      [p.settled.median, `the \`await\` of a settled Promise ${ns(p.settled.median)} ns`],
    ]
      .sort((x, y) => y[0] - x[0])
      .map(([, text]) => text)
      .join(", ") +
    `. Inside \`decideInSlab\`, crossing the boundary is small (a trivial wasm call: ${ns(p.trivial.median)} ns); the decision is ${p.floor === undefined ? "not measured natively" : `${ns(p.floor)} ns natively, ${times(p.slab.median / p.floor)} that in wasm`}${nativeTransition === undefined ? "" : `, where the transition it wraps is ${ns(nativeTransition)} ns`}.`;

  const transitions = byPrefix("calculateRateLimit");
  if (transitions.length) {
    const worst = transitions.map((goal) => goal.detail).sort((x, y) => x.ratio - y.ratio)[0];
    const floorAbove = p.trivial.median >= worst.theirs.median;
    lines.push(
      `- **\`calculateRateLimit\` is slower than the reference JavaScript** (${transitions.map((goal) => `${goal.name.replace("calculateRateLimit, ", "")}: ${speedup(goal.detail.ratio)}`).join("; ")}). ` +
        `The reference is a few lines of arithmetic that V8 inlines into the caller's loop (${ns(worst.theirs.median)} ns). ` +
        `Ours is ${ns(worst.ours.median)} ns, and a call into WebAssembly that does nothing costs ${ns(p.trivial.median)} ns here, ${floorAbove ? "already more than the whole reference" : `so ${ns(worst.ours.median - p.trivial.median)} ns is spent around a single crossing`}: ` +
        `every further crossing per call (a getter of a wasm-bindgen object is one), every object read or built at the boundary, and the lookup of the compiled config add to it. ` +
        `What would close most of it: one crossing per call, numbers in and numbers out (the four results written to a \`Float64Array\` over wasm memory, say), and the cheapest possible cache check for the config. ` +
        (floorAbove
          ? `Even then a wasm call cannot match arithmetic that V8 inlines: only the transition written in JavaScript would, which the house style rules out (no token arithmetic in TypeScript). The honest options are that, or a goal of "within a small factor of the reference".`
          : `That could bring it near the reference, but not below a wasm call's ${ns(p.trivial.median)} ns.`),
    );
  }

  const limits = byPrefix("limit()");
  if (limits.length) {
    const describe = (goal) => `${goal.name.replace("limit() ", "").replace(" vs RateLimiterMemory", "")}: ${speedup(goal.detail.ratio)}, against ≥ ${goal.detail.target}×`;
    let text = `- **\`limit()\` against \`RateLimiterMemory\`** (${limits.map(describe).join("; ")}). ${breakdown} `;
    const allowed = limits.filter((goal) => goal.detail.path === "allowed");
    if (allowed.length) {
      const peer = Math.min(...allowed.map((goal) => goal.detail.flexible.median));
      const budget = peer / 3;
      const shared = p.settled.median + p.now.median;
      text +=
        `\`RateLimiterMemory\` grants with a \`Map\` lookup, \`Date.now()\`, an addition, a new \`RateLimiterRes\` and a resolved Promise: ${ns(peer)} ns at best in this run, so 3× faster means ${ns(budget)} ns per awaited call` +
        (budget < shared
          ? `, less than the \`await\` and \`Date.now()\` alone (${ns(shared)} ns), which the peer pays too: with both sides awaited, the most any Promise-returning \`limit()\` could reach is ${times(peer / shared)}. A synchronous \`limitSync()\` for \`MemoryStore\` would save the \`await\`: at today's ${ns(p.total.median - p.settled.median)} ns that is ${times(peer / (p.total.median - p.settled.median))} the peer's awaited call. `
          : `, of which the \`await\` and \`Date.now()\` take ${ns(shared)} ns, leaving ${ns(budget - shared)} ns for the decision and the TypeScript. `) +
        `What would close the gap: the decision itself (profile \`cargo bench --bench core\`: the native decision costs many times the transition it wraps, so the time is in the plumbing around the arithmetic, not in it), then the TypeScript around the call (one \`Map\` from name and key to slot instead of two, no options object on the hot path). `;
    }
    if (limits.some((goal) => goal.detail.path === "refused")) {
      const refused = limits.filter((goal) => goal.detail.path === "refused");
      const peer = Math.min(...refused.map((goal) => goal.detail.flexible.median));
      text +=
        `On the refused path \`RateLimiterMemory\` rejects its Promise with a \`RateLimiterRes\`, a slower path in V8 (${ns(peer)} ns at best in this run); ours refuses through the same path as a grant, so 10× would need ${ns(peer / 10)} ns per awaited refusal: the same pieces as above have to shrink.`;
    }
    lines.push(text.trim());
  }

  const wasmGoals = byPrefix("WebAssembly");
  if (wasmGoals.length) {
    lines.push(
      `- **The WebAssembly path is more than 5× the native core** for ${wasmGoals.map((goal) => `${goal.name.replace("WebAssembly within 5× of native, ", "")} (${times(goal.detail.ratio)}; \`decideInSlab\` alone ${times(goal.detail.slabOnly.median / goal.detail.floor)})`).join("; ")}. ` +
        `The wasm call alone is within the goal or near it; what \`limit()\` adds is the TypeScript, the clock and the Promise (see the breakdown in the last section of the table). ` +
        `The native bench reads no clock and draws random numbers (sharded limits) from xorshift where the package draws from a pool of cryptographic bytes; both make the floor lower than the work \`limit()\` must do.`,
    );
  }

  if (byPrefix("bundle").length) {
    const { wasmGzip, allJsGzip, total, wasmSections } = run.bundle;
    lines.push(
      `- **Bundle: ${kib(total)} gzip against 32 KiB.** The \`.wasm\` alone is ${kib(wasmGzip)} gzip (its code section ${kib(wasmSections.code)} raw, data ${kib(wasmSections.data)}), over the whole budget before any JavaScript, and every JS file the package ships adds ${kib(allJsGzip)} ` +
        `(the CommonJS bundle \`node.cjs\` repeats the glue and the API; the adapters, \`preview\` and \`react\` add the rest, though no runtime loads them all). ` +
        `What would close it: find the largest functions with \`twiggy top\` on a build kept unstripped, and cut what the hot path does not need in wasm: the conversions of JS objects by property name and the \`format!\` error messages in \`wasm.rs\` (\`core::fmt\`), wasm-bindgen-futures' Promise machinery (only for asynchronous stores), the allocator. ` +
        (allJsGzip >= 32 * 1024
          ? `The JavaScript alone is over 32 KiB, so the goal as written needs both halves to shrink; `
          : `32 KiB for everything leaves ${kib(32 * 1024 - allJsGzip)} gzip for the \`.wasm\`; `) +
        `counting only what one runtime loads may be the fairer goal: the \`.wasm\` and the JS of one entry came to ${kib(wasmGzip + Math.max(...run.bundle.entries.map((entry) => entry.jsGzip)))} at most in this run.`,
    );
  }

  if (byPrefix("memory").length) {
    lines.push(`- **Memory per key is above 200 B** (${run.memory.ratebound.perKey.toFixed(1)} B: JS heap ${(run.memory.ratebound.heapBytes / MEMORY_KEYS).toFixed(1)}, wasm ${(run.memory.ratebound.wasmBytes / MEMORY_KEYS).toFixed(1)}); a plain \`Map\` of the same keys takes ${run.memory.map.perKey.toFixed(1)} B, so the rest is what the store adds (see [5]).`);
  }

  if (byPrefix("startup").length) {
    const s = run.startup.steps;
    const largest = Object.entries({ "compiling the `.wasm`": s.compile, "loading the glue module": s.glue, "loading the API modules": s.api, "the first decision": s.firstDecision, "reading the `.wasm`": s.read })
      .sort((x, y) => y[1] - x[1])[0][0];
    lines.push(
      `- **Startup: ${run.startup.medianMs.toFixed(1)} ms against < 5 ms** (fresh processes on this load varied ${run.startup.minMs.toFixed(1)}–${run.startup.maxMs.toFixed(1)} ms). ` +
        `Step by step: the glue module ${s.glue.toFixed(1)} ms, reading the \`.wasm\` ${s.read.toFixed(1)} ms (with loading \`node:fs\`), compiling it ${s.compile.toFixed(1)} ms, instantiating ${s.instantiate.toFixed(1)} ms, the API modules ${s.api.toFixed(1)} ms, the first decision ${s.firstDecision.toFixed(1)} ms; the largest is ${largest}. ` +
        `Compiling grows with the module (V8 compiles functions lazily by default, but decodes and validates the whole module up front): a smaller \`.wasm\` (see the bundle note) shortens it. ` +
        `Loading ES modules is per file: one bundled file for the Node entry (as \`node.cjs\` already is) saves the resolution and evaluation of ${(run.bundle.entries.find((entry) => entry.entry === "node.js")?.files.length ?? 6) - 1} imports.`,
    );
  }
  return lines.join("\n");
}

/** Section sizes of a .wasm: code and data, raw bytes. */
function wasmSections(path) {
  const bytes = readFileSync(path);
  let at = 8;
  const leb = () => {
    let result = 0;
    let shift = 0;
    let byte;
    do {
      byte = bytes[at++];
      result += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    } while (byte & 0x80);
    return result;
  };
  const sizes = { code: 0, data: 0 };
  while (at < bytes.length) {
    const id = bytes[at++];
    const size = leb();
    if (id === 10) sizes.code = size;
    if (id === 11) sizes.data = size;
    at += size;
  }
  return sizes;
}

async function main() {
  const started = Date.now();
  const pkg = join(root, "pkg");
  if (!existsSync(join(pkg, "dist", "wasm", "ratebound_bg.wasm"))) {
    console.error("bench: pkg/ is not built; run `node scripts/build.mjs` first (`npm run bench` does)");
    process.exit(1);
  }
  const loadAtStart = loadavg();
  // One snapshot of the package for every measurement, even if pkg/ is rebuilt meanwhile.
  const work = mkdtempSync(join(tmpdir(), "ratebound-bench-"));
  try {
    cpSync(pkg, join(work, "node_modules", "ratebound"), { recursive: true });
    writeFileSync(join(work, "package.json"), JSON.stringify({ name: "ratebound-bench", private: true, type: "module" }));
    const dist = join(work, "node_modules", "ratebound", "dist");

    log("bundle sizes");
    const bundle = { ...measureBundle(dist), wasmSections: wasmSections(join(dist, "wasm", "ratebound_bg.wasm")) };
    const native = await runNative(join(work, "criterion"));
    if (native.error) log(`native core not measured: ${native.error}`);
    log(`timing in this process: ${ROUNDS} interleaved rounds of ~${BATCH_MS} ms batches per contender`);
    const timing = await timeEverything({ dist, rounds: ROUNDS, batchMs: BATCH_MS, warmupMs: WARMUP_MS, log: (line) => log(`  ${line}`) });
    log(`memory: ${MEMORY_KEYS.toLocaleString("en-US")} keys in fresh processes`);
    const memory = { ratebound: runMemory(dist, "ratebound"), map: runMemory(dist, "map") };
    log(`startup: ${STARTUP_RUNS} fresh Node processes per probe`);
    const startup = await measureStartup(work, STARTUP_RUNS);
    const loadAtEnd = loadavg();

    const run = { timing, native, bundle, memory, startup };
    const { table, goals, pieces } = report(run);
    const spread = noise(timing);
    const twin = { a: timing.get("limit allowed hot ratebound"), b: timing.get("limit token bucket allowed 1") };
    const seconds = ((Date.now() - started) / 1000).toFixed(0);
    const cpu = cpus();
    const machine = `${cpu[0]?.model ?? "unknown CPU"}, ${cpu.length} cores, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, ${platform()} ${release()}`;
    const tools = `Node ${process.version} (V8 ${process.versions.v8}), ${version("rustc", ["--version"])}`;
    const markdown = `# Benchmarks

Generated by \`npm run bench\` (\`scripts/bench.mjs\`, \`benches/core.rs\`); do not edit by hand.

- **Date**: ${new Date(started).toISOString().replace(/\.\d+Z$/, "Z")}
- **Machine**: ${machine}; ${tools}
- **Load average** (1 min) at start ${loadAtStart[0].toFixed(2)}, at end ${loadAtEnd[0].toFixed(2)}
- **Run time**: ${seconds} s for \`scripts/bench.mjs\`, compiling the native bench included (the package build comes before it)

Speed is reported as ratios between contenders timed in the same process, interleaved: all
${timing.size} JavaScript contenders of the table take turns (A, B, C, …, the starting one rotating),
each running a batch of ~${BATCH_MS} ms per turn, for ${ROUNDS} rounds, after ${WARMUP_MS} ms of warm-up each.
Figures are medians of the rounds, in brackets the fastest and slowest round; ratios are of
medians, in brackets the range of the ratios within single rounds. How noisy this run was: a
contender's slowest round was on median ${(spread.median * 100).toFixed(0)}% above its fastest (at worst
${(spread.max * 100).toFixed(0)}%), and the same \`limit()\` (token bucket, allowed, one key) timed as two separate
contenders gave ${ns(twin.a.median)} and ${ns(twin.b.median)} ns. Absolute nanoseconds drift with the machine's
load; the ratios are what the goals are about.

${table}

[1] Every call is awaited on every side: ratebound's \`limit()\` and \`RateLimiterMemory.consume()\`
return Promises (\`consume()\` rejects with a \`RateLimiterRes\` on refusal, which is caught). The
token bucket and the peer's window (\`RateLimiterMemory\` is a fixed-window counter: \`points\` per
\`duration\` seconds) hold 10¹² tokens for the allowed rows, and 10 tokens an hour, all taken before
timing, for the refused rows. "10,000 keys" cycles through 10,000 keys that all have state. Every
batch checks that every decision took the row's path.
[2] The plain JavaScript limiter is what a user could write instead: the reference
\`calculateRateLimit\` of \`@convex-dev/rate-limiter\` over a \`Map\` from key to state, granted when
the value left is \`>= 0\` (a refusal writes nothing), returning \`Promise.resolve(result)\` for the
awaited figure.
[3] The native core is \`benches/core.rs\` (criterion: 30 samples over 2 s after 0.5 s of warm-up;
the figure is the median of the samples, like the medians of rounds on the JavaScript side, with
criterion's mean beside it), run in the same \`npm run bench\` just before the JavaScript timings
(so, unlike the other ratios, this one spans two stretches of time and moves with the machine's
load between them): one
\`decide_and_maybe_write\` on one key's block of a \`Slab\`, the structure \`MemoryStore\` keeps in
wasm memory, with the same configs. It has no clock call (\`now\` moves 1 µs per decision) and
draws its random numbers (sharded limits only) from xorshift. \`decideInSlab\` is the one wasm
call \`limit()\` makes on a \`MemoryStore\`, timed alone with \`now\` passed in.
[4] Each entry's JS is the file and every file it imports within \`dist/\`, each gzipped alone (as
served). "All package JS" is every \`.js\` and \`.cjs\` file in \`dist/\`: the entries, the API, the
glue, the adapters (\`convex\`, \`durable-object\`, \`deno-kv\`), \`preview\` and \`react\`, and the
CommonJS bundle \`node.cjs\`, which repeats the API and glue. Type declarations are not counted.
[5] Measured in a fresh \`node --expose-gc\` process: (JS heap used + the wasm memory's
\`buffer.byteLength\`) after ${MEMORY_KEYS.toLocaleString("en-US")} distinct keys (\`"user:0"\`, \`"user:1"\`, …) were granted once by
one token bucket, minus the same with 0 keys, divided by ${MEMORY_KEYS.toLocaleString("en-US")}, after forced GCs. It counts
what the \`MemoryStore\` keeps per key: in the JS heap, the entry of the \`Map\` from key to slot
inside the \`Map\` per limit name, and the key string it retains; in wasm memory, the state of each
shard (two f64: 16 bytes), the slab's bookkeeping per slot, and whatever the slab's \`Vec\`s reserve
as they grow by doubling (wasm memory never shrinks, so the growth is counted in full). The plain
\`Map<string, number>\` of the same keys shows how much of the JS heap share is the keys themselves.
[6] Fresh \`node\` processes, timed inside with \`performance.now()\` from the start of
\`import("ratebound")\` to the first \`limit()\` result, as \`scripts/bench-startup.mjs\` does;
process start-up is not counted. The step-by-step probe loads the same package one step at a
time in other fresh processes (alternating with the first), so its total differs a little.

## Closing note

${closingNote(goals, pieces, run)}
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
