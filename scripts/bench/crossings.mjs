// The WebAssembly crossings of one call on a host that persists over the network (Redis,
// PostgreSQL): runs ./crossings-child.mjs in a fresh process with ./wasm-probe.mjs counting.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const here = (file) => fileURLToPath(new URL(file, import.meta.url));

/**
 * @param {string} project A project with the package installed (./package.mjs).
 * @returns {Promise<object>} Per host (`redis`, `postgres`): `{ client, rows: { unsharded, "10 shards" } }`
 * with per call `into` (calls into wasm), `out` (calls out of wasm), each by name, and
 * `roundTrips`; or `{ error }`. The whole result is `{ error }` when the child failed.
 * @example
 * const crossings = await measureCrossings(project);
 * crossings.redis.rows.unsharded.into; // 2
 */
export function measureCrossings(project) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--import", here("./wasm-probe.mjs"), here("./crossings-child.mjs"), project], {
      env: { ...process.env, RATEBOUND_WASM_PROBE: "count" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk) => (stderr += chunk));
    child.on("error", (error) => resolve({ error: error.message }));
    child.on("close", (code) => {
      if (code !== 0) return resolve({ error: `the counting process exited with ${code}: ${stderr.trim().split("\n").slice(-3).join(" ")}` });
      try {
        resolve(JSON.parse(stdout.trim().split("\n").at(-1)));
      } catch {
        resolve({ error: `the counting process printed no result: ${stdout.slice(0, 200)}` });
      }
    });
  });
}
