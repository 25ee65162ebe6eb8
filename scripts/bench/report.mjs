// The table of `npm run bench`: first the issue's targets (issue 11), each a ratio against its
// peer in the same run (or an absolute size) with its goal and whether it is met; then the rows
// that explain them, without goals. Returns the goals too, for the closing note (./note.mjs).
import { kib, ms, ns, nsCell, pairedRange, ratioRange, speedup, times, verdict } from "./format.mjs";
import { NATIVE_CASES, NATIVE_TARGET, NATIVE_TRANSITIONS } from "./native.mjs";
import { KEY_COUNT } from "./timing.mjs";

/** The targets of issue 11, as the table states them and as they are judged. */
export const TARGETS = {
  bundle: { goal: "≤ 24 KiB", met: (app) => app.total <= 24 * 1024, budgetBytes: 24 * 1024 },
  startup: { goal: "≤ 0.35× its time", met: (startup) => startup.ratio <= 0.35, ratio: 0.35 },
  native: { goal: "≤ 20 ns", met: (nanoseconds) => nanoseconds <= 20, ns: 20 },
  limit: { goal: "≥ 2× faster", met: (speed) => speed >= 2, speedup: 2 },
  transition: { goal: "≤ 3× its time", met: (ratio) => ratio <= 3, ratio: 3 },
  sources: { goal: "≤ 400 lines", met: (lines) => lines <= 400, lines: 400 },
};

/**
 * @param {object} run Everything measured: `timing`, `skipped`, `native`, `app`, `packageBundle`,
 * `memory` (with `keys`), `startup`, `sources`.
 * @returns {{ table: string, goals: { id: string, name: string, met: boolean | undefined, detail: object }[] }}
 * @example
 * const { table, goals } = report(run);
 */
export function report(run) {
  const { timing, native, app, packageBundle, memory, startup, sources } = run;
  const rows = [];
  const goals = [];
  const section = (title) => rows.push([`**${title}**`, "", "", "", "", ""]);
  const row = (...cells) => rows.push(cells);
  const goal = (id, name, met, detail) => {
    goals.push({ id, name, met, detail });
    return verdict(met);
  };
  const nativeNs = (id) => native.estimates?.[id]?.median;
  const nativeMeanNs = (id) => native.estimates?.[id]?.mean;
  const got = (id) => timing.get(id);

  section("The targets of issue 11, each against its peer in this run");
  row(
    "browser app: esbuild-bundled, minified, importing `ratebound` [1]",
    `${kib(app.total)} gzip: JS ${kib(app.jsGzip)} + \`.wasm\` ${kib(app.wasmGzip)}`,
    `raw: JS ${kib(app.jsRaw)}, \`.wasm\` ${kib(app.wasmRaw)}; \`ratebound\` resolved to \`${app.resolvedEntry}\`; ${
      app.browserRun?.ran ? `ran in Chromium: decided, fetched ${app.browserRun.served.filter((path) => path.endsWith(".wasm")).map((path) => `\`${path}\``).join(", ")}` : `not run in a browser (${app.browserRun?.reason ?? "not tried"})`
    }`,
    `${times(app.total / TARGETS.bundle.budgetBytes)} the budget`,
    TARGETS.bundle.goal,
    goal("bundle", "browser app bundle", TARGETS.bundle.met(app), app),
  );
  row(
    "Node: `import` → first decision, fresh process [2]",
    `${ms(startup.ours.medianMs)} (${startup.ours.minMs.toFixed(1)}–${startup.ours.maxMs.toFixed(1)})`,
    `\`rate-limiter-flexible\` import → \`RateLimiterMemory\` → first \`consume()\`: ${ms(startup.peer.medianMs)} (${startup.peer.minMs.toFixed(1)}–${startup.peer.maxMs.toFixed(1)})`,
    `${times(startup.ratio)} its time (per run: ${ratioRange(startup.pairedRatios)})`,
    TARGETS.startup.goal,
    goal("startup", "startup against rate-limiter-flexible", TARGETS.startup.met(startup), startup),
  );
  const decision = nativeNs(NATIVE_TARGET);
  const nativeTransition = nativeNs(NATIVE_TRANSITIONS["token bucket"]);
  row(
    "native decision on a slab (criterion: token bucket, allowed, unsharded) [3]",
    decision === undefined ? `not measured (${native.error ?? "missing"})` : `${ns(decision)} ns (mean ${ns(nativeMeanNs(NATIVE_TARGET))})`,
    nativeTransition === undefined ? "" : `the transition inside it, natively: ${ns(nativeTransition)} ns`,
    decision === undefined || nativeTransition === undefined ? "" : `${times(decision / nativeTransition)} the transition`,
    TARGETS.native.goal,
    goal("native", "native decision on a slab", decision === undefined ? undefined : TARGETS.native.met(decision), { decision, nativeTransition }),
  );
  {
    const ours = got(`limit allowed 1k ratebound`);
    const flexible = got(`limit allowed 1k flexible`);
    const speed = flexible.median / ours.median;
    row(
      `awaited \`limit()\` on \`MemoryStore\`, ${KEY_COUNT.toLocaleString("en-US")} keys, allowed [4]`,
      nsCell(ours),
      `\`RateLimiterMemory\` over the same keys: ${nsCell(flexible)}`,
      `${speedup(speed)} (per round: ${pairedRange(flexible, ours)})`,
      TARGETS.limit.goal,
      goal("limit", "limit() against RateLimiterMemory", TARGETS.limit.met(speed), { ours, flexible, speed }),
    );
  }
  for (const kind of ["token bucket", "fixed window"]) {
    const [ours, theirs] = [got(`transition ${kind} ratebound`), got(`transition ${kind} reference`)];
    const ratio = ours.median / theirs.median;
    row(
      `\`calculateRateLimit\`, ${kind}, existing state [5]`,
      nsCell(ours),
      `\`@convex-dev/rate-limiter\`: ${nsCell(theirs)}`,
      `${times(ratio)} its time (per round: ${ratioRange(ours.samples.map((value, round) => value / theirs.samples[round]))})`,
      TARGETS.transition.goal,
      goal(`transition ${kind}`, `calculateRateLimit, ${kind}`, TARGETS.transition.met(ratio), { ours, theirs, ratio, kind }),
    );
  }
  row(
    "largest Rust or TypeScript source file in `src/`, `ts/` [6]",
    `\`${sources.largest.path}\`: ${sources.largest.lines} lines`,
    `next: ${sources.files.slice(1, 3).map((file) => `\`${file.path}\` ${file.lines}`).join(", ")}; ${sources.files.length} files`,
    "",
    TARGETS.sources.goal,
    goal("sources", "largest source file", TARGETS.sources.met(sources.largest.lines), sources),
  );

  section(`More of \`limit()\` on \`MemoryStore\` (token bucket, awaited, ${KEY_COUNT.toLocaleString("en-US")} keys) [4]`);
  {
    const [ours, flexible] = [got("limit refused 1k ratebound"), got("limit refused 1k flexible")];
    row("refused", nsCell(ours), `\`RateLimiterMemory\`: ${nsCell(flexible)}`, `${speedup(flexible.median / ours.median)} (per round: ${pairedRange(flexible, ours)})`, "—", "");
  }
  for (const path of ["allowed", "refused"]) {
    const [ours, plain, plainSync] = [got(`limit ${path} 1k ratebound`), got(`limit ${path} 1k plain`), got(`limit ${path} 1k plain sync`)];
    row(`${path}: a plain JS limiter [7]`, "", `awaited: ${nsCell(plain)}; synchronous, not awaited: ${ns(plainSync.median)} ns`, speedup(plain.median / ours.median), "—", "");
  }

  section("A sharded limit: 10 shards against the same limit unsharded (`limit()`, one key)");
  for (const kind of ["token bucket", "fixed window"]) {
    for (const path of ["allowed", "refused"]) {
      const [sharded, unsharded] = [got(`limit ${kind} ${path} 10`), got(`limit ${kind} ${path} 1`)];
      row(`${kind}, ${path}`, `10 shards: ${nsCell(sharded)}`, `unsharded: ${nsCell(unsharded)}`, `${times(sharded.median / unsharded.median)} the cost`, "—", "");
    }
  }

  section("The WebAssembly path against the native core, ns per decision (one key) [3]");
  for (const { js, native: id, label } of NATIVE_CASES) {
    const wasm = got(`limit ${js}`);
    const slabOnly = got(`decideInSlab ${js}`);
    const floor = nativeNs(id);
    row(
      label,
      `\`limit()\`: ${nsCell(wasm)}${slabOnly ? `; \`decideInSlab\` alone: ${ns(slabOnly.median)} ns` : ""}`,
      floor === undefined ? `native core: not measured (${native.error ?? "missing"})` : `native core (criterion): ${ns(floor)} ns (mean ${ns(nativeMeanNs(id))})`,
      floor === undefined ? "—" : `${times(wasm.median / floor)} the native cost`,
      "—",
      "",
    );
  }

  section(`Where the time goes (same run as the rows above)`);
  const total = got("limit token bucket allowed 1");
  const slab = got("decideInSlab token bucket allowed 1");
  const [now, settled, trivial] = [got("Date.now()"), got("await Promise.resolve(result)"), got("trivial wasm call")];
  row("`limit()`, token bucket, allowed, one key", nsCell(total), "", "", "", "");
  if (slab) row("— `decideInSlab` alone (its one wasm call)", nsCell(slab), decision === undefined ? "" : `native decision: ${ns(decision)} ns`, decision === undefined ? "" : `${times(slab.median / decision)} the native cost`, "", "");
  row("— `Date.now()`", nsCell(now), "", "", "", "");
  row("— `await` of a settled Promise", nsCell(settled), "", "", "", "");
  if (slab) row("— the rest: options, `Map` lookups, decoding the answer", `${ns(total.median - slab.median - now.median - settled.median)} ns (by difference)`, "", "", "", "");
  if (trivial) row("a trivial wasm call (`MemorySlab.occupied()`)", nsCell(trivial), "", "", "", "");
  for (const kind of ["token bucket", "fixed window"]) {
    const [compiled, ours] = [got(`CompiledConfig.transition ${kind}`), got(`transition ${kind} ratebound`)];
    if (!compiled) continue;
    row(`\`calculateRateLimit\`, ${kind}: its wasm transition alone`, nsCell(compiled), `whole call: ${ns(ours.median)} ns`, `the rest (config cache, reading the answer): ${ns(ours.median - compiled.median)} ns`, "", "");
  }
  const steps = startup.steps;
  row(
    "Node startup, step by step (medians) [2]",
    ms(steps.total),
    `glue module ${steps.glue.toFixed(1)}, read .wasm ${steps.read.toFixed(1)}, compile ${steps.compile.toFixed(1)}, instantiate ${steps.instantiate.toFixed(1)}, API modules ${steps.api.toFixed(1)}, first decision ${steps.firstDecision.toFixed(1)} ms`,
    `imports alone: ratebound ${ms(startup.ours.importMs)}, the peer ${ms(startup.peer.importMs)}`,
    "",
    "",
  );

  section("Bytes (gzip -9, each file alone) [1]");
  const s = app.sections;
  row("the `.wasm`, by section", `code ${kib(s.code.raw)} raw, ${kib(s.code.gzip)} gzip (${s.functions} functions)`, `data ${kib(s.data.raw)} raw, ${kib(s.data.gzip)} gzip; the rest ${kib(s.other.raw)} raw`, "", "", "");
  row("the app's JS, by module (minified, before gzip)", app.inputs.slice(0, 4).map((input) => `\`${input.path}\` ${kib(input.bytes)}`).join(", "), "", "", "", "");
  row(`every JS file the package ships (${packageBundle.everyJs.length} files)`, `${kib(packageBundle.allJsGzip)} gzip`, packageBundle.entries.map(({ entry, jsGzip }) => `\`${entry}\` loads ${kib(jsGzip)}`).join(", "), "", "", "");

  section("Memory [8]");
  row(
    `heap per key in \`MemoryStore\` at ${memory.keys.toLocaleString("en-US")} keys`,
    `${memory.ratebound.perKey.toFixed(1)} B (JS heap ${(memory.ratebound.heapBytes / memory.keys).toFixed(1)} + wasm memory ${(memory.ratebound.wasmBytes / memory.keys).toFixed(1)})`,
    `a plain \`Map<string, number>\` of the same keys: ${memory.map.perKey.toFixed(1)} B`,
    "",
    "—",
    "",
  );

  const header = ["Measurement", "ratebound", "Compared with", "Ratio", "Goal", "Goal met?"];
  const table = [`| ${header.join(" | ")} |`, `|${header.map(() => "---").join("|")}|`, ...rows.map((cells) => `| ${cells.join(" | ")} |`)].join("\n");
  return { table, goals };
}
