// The table of `npm run bench`: first the targets of issue 23, each a ratio against its peer in
// the same run (or an absolute size or count) with its goal and whether it is met; then the rows
// that explain them, without goals. Returns the goals too, for the closing note (./note.mjs).
import { kib, ms, ns, nsCell, pairedRange, ratioRange, speedup, times, verdict } from "./format.mjs";
import { NATIVE_CASES, NATIVE_TARGET, NATIVE_TRANSITIONS } from "./native.mjs";
import { KEY_COUNT } from "./timing.mjs";

/** The targets of issue 23, as the table states them and as they are judged. */
export const TARGETS = {
  bundle: { goal: "≤ 12 KiB", met: (bytes) => bytes <= 12 * 1024, budgetBytes: 12 * 1024 },
  preview: { goal: "≤ 6 KiB", met: (bytes) => bytes <= 6 * 1024, budgetBytes: 6 * 1024 },
  startup: { goal: "≤ 0.4× its time", met: (startup) => startup.ratio <= 0.4, ratio: 0.4 },
  "transition token bucket": { goal: "≤ 2× its time", met: (ratio) => ratio <= 2, ratio: 2 },
  "transition fixed window": { goal: "≤ 1.2× its time", met: (ratio) => ratio <= 1.2, ratio: 1.2 },
  limit: { goal: "≥ 2× faster", met: (speed) => speed >= 2, speedup: 2 },
  native: { goal: "≤ 10 ns", met: (nanoseconds) => nanoseconds <= 10, ns: 10 },
  crossings: { goal: "≤ 2 calls into wasm (one to plan, one to decide), none out", met: (row) => row.into <= 2 && row.out === 0, into: 2 },
};

/**
 * The bytes a browser app row is judged on: what the page downloaded to decide when it ran in
 * Chromium, else everything the build made (every chunk and every `.wasm`).
 * @param {object} app measureBrowserApp's result with `browserRun`.
 * @returns {{ jsGzip: number, wasmGzip: number, total: number, how: string }}
 * @example
 * judgedBytes(app).total <= 12 * 1024;
 */
export function judgedBytes(app) {
  if (app.browserRun?.ran) return { ...app.browserRun.downloaded, how: "downloaded by the page" };
  return { jsGzip: app.static.jsGzip, wasmGzip: app.static.wasmGzip, total: app.static.total, how: "made by the build (the page was not run)" };
}

/** "`a.wasm` 3.1 KiB, `b.js` 2.0 KiB": files with their gzipped sizes. */
const fileList = (files) => files.map((file) => `\`${file.url}\` ${kib(file.gzip)}`).join(", ");

/** The cells of a browser app row. */
function appCells(app) {
  const judged = judgedBytes(app);
  const run = app.browserRun;
  const built = `the build made ${app.static.files} file(s), ${kib(app.static.total)} gzip (${fileList(app.files)})`;
  const inline = app.inlineWasm.length ? `; WebAssembly inlined in ${app.inlineWasm.map((url) => `\`${url}\``).join(", ")}` : "";
  return {
    ours: `${kib(judged.total)} gzip: JS ${kib(judged.jsGzip)} + \`.wasm\` ${kib(judged.wasmGzip)}`,
    compared: `\`${app.resolvedEntry}\` resolved; ${run?.ran ? `ran in Chromium, decided, downloaded ${fileList(run.fetched)}` : `not run in a browser (${run?.reason ?? "not tried"}): counted what the build made`}; ${built}${inline}`,
    judged,
  };
}

/** "2 (rb_plan 1, rb_decide 1)": calls per decision with the names that made them. */
function callsCell(total, byName) {
  const names = Object.entries(byName ?? {});
  const shown = names.slice(0, 4).map(([name, calls]) => `\`${name.replace(/^\.\/[^.]*\.js\./, "")}\` ${calls.toFixed(2).replace(/\.?0+$/, "")}`);
  return `${total.toFixed(2).replace(/\.?0+$/, "")}${names.length ? ` (${shown.join(", ")}${names.length > 4 ? `, ${names.length - 4} more` : ""})` : ""}`;
}

/**
 * @param {object} run Everything measured: `timing`, `skipped`, `native`, `apps` (`main`,
 * `preview`), `packageBundle`, `memory` (with `keys`), `startup`, `sources`, `crossings`, `isolation`.
 * @returns {{ table: string, goals: { id: string, name: string, met: boolean | undefined, detail: object }[] }}
 * @example
 * const { table, goals } = report(run);
 */
export function report(run) {
  const { timing, native, apps, packageBundle, memory, startup, sources, crossings, isolation } = run;
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

  section("The targets of issue 23, each against its peer in this run");
  for (const [id, name, app] of [
    ["bundle", "browser app importing `ratebound`", apps.main],
    ["preview", "browser app importing only `ratebound/preview`", apps.preview],
  ]) {
    const cells = appCells(app);
    const budget = TARGETS[id].budgetBytes;
    row(
      `${name}: ${app.label}; esbuild-bundled, minified, plus its WebAssembly, gzip [1]`,
      cells.ours,
      cells.compared,
      `${times(cells.judged.total / budget)} the budget`,
      TARGETS[id].goal,
      goal(id, name, TARGETS[id].met(cells.judged.total), { app, judged: cells.judged }),
    );
  }
  row(
    "Node: `import()` → first decision, fresh process [2]",
    `${ms(startup.ours.medianMs)} (${startup.ours.minMs.toFixed(1)}–${startup.ours.maxMs.toFixed(1)})`,
    `\`rate-limiter-flexible\`: \`import()\` → \`RateLimiterMemory\` → first \`consume()\`: ${ms(startup.peer.medianMs)} (${startup.peer.minMs.toFixed(1)}–${startup.peer.maxMs.toFixed(1)})`,
    `${times(startup.ratio)} its time (per run: ${ratioRange(startup.pairedRatios)})`,
    TARGETS.startup.goal,
    goal("startup", "startup against rate-limiter-flexible", TARGETS.startup.met(startup), startup),
  );
  for (const kind of ["token bucket", "fixed window"]) {
    const [ours, theirs, floor] = [got(`transition ${kind} ratebound`), got(`transition ${kind} reference`), got(`transition ${kind} floor`)];
    const ratio = ours.median / theirs.median;
    const target = TARGETS[`transition ${kind}`];
    row(
      `\`calculateRateLimit\`, ${kind}, existing state [5]`,
      nsCell(ours),
      `\`@convex-dev/rate-limiter\`: ${nsCell(theirs)}; the floor [11]: ${floor ? nsCell(floor) : "not timed"}`,
      `${times(ratio)} its time (per round: ${ratioRange(ours.samples.map((value, round) => value / theirs.samples[round]))})${floor ? `; the floor: ${times(floor.median / theirs.median)} its time` : ""}`,
      target.goal,
      goal(`transition ${kind}`, `calculateRateLimit, ${kind}`, target.met(ratio), { ours, theirs, ratio, kind }),
    );
  }
  {
    const ours = got(`limit allowed 1k ratebound`);
    const flexible = got(`limit allowed 1k flexible`);
    const floor = got(`limit allowed 1k floor`);
    const speed = flexible.median / ours.median;
    row(
      `awaited \`limit()\` on \`MemoryStore\`, ${KEY_COUNT.toLocaleString("en-US")} keys, allowed [4]`,
      nsCell(ours),
      `\`RateLimiterMemory\` over the same keys: ${nsCell(flexible)}; the floor [11]: ${floor ? nsCell(floor) : "not timed"}`,
      `${speedup(speed)} (per round: ${pairedRange(flexible, ours)})${floor ? `; the floor: ${speedup(flexible.median / floor.median)}` : ""}`,
      TARGETS.limit.goal,
      goal("limit", "limit() against RateLimiterMemory", TARGETS.limit.met(speed), { ours, flexible, speed }),
    );
  }
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
  for (const [host, label] of [["redis", "Redis"], ["postgres", "PostgreSQL"]]) {
    const measured = crossings.error ? crossings : crossings[host];
    const unsharded = measured?.rows?.unsharded;
    const sharded = measured?.rows?.["10 shards"];
    row(
      `WebAssembly crossings per ${label} \`limit()\` (${measured?.client ?? "—"}; token bucket, granted, one key) [10]`,
      unsharded ? `into wasm ${callsCell(unsharded.into, unsharded.intoByName)}; out of wasm ${callsCell(unsharded.out, unsharded.outByName)}` : `not measured (${measured?.error ?? "missing"})`,
      unsharded ? `${unsharded.roundTrips.toFixed(2)} round trips to the server; 10 shards: into ${sharded.into.toFixed(2)}, out ${sharded.out.toFixed(2)}, ${sharded.roundTrips.toFixed(2)} round trips` : "",
      "",
      TARGETS.crossings.goal,
      goal(`crossings ${host}`, `wasm crossings per ${label} call`, unsharded ? TARGETS.crossings.met(unsharded) : undefined, { host: label, ...(unsharded ?? {}) }),
    );
  }

  section("The harness check: does each contender run on feedback of its own? [9]");
  {
    const inRun = got("transition token bucket reference");
    const alone = isolation.referenceAlone;
    const shared = isolation.sharedText?.["transition token bucket reference"];
    row(
      "reference `calculateRateLimit`, token bucket, existing state",
      `beside the ${timing.size - 1} other contenders of this run: ${nsCell(inRun)}`,
      `alone in a fresh process: ${alone ? nsCell(alone) : "not measured"}${shared ? `; with the loop's source text shared by 4 contenders and one copy of each library (the harness before issue 23): ${nsCell(shared)}` : ""}`,
      alone ? `${times(inRun.median / alone.median)} its time alone` : "",
      "",
      "",
    );
    const awaitRun = got("await Promise.resolve(result)");
    const awaitAlone = isolation.awaitAlone;
    row(
      "`await` of a settled Promise",
      `in this run: ${nsCell(awaitRun)}`,
      `alone in a fresh process: ${awaitAlone ? nsCell(awaitAlone) : "not measured"}`,
      awaitAlone ? `${times(awaitRun.median / awaitAlone.median)} its time alone` : "",
      "",
      "",
    );
    if (isolation.errors.length) row("not measured", isolation.errors.join("; "), "", "", "", "");
  }

  section(`More of \`limit()\` on \`MemoryStore\` (token bucket, awaited, ${KEY_COUNT.toLocaleString("en-US")} keys) [4]`);
  {
    const [ours, flexible, floor] = [got("limit refused 1k ratebound"), got("limit refused 1k flexible"), got("limit refused 1k floor")];
    row(
      "refused",
      nsCell(ours),
      `\`RateLimiterMemory\`: ${nsCell(flexible)}${floor ? `; the floor [11]: ${nsCell(floor)}` : ""}`,
      `${speedup(flexible.median / ours.median)} (per round: ${pairedRange(flexible, ours)})${floor ? `; the floor: ${speedup(flexible.median / floor.median)}` : ""}`,
      "—",
      "",
    );
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
    const [planned, held] = [got(`probe rb_plan+rb_decide_one ${js}`), got(`probe rb_decide_state ${js}`)];
    const floor = nativeNs(id);
    row(
      label,
      `\`limit()\`: ${nsCell(wasm)}${planned ? `; \`rb_plan\` + \`rb_decide_one\` alone: ${ns(planned.median)} ns` : ""}${held ? `; \`rb_decide_state\` alone: ${ns(held.median)} ns` : ""}`,
      floor === undefined ? `native core: not measured (${native.error ?? "missing"})` : `native core (criterion): ${ns(floor)} ns (mean ${ns(nativeMeanNs(id))})`,
      floor === undefined ? "—" : `${times(wasm.median / floor)} the native cost`,
      "—",
      "",
    );
  }

  section(`Where the time goes (same run as the rows above)`);
  const total = got("limit token bucket allowed 1");
  const planned = got("probe rb_plan+rb_decide_one token bucket allowed 1");
  const held = got("probe rb_decide_state token bucket allowed 1");
  const [now, settled, trivial] = [got("Date.now()"), got("await Promise.resolve(result)"), got("trivial wasm call")];
  row("`limit()`, token bucket, allowed, one key", nsCell(total), "", "", "", "");
  if (planned) row("— `rb_plan` + `rb_decide_one` alone (its two wasm calls, the state kept in JS) [3]", nsCell(planned), decision === undefined ? "" : `native decision: ${ns(decision)} ns`, decision === undefined ? "" : `${times(planned.median / decision)} the native cost`, "", "");
  if (held) row("— `rb_decide_state` alone (one call on a state the caller holds) [3]", nsCell(held), "", "", "", "");
  row("— `Date.now()`", nsCell(now), "", "", "", "");
  row("— `await` of a settled Promise", nsCell(settled), "", "", "", "");
  if (planned) row("— the rest: options, the store, `Map` lookups, decoding the answer", `${ns(total.median - planned.median - now.median - settled.median)} ns (by difference)`, "", "", "", "");
  else row("— the rest: the decision and the TypeScript around it", `${ns(total.median - now.median - settled.median)} ns (by difference)`, "", "", "", "");
  const floorLimit = got("limit allowed 1k floor");
  if (floorLimit) row(`the floor's awaited \`limit()\`, ${KEY_COUNT.toLocaleString("en-US")} keys [11]`, nsCell(floorLimit), `ratebound's: ${ns(got("limit allowed 1k ratebound").median)} ns`, `ratebound: ${times(got("limit allowed 1k ratebound").median / floorLimit.median)} the floor's time`, "", "");
  if (trivial) row("a trivial wasm call (`rb_io()`)", nsCell(trivial), "", "", "", "");
  for (const kind of ["token bucket", "fixed window"]) {
    const ours = got(`transition ${kind} ratebound`);
    const [next, twelve, floor] = [got(`probe rb_calculate_next ${kind}`), got(`probe rb_calculate ${kind}`), got(`transition ${kind} floor`)];
    if (next) row(`\`calculateRateLimit\`, ${kind}: its wasm call alone (\`rb_calculate_next\`)`, nsCell(next), `whole call: ${ns(ours.median)} ns${twelve ? `; \`rb_calculate\` (twelve numbers) alone: ${ns(twelve.median)} ns` : ""}`, `the rest (config check, state checks, the answer object): ${ns(ours.median - next.median)} ns`, "", "");
    if (floor) row(`\`calculateRateLimit\`, ${kind}: the floor [11]`, nsCell(floor), `ratebound: ${ns(ours.median)} ns`, `ratebound: ${times(ours.median / floor.median)} the floor's time`, "", "");
  }
  const steps = startup.steps;
  row(
    "Node startup, step by step (medians) [2]",
    steps ? ms(steps.total) : "not measured",
    steps
      ? `the module's bytes (JS) ${steps.wasmJs.toFixed(1)}, decode ${steps.decode.toFixed(1)}, compile ${steps.compile.toFixed(1)}, instantiate ${steps.instantiate.toFixed(1)}, API modules ${steps.api.toFixed(1)}, first decision ${steps.firstDecision.toFixed(1)} ms`
      : startup.stepsSkipped,
    `imports alone: ratebound ${ms(startup.ours.importMs)}, the peer ${ms(startup.peer.importMs)}`,
    "",
    "",
  );
  if (run.skipped.length) row("internal pieces not timed in this build", run.skipped.join("; "), "", "", "", "");

  section("Bytes (gzip -9, each file alone) [1]");
  for (const app of [apps.main, apps.preview]) {
    for (const { packagePath, sections: s } of app.wasm) {
      row(`the ${app.name} app's \`${packagePath}\`, by section`, `code ${kib(s.code.raw)} raw, ${kib(s.code.gzip)} gzip (${s.functions} functions)`, `data ${kib(s.data.raw)} raw, ${kib(s.data.gzip)} gzip; the rest ${kib(s.other.raw)} raw`, "", "", "");
    }
    row(`the ${app.name} app's JS, by module (minified, before gzip)`, app.inputs.slice(0, 4).map((input) => `\`${input.path}\` ${kib(input.bytes)}`).join(", "), "", "", "", "");
  }
  row(`every \`.wasm\` the package ships (${packageBundle.wasm.length})`, packageBundle.wasm.map((file) => `\`${file.file}\` ${kib(file.gzip)} gzip (${kib(file.raw)} raw)`).join(", "), "", "", "", "");
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

  section("Sources [6]");
  row(
    "largest Rust or TypeScript source file in `src/`, `ts/`",
    `\`${sources.largest.path}\`: ${sources.largest.lines} lines`,
    `next: ${sources.files.slice(1, 3).map((file) => `\`${file.path}\` ${file.lines}`).join(", ")}; ${sources.files.length} files`,
    "",
    "—",
    "",
  );

  const header = ["Measurement", "ratebound", "Compared with", "Ratio", "Goal", "Goal met?"];
  const table = [`| ${header.join(" | ")} |`, `|${header.map(() => "---").join("|")}|`, ...rows.map((cells) => `| ${cells.join(" | ")} |`)].join("\n");
  return { table, goals };
}
