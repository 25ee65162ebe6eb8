// The native floor: `cargo bench --bench core` (criterion, benches/core.rs), read back from
// criterion's estimates. The cases are named as benches/core.rs names them; each pairs with a
// JavaScript contender of ./timing.mjs.
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** The decision cases: both algorithms, allowed and refused, unsharded and 10 shards. */
export const NATIVE_CASES = [];
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

/** The pure transition, per algorithm. */
export const NATIVE_TRANSITIONS = { "token bucket": "calculate_rate_limit-token_bucket", "fixed window": "calculate_rate_limit-fixed_window" };

/** The case the target names: one decision on a slab, token bucket, allowed, unsharded. */
export const NATIVE_TARGET = "token_bucket-allowed-unsharded";

/**
 * Runs `cargo bench --bench core` with criterion's output in `criterionHome` (progress to
 * stderr) and reads each benchmark's median and mean ns per iteration. The median of
 * criterion's samples is the figure compared, as the JavaScript side reports medians of rounds.
 *
 * @param {string} root The repository root.
 * @param {string} criterionHome Where criterion writes (a temporary directory).
 * @param {(line: string) => void} log
 * @returns {Promise<{ estimates?: Record<string, { median: number, mean: number }>, error?: string }>}
 * @example
 * const native = await runNative(root, join(work, "criterion"), console.error);
 * native.estimates?.["token_bucket-allowed-unsharded"].median; // 41.2
 */
export function runNative(root, criterionHome, log) {
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
      if (estimates[NATIVE_TARGET] === undefined) return resolve({ estimates, error: `benches/core.rs has no benchmark "${NATIVE_TARGET}"` });
      resolve({ estimates });
    });
  });
}
