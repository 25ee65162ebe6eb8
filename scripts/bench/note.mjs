// The closing note of BENCHMARKS.md: which targets this run met, and for each one missed, what
// the run's own numbers say about where the time or the bytes go. Every figure and every
// comparison in it is computed from the run; nothing is asserted that the run did not measure.
import { kib, ms, ns, speedup, times } from "./format.mjs";
import { NATIVE_TRANSITIONS } from "./native.mjs";
import { TARGETS } from "./report.mjs";
import { KEY_COUNT } from "./timing.mjs";

const percent = (part, whole) => `${((100 * part) / whole).toFixed(0)}%`;

/** Which part (each `.wasm`'s code section, its data section, the JavaScript) weighs most, gzipped. */
function largestShare(app, judged) {
  const parts = [
    ...app.wasm.flatMap(({ packagePath, sections }) => [
      [`\`${packagePath}\`'s code section (\`twiggy top\` on an unstripped build names its functions)`, sections.code.gzip],
      [`\`${packagePath}\`'s data section`, sections.data.gzip],
    ]),
    ["the JavaScript", judged.jsGzip],
  ].sort((a, b) => b[1] - a[1]);
  return `${parts[0][0]}, ${percent(parts[0][1], judged.total)} (each part gzipped alone)`;
}

function bundleNote({ id, name, detail: { app, judged } }) {
  const budget = TARGETS[id].budgetBytes;
  const topJs = app.inputs[0];
  const wasmParts = app.wasm.map(({ packagePath, sections: { code, data, functions } }) => `\`${packagePath}\`: code section ${kib(code.gzip)} gzip alone (${kib(code.raw)} raw, ${functions} functions), data section ${kib(data.gzip)} gzip (${kib(data.raw)} raw)`);
  return (
    `**${name[0].toUpperCase()}${name.slice(1)}: ${kib(judged.total)} gzip against ${kib(budget)}** (${times(judged.total / budget)} the budget; ${judged.how}). ` +
    `Its WebAssembly is ${kib(judged.wasmGzip)} of it (${percent(judged.wasmGzip, judged.total)})${wasmParts.length ? `: ${wasmParts.join("; ")}` : ""}. ` +
    (judged.wasmGzip > budget
      ? `The WebAssembly alone is ${kib(judged.wasmGzip - budget)} over the whole budget before any JavaScript; to fit beside today's ${kib(judged.jsGzip)} of JS it would have to shrink to ${kib(Math.max(0, budget - judged.jsGzip))} gzip, ${times(judged.wasmGzip / Math.max(1, budget - judged.jsGzip))} smaller. `
      : `The JS is ${kib(judged.jsGzip)}: with today's WebAssembly it would have to shrink to ${kib(Math.max(0, budget - judged.wasmGzip))}. `) +
    (topJs ? `Of the minified JS, \`${topJs.path}\` is the largest module (${kib(topJs.bytes)}). ` : "") +
    `The largest share of the gzipped total is ${largestShare(app, judged)}.`
  );
}

function startupNote({ detail: startup }) {
  const budgetMs = TARGETS.startup.ratio * startup.peer.medianMs;
  const steps = startup.steps;
  if (!steps) {
    return (
      `**Node startup: ${ms(startup.ours.medianMs)} against ${ms(startup.peer.medianMs)} for \`rate-limiter-flexible\`, ${times(startup.ratio)} its time against ≤ ${TARGETS.startup.ratio}×**, so the budget in this run was ${ms(budgetMs)}. ` +
      `The import alone took ${ms(startup.ours.importMs)} (the peer's ${ms(startup.peer.importMs)}), the rest up to the first decision ${ms(startup.ours.medianMs - startup.ours.importMs)}; the steps inside the import were not measured (${startup.stepsSkipped}).`
    );
  }
  const named = { "the module's bytes (JS)": steps.wasmJs, "decoding them": steps.decode, "compiling the `.wasm`": steps.compile, instantiating: steps.instantiate, "the API modules": steps.api, "the first decision": steps.firstDecision };
  const ranked = Object.entries(named).sort((a, b) => b[1] - a[1]);
  const overAlone = ranked.filter(([, value]) => value > budgetMs).map(([name, value]) => `${name} (${ms(value)})`);
  const withoutCompile = steps.total - steps.compile;
  return (
    `**Node startup: ${ms(startup.ours.medianMs)} against ${ms(startup.peer.medianMs)} for \`rate-limiter-flexible\`, ${times(startup.ratio)} its time against ≤ ${TARGETS.startup.ratio}×**, so the budget in this run was ${ms(budgetMs)}. ` +
    `Step by step (medians of the step probe, total ${ms(steps.total)}): ${ranked.map(([name, value]) => `${name} ${ms(value)}`).join(", ")}. ` +
    (overAlone.length
      ? `On its own over the whole budget: ${overAlone.join(", ")}. `
      : steps.total > budgetMs
        ? `No single step is over the budget; together they are. `
        : `No step is over the budget and neither is their total: the miss lies in what the whole-import probe does beyond the steps. `) +
    `Every step but compiling takes ${ms(withoutCompile)} together, ${withoutCompile > budgetMs ? "itself over the budget: compiling is not the only step that has to shrink" : `within the budget, leaving ${ms(budgetMs - withoutCompile)} for compiling (today ${ms(steps.compile)})`}. ` +
    `The imports alone took ${ms(startup.ours.importMs)} for ratebound and ${ms(startup.peer.importMs)} for the peer.`
  );
}

function nativeNote({ detail: { decision, nativeTransition } }, run) {
  const plumbing = decision - nativeTransition;
  const refused = run.native.estimates?.["token_bucket-refused-unsharded"]?.median;
  return (
    `**Native decision on a slab: ${ns(decision)} ns against ≤ ${TARGETS.native.ns} ns.** ` +
    (nativeTransition === undefined
      ? `The transition was not measured, so the run cannot split the decision. `
      : `The transition inside it costs ${ns(nativeTransition)} ns natively, so ${ns(plumbing)} ns (${percent(plumbing, decision)}) is everything the decision does besides the arithmetic. ` +
        (nativeTransition > TARGETS.native.ns ? `The transition alone is over ${TARGETS.native.ns} ns. ` : `All of that would have to fit in ${ns(TARGETS.native.ns - nativeTransition)} ns. `)) +
    (refused === undefined ? "" : `The same limit refused, which writes nothing back, costs ${ns(refused)} ns natively${refused > TARGETS.native.ns ? `, itself over ${TARGETS.native.ns} ns` : ""}.`)
  );
}

function limitNote({ detail: { ours, flexible, speed } }, run) {
  const get = (id) => run.timing.get(id);
  const [slab, now, settled, total] = [get("probe rb_plan+rb_decide_one token bucket allowed 1"), get("Date.now()"), get("await Promise.resolve(result)"), get("limit token bucket allowed 1")];
  const floorLimit = get("limit allowed 1k floor");
  const budget = flexible.median / TARGETS.limit.speedup;
  const floor = now.median + settled.median;
  const decision = run.native.estimates?.["token_bucket-allowed-unsharded"]?.median;
  let text =
    `**\`limit()\` on ${KEY_COUNT.toLocaleString("en-US")} keys: ${ns(ours.median)} ns against \`RateLimiterMemory\`'s ${ns(flexible.median)} ns, ${speedup(speed)} against ≥ ${TARGETS.limit.speedup}× faster**, so the budget in this run was ${ns(budget)} ns per awaited call. ` +
    `The \`await\` of a settled Promise (${ns(settled.median)} ns) and \`Date.now()\` (${ns(now.median)} ns), which both sides pay, take ${ns(floor)} ns of it` +
    (budget < floor ? `, more than the budget: no Promise-returning \`limit()\` that reads the clock could reach ${TARGETS.limit.speedup}× here. ` : `, leaving ${ns(budget - floor)} ns for the decision and the TypeScript around it. `);
  if (slab) {
    const rest = total.median - slab.median - now.median - settled.median;
    text +=
      `On one hot key (${ns(total.median)} ns in all) its wasm calls \`rb_plan\` + \`rb_decide_one\`, timed alone, take ${ns(slab.median)} ns` +
      (decision === undefined ? "" : ` (${times(slab.median / decision)} the native decision's ${ns(decision)} ns)`) +
      ` and the TypeScript around it (options, \`Map\` lookups, decoding the answer) ${ns(rest)} ns by difference` +
      (budget > floor ? `; the wasm calls alone are ${slab.median > budget - floor ? "over" : "within"} the ${ns(budget - floor)} ns left. ` : ". ") +
      `Cycling through ${KEY_COUNT.toLocaleString("en-US")} keys costs ${ns(Math.abs(ours.median - total.median))} ns ${ours.median >= total.median ? "more" : "less"} per call than one hot key.`;
  } else {
    text += `The wasm calls could not be timed alone in this build (${run.skipped.join("; ")}).`;
  }
  if (floorLimit) {
    text +=
      ` The floor [11] (the core's decision with a \`Map\` from key to slot, \`Date.now()\` and a settled Promise around one call) takes ${ns(floorLimit.median)} ns on the same ${KEY_COUNT.toLocaleString("en-US")} keys, ${speedup(flexible.median / floorLimit.median)} than the peer` +
      `: ${floorLimit.median <= budget ? "the target is within the floor's reach" : "the floor itself misses the target here"}, and ratebound takes ${times(ours.median / floorLimit.median)} the floor's time.`;
  }
  return text;
}

function transitionNote(goals, run) {
  const trivial = run.timing.get("trivial wasm call");
  const paragraphs = goals.map(({ detail: { ours, theirs, ratio, kind } }) => {
    const budget = theirs.median * TARGETS[`transition ${kind}`].ratio;
    const compiled = run.timing.get(`probe rb_calculate_next ${kind}`);
    const floor = run.timing.get(`transition ${kind} floor`);
    const nativeTransition = run.native.estimates?.[NATIVE_TRANSITIONS[kind]]?.median;
    let text = `For the ${kind}, ${ns(ours.median)} ns against ${ns(theirs.median)} ns (${times(ratio)}; the budget was ${ns(budget)} ns)`;
    if (compiled) {
      text +=
        `, of which the one wasm call inside (\`rb_calculate_next\`, timed alone) takes ${ns(compiled.median)} ns` +
        (nativeTransition === undefined ? "" : ` (the same arithmetic natively: ${ns(nativeTransition)} ns)`) +
        ` and the rest of the call (the config check, the state checks, the answer object) ${ns(ours.median - compiled.median)} ns by difference; ` +
        (compiled.median > budget ? `the wasm call alone is over the budget` : `the wasm call fits in the budget, the rest of the call is what passes it`);
    }
    if (floor) {
      text += `; the floor [11] (the same arithmetic, one call of four numbers and the answer object, no checks) takes ${ns(floor.median)} ns, ${times(floor.median / theirs.median)} the reference's time${floor.median > budget ? ", itself over the budget" : ""}`;
    }
    return text;
  });
  return (
    `**\`calculateRateLimit\` against the reference's JavaScript.** ${paragraphs.join(". ")}.` +
    (trivial ? ` A trivial wasm call costs ${ns(trivial.median)} ns in this run; the reference, plain JavaScript, crosses no boundary.` : "")
  );
}

function crossingsNote(goals) {
  const parts = goals.map(({ detail: row }) => {
    const names = (byName) => Object.keys(byName).map((name) => `\`${name.replace(/^\.\/[^.]*\.js\./, "")}\``);
    return (
      `${row.host}: ${row.into.toFixed(2)} calls into wasm per call (${names(row.intoByName).join(", ")})` +
      (row.out > 0 ? ` and ${row.out.toFixed(2)} calls out of it (${names(row.outByName).length} distinct imports, most often ${names(row.outByName).slice(0, 3).join(", ")})` : ", none out") +
      `, over ${row.roundTrips.toFixed(2)} round trips to the server`
    );
  });
  return `**WebAssembly crossings per call against ${TARGETS.crossings.goal}.** ${parts.join(". ")}.`;
}

/**
 * @param {{ id: string, name: string, met: boolean | undefined, detail: object }[]} goals
 * @param {object} run Everything measured (see ./report.mjs).
 * @returns {string} Markdown: a summary line, then one paragraph per missed target.
 * @example
 * const note = closingNote(goals, run);
 */
export function closingNote(goals, run) {
  const met = goals.filter((goal) => goal.met === true);
  const missed = goals.filter((goal) => goal.met === false);
  const unmeasured = goals.filter((goal) => goal.met === undefined);
  const lines = [`This run met ${met.length} of ${goals.length} targets${met.length ? ` (${met.map((goal) => goal.name).join("; ")})` : ""}.`];
  if (unmeasured.length) lines.push(`- **Not measured:** ${unmeasured.map((goal) => `${goal.name}${goal.id === "native" && run.native.error ? ` (${run.native.error})` : ""}`).join("; ")}.`);
  if (missed.length) lines.push("", "What stands in the way of each target missed, from this run's numbers:", "");
  const byId = (id) => missed.find((goal) => goal.id === id);
  for (const id of ["bundle", "preview"]) if (byId(id)) lines.push(`- ${bundleNote(byId(id))}`);
  if (byId("startup")) lines.push(`- ${startupNote(byId("startup"))}`);
  const transitions = missed.filter((goal) => goal.id.startsWith("transition"));
  if (transitions.length) lines.push(`- ${transitionNote(transitions, run)}`);
  if (byId("limit")) lines.push(`- ${limitNote(byId("limit"), run)}`);
  if (byId("native")) lines.push(`- ${nativeNote(byId("native"), run)}`);
  const crossings = missed.filter((goal) => goal.id.startsWith("crossings"));
  if (crossings.length) lines.push(`- ${crossingsNote(crossings)}`);
  if (run.skipped.length) lines.push("", `Internal pieces not timed in this build: ${run.skipped.join("; ")}.`);
  return lines.join("\n");
}
