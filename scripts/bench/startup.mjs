// Startup in Node (ESM): from the start of `import("ratebound")` to the first decision, timed
// inside fresh processes with performance.now() (process start-up itself is not counted), with
// the probe of scripts/bench-startup.mjs; beside it, the same for the peer a Node user would pick,
// `rate-limiter-flexible`: `import` → `new RateLimiterMemory` → first `consume()`. A third probe
// loads ratebound's modules step by step, unbundled, to show where the time goes. The probes take turns, so all three
// see the same load.
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { median } from "./interleave.mjs";

// As in scripts/bench-startup.mjs: import, make a limiter, decide once.
const PROBE = `const start = performance.now();
const { RateLimiter, MemoryStore } = await import("ratebound");
const imported = performance.now();
const limiter = new RateLimiter(new MemoryStore(), { probe: { kind: "token bucket", rate: 10, period: 1000 } });
const result = await limiter.limit("probe");
if (!result.ok) throw new Error("the first decision was refused");
const decided = performance.now();
console.log(JSON.stringify({ importMs: imported - start, totalMs: decided - start }));
`;

// The peer: import rate-limiter-flexible (its main entry, as a user's import resolves it), make
// a RateLimiterMemory, consume once.
const PEER_PROBE = `const start = performance.now();
const { RateLimiterMemory } = await import("rate-limiter-flexible");
const imported = performance.now();
const limiter = new RateLimiterMemory({ points: 10, duration: 1 });
const result = await limiter.consume("probe");
if (result.remainingPoints !== 9) throw new Error("the first consume was not granted");
const decided = performance.now();
console.log(JSON.stringify({ importMs: imported - start, totalMs: decided - start }));
`;

// The same work in steps, on the package's modules one by one (the bundled entry the main probe
// imports is these modules in one file): the module holding the .wasm as base64, decoding it,
// compiling it, instantiating it (with the engine module), the API modules (index.js and what it
// imports), the first decision.
const STEPS_PROBE = `const start = performance.now();
const dist = new URL("./node_modules/ratebound/dist/", import.meta.url);
const { base64 } = await import(new URL("wasm/ratebound.base64.js", dist));
const wasmJsAt = performance.now();
const bytes = Buffer.from(base64, "base64");
const decodedAt = performance.now();
const module = new WebAssembly.Module(bytes);
const compiledAt = performance.now();
const engine = await import(new URL("core/engine.js", dist));
engine.useModule(module);
const instantiatedAt = performance.now();
const { RateLimiter, MemoryStore } = await import(new URL("index.js", dist));
const apiAt = performance.now();
const limiter = new RateLimiter(new MemoryStore(), { probe: { kind: "token bucket", rate: 10, period: 1000 } });
const result = await limiter.limit("probe");
if (!result.ok) throw new Error("the first decision was refused");
const decidedAt = performance.now();
console.log(JSON.stringify({
  wasmJs: wasmJsAt - start, decode: decodedAt - wasmJsAt, compile: compiledAt - decodedAt, instantiate: instantiatedAt - compiledAt,
  api: apiAt - instantiatedAt, firstDecision: decidedAt - apiAt, total: decidedAt - start,
}));
`;

function runNode(args, cwd) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(stdout) : reject(new Error(`node ${args.join(" ")} exited with ${code}: ${stderr.trim()}`))));
  });
}

const summary = (samples) => ({ medianMs: median(samples), minMs: Math.min(...samples), maxMs: Math.max(...samples), samples });

/**
 * Fresh Node processes, taking turns: ratebound's probe, the peer's, the step-by-step one (the
 * first of the three rotating every run). The step-by-step probe loads the package's internal
 * modules by path: when a build has other modules (it fails once, before the runs), it is left
 * out and `stepsSkipped` says why.
 *
 * @param {string} work A project directory with ratebound and rate-limiter-flexible in node_modules.
 * @param {number} runs Fresh processes per probe.
 * @returns {Promise<object>} `ours` and `peer` (`medianMs`, `minMs`, `maxMs`, `samples`; `importMs`
 * the median time to the import alone), `ratio` (median of ours / median of the peer's),
 * `pairedRatios` (run by run), `steps` (medians of each step) or `stepsSkipped`.
 * @example
 * const startup = await measureStartup(work, 15); // startup.ratio <= 0.4 is the target
 */
export async function measureStartup(work, runs) {
  writeFileSync(join(work, "startup-probe.mjs"), PROBE);
  writeFileSync(join(work, "startup-peer.mjs"), PEER_PROBE);
  writeFileSync(join(work, "startup-steps.mjs"), STEPS_PROBE);
  let stepsSkipped;
  try {
    await runNode(["startup-steps.mjs"], work);
  } catch (error) {
    stepsSkipped = `the step-by-step probe cannot load this build's modules (${error.message.split("\n").slice(-1)[0].slice(0, 160)})`;
  }
  const probes = ["startup-probe.mjs", "startup-peer.mjs", ...(stepsSkipped ? [] : ["startup-steps.mjs"])];
  const results = new Map(probes.map((probe) => [probe, []]));
  for (let run = 0; run < runs; run++) {
    for (let turn = 0; turn < probes.length; turn++) {
      const probe = probes[(run + turn) % probes.length];
      results.get(probe).push(JSON.parse(await runNode([probe], work)));
    }
  }
  const [ours, peer, steps] = probes.map((probe) => results.get(probe));
  const stepMedians = steps && Object.fromEntries(Object.keys(steps[0]).map((step) => [step, median(steps.map((sample) => sample[step]))]));
  const oursTotals = ours.map((sample) => sample.totalMs);
  const peerTotals = peer.map((sample) => sample.totalMs);
  return {
    runs,
    ours: { ...summary(oursTotals), importMs: median(ours.map((sample) => sample.importMs)) },
    peer: { ...summary(peerTotals), importMs: median(peer.map((sample) => sample.importMs)) },
    ratio: median(oursTotals) / median(peerTotals),
    pairedRatios: oursTotals.map((total, run) => total / peerTotals[run]),
    steps: stepMedians,
    stepsSkipped,
  };
}
