// The guard's scenarios in Deno (behind Deno.serve) or Bun (behind Bun.serve), on loopback with
// an ephemeral port; prints one JSON line `{ runtime, passed }`, or exits 1 naming the failure.
// tests/http/http.test.mjs runs it in both.
import * as lib from "ratebound";
import * as http from "ratebound/http";
import { runScenarios } from "./scenarios.mjs";

/** A real server for one scenario, stopped by `close()`. */
async function openDeno(handler) {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, handler);
  const base = `http://127.0.0.1:${server.addr.port}`;
  return { request: (path, init) => fetch(base + path, init), close: () => server.shutdown() };
}

async function openBun(handler) {
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: handler });
  const base = `http://127.0.0.1:${server.port}`;
  return { request: (path, init) => fetch(base + path, init), close: async () => server.stop(true) };
}

const runtime = globalThis.Deno ? "deno" : globalThis.Bun ? "bun" : "unknown";
try {
  const passed = await runScenarios({ lib, http, open: runtime === "deno" ? openDeno : openBun });
  console.log(JSON.stringify({ runtime, passed }));
} catch (error) {
  console.error(`${runtime}: ${error?.stack ?? error}`);
  (globalThis.Deno?.exit ?? process.exit)(1);
}
