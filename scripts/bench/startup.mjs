// Startup in Node (ESM): from the start of `import("ratebound")` to the first decision, timed
// inside fresh processes with performance.now() (process start-up itself is not counted), with
// the probe of scripts/bench-startup.mjs. A second probe loads the same package step by step to
// show where the time goes.
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

// The same work in steps: the glue module, reading and compiling the .wasm, instantiating it,
// the API modules (index.js and what it imports), the first decision.
const STEPS_PROBE = `const start = performance.now();
const dist = new URL("./node_modules/ratebound/dist/", import.meta.url);
const glue = await import(new URL("wasm/ratebound.js", dist));
const glueAt = performance.now();
const { readFileSync } = await import("node:fs");
const bytes = readFileSync(new URL("wasm/ratebound_bg.wasm", dist));
const readAt = performance.now();
const module = new WebAssembly.Module(bytes);
const compiledAt = performance.now();
glue.initSync({ module });
const instantiatedAt = performance.now();
const { RateLimiter, MemoryStore } = await import(new URL("index.js", dist));
const apiAt = performance.now();
const limiter = new RateLimiter(new MemoryStore(), { probe: { kind: "token bucket", rate: 10, period: 1000 } });
const result = await limiter.limit("probe");
if (!result.ok) throw new Error("the first decision was refused");
const decidedAt = performance.now();
console.log(JSON.stringify({
  glue: glueAt - start, read: readAt - glueAt, compile: compiledAt - readAt, instantiate: instantiatedAt - compiledAt,
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

/**
 * @param {string} work A project directory with the package in node_modules/ratebound.
 * @param {number} runs Fresh processes per probe.
 */
export async function measureStartup(work, runs) {
  writeFileSync(join(work, "startup-probe.mjs"), PROBE);
  writeFileSync(join(work, "startup-steps.mjs"), STEPS_PROBE);
  const totals = [];
  const steps = [];
  // Alternate the two probes, so that both see the same load.
  for (let run = 0; run < runs; run++) {
    totals.push(JSON.parse(await runNode(["startup-probe.mjs"], work)).totalMs);
    steps.push(JSON.parse(await runNode(["startup-steps.mjs"], work)));
  }
  const stepMedians = Object.fromEntries(Object.keys(steps[0]).map((step) => [step, median(steps.map((sample) => sample[step]))]));
  return { runs, medianMs: median(totals), minMs: Math.min(...totals), maxMs: Math.max(...totals), steps: stepMedians };
}
