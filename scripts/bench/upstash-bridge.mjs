// The Upstash REST bridge of the test suites (tests/redis/servers.mjs) in a process of its own,
// so the HTTP server that stands in for Upstash does not share the benchmark's event loop with the
// clients it serves. Each HTTP request waits `delayMs` before it is handled (an edge function's
// round trip), and @upstash/ratelimit's `#!lua flags=…` first line is stripped (Debian's
// redis-server 7.0 refuses it), with its EVALSHA digest mapped to the stripped script's.
//
// In the benchmark: `const bridge = await startBridgeProcess(redisUrl, 5)`; `bridge.url` for the
// client; `await bridge.counts()` for `{ requests, forwarded: { COMMAND: n }, bytesIn, bytesOut,
// last, cpuMicros }` so far (body bytes each way, the last exchange's bodies, and the bridge
// process's CPU time, user + system, in µs); `await bridge.stop()`.
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";

/**
 * Starts the bridge in a child process.
 * @param {string} redisUrl The redis-server it forwards to.
 * @param {number} delayMs Added before each HTTP request is handled.
 * @returns {Promise<{ url: string, delayMs: number, counts: () => Promise<{ requests: number, forwarded: Record<string, number>, bytesIn: number, bytesOut: number, last: { request: string, response: string }, cpuMicros: number }>, stop: () => Promise<void> }>}
 * @example
 * const bridge = await startBridgeProcess(redis.url, 0);
 * const client = new Redis({ url: bridge.url, token: "unused" });
 */
export function startBridgeProcess(redisUrl, delayMs) {
  const child = fork(fileURLToPath(import.meta.url), [redisUrl, String(delayMs)], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const waiting = [];
  child.on("message", (message) => waiting.shift()?.(message));
  const next = () => new Promise((resolve) => waiting.push(resolve));
  return new Promise((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`the Upstash bridge exited with ${code}`)));
    next().then(({ url }) =>
      resolve({
        url,
        delayMs,
        counts: () => {
          const answer = next();
          child.send("counts");
          return answer;
        },
        stop: () =>
          new Promise((stopped) => {
            child.removeAllListeners("exit");
            child.once("exit", () => stopped());
            child.send("stop");
          }),
      }),
    );
  });
}

// The child: start the bridge, report its URL, answer for counts, stop when told.
if (process.argv[1] === fileURLToPath(import.meta.url) && process.send) {
  const { startUpstashBridge } = await import("../../tests/redis/servers.mjs");
  const [redisUrl, delayMs] = process.argv.slice(2);
  const bridge = await startUpstashBridge(redisUrl, { delayMs: Number(delayMs), stripShebang: true });
  process.on("message", async (message) => {
    if (message === "counts") {
      const { user, system } = process.cpuUsage();
      const { requests, bytesIn, bytesOut, last } = bridge;
      process.send({ requests, forwarded: Object.fromEntries(bridge.forwarded), bytesIn, bytesOut, last, cpuMicros: user + system });
    }
    if (message === "stop") {
      await bridge.stop();
      process.exit(0);
    }
  });
  process.send({ url: bridge.url });
}
