// The harness check of `npm run bench`: times, in a fresh process, what the main run times
// beside 30-odd other contenders, so the two figures can be compared. Run by ./isolation.mjs:
//
//   node scripts/bench/isolation-child.mjs <project> <mode> <rounds> <batchMs> <warmupMs>
//
// Modes:
//   reference-alone  the reference `calculateRateLimit` (token bucket, existing state), alone.
//   await-alone      an `await` of a settled Promise, alone.
//   shared-text      the four `calculateRateLimit` contenders (ratebound's and the reference's,
//                    token bucket and fixed window) as the harness made them before issue 23: one
//                    loop source text for all four, one package instance, the one reference
//                    function; what sharing type feedback costs.
// Prints one JSON line: `{ mode, timing: { id: { median, min, max } } }`.
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { fresh, interleave, sharedText } from "./interleave.mjs";
import { LOOPS, ownCopy, referenceProbe } from "./timing.mjs";

const [project, mode, rounds, batchMs, warmupMs] = process.argv.slice(2);
const { load } = await import(pathToFileURL(join(project, "load.mjs")).href);
const reference = await load("@convex-dev/rate-limiter");
const base = { state: { value: 5, ts: 1_750_000_000_000 }, now: 1_750_000_001_000 };
const CONFIGS = {
  "token bucket": { kind: "token bucket", rate: 10, period: 60_000 },
  "fixed window": { kind: "fixed window", rate: 10, period: 60_000, start: 0 },
};
const okAll = (granted, n) => {
  if (granted !== n) throw new Error(`expected every await to see ok, got ${granted} of ${n}`);
};

const contenders = [];
if (mode === "reference-alone") {
  const id = "transition token bucket reference";
  const body = fresh(LOOPS.transition, id);
  const context = { ...base, config: CONFIGS["token bucket"], calculate: ownCopy(reference.calculateRateLimit, id, referenceProbe) };
  contenders.push({ id, run: (n) => body(context, n) });
} else if (mode === "await-alone") {
  const id = "await Promise.resolve(result)";
  const body = fresh(LOOPS.awaitSettled, id);
  const context = { settled: Object.freeze({ ok: true }) };
  contenders.push({ id, run: (n) => body(context, n), verify: okAll });
} else if (mode === "shared-text") {
  const { calculateRateLimit } = await load("ratebound");
  for (const kind of Object.keys(CONFIGS)) {
    for (const [side, calculate] of [
      ["ratebound", calculateRateLimit],
      ["reference", reference.calculateRateLimit],
    ]) {
      const body = sharedText(LOOPS.transition);
      const context = { ...base, config: CONFIGS[kind], calculate };
      contenders.push({ id: `transition ${kind} ${side}`, run: (n) => body(context, n) });
    }
  }
} else {
  throw new Error(`unknown mode ${mode}`);
}

const timing = await interleave(contenders, { rounds: Number(rounds), batchMs: Number(batchMs), warmupMs: Number(warmupMs) });
const figures = Object.fromEntries([...timing].map(([id, { median, min, max }]) => [id, { median, min, max }]));
console.log(JSON.stringify({ mode, timing: figures }));
