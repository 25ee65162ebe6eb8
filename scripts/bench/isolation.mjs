// The harness check: the same contenders timed alone in fresh processes (and once as the harness
// timed them before issue 23, sharing one source text), by ./isolation-child.mjs, to set beside
// their figures in the main run.
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const CHILD = fileURLToPath(new URL("./isolation-child.mjs", import.meta.url));

/**
 * @param {string} project A project with the package installed (./package.mjs).
 * @param {{ rounds: number, batchMs: number, warmupMs: number }} options As the main run's.
 * @returns {{ referenceAlone?: object, awaitAlone?: object, sharedText?: object, errors: string[] }}
 * Each figure `{ median, min, max }` in ns; `sharedText` holds the four transition contenders.
 * @example
 * const check = measureIsolation(project, { rounds: 31, batchMs: 15, warmupMs: 200 });
 * check.referenceAlone.median; // ns per reference calculateRateLimit, alone
 */
export function measureIsolation(project, { rounds, batchMs, warmupMs }) {
  const errors = [];
  const run = (mode) => {
    try {
      const output = execFileSync(process.execPath, [CHILD, project, mode, String(rounds), String(batchMs), String(warmupMs)], {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "pipe"],
      });
      return JSON.parse(output.trim().split("\n").at(-1)).timing;
    } catch (error) {
      errors.push(`${mode}: ${(error.stderr?.toString() || error.message).trim().split("\n").slice(-1)[0]}`);
      return undefined;
    }
  };
  const referenceAlone = run("reference-alone")?.["transition token bucket reference"];
  const awaitAlone = run("await-alone")?.["await Promise.resolve(result)"];
  const sharedText = run("shared-text");
  return { referenceAlone, awaitAlone, sharedText, errors };
}
