// One client process of the cross-process Deno KV test (not a test file itself): in Deno or in
// Node, it opens the database at argv[2] and fires argv[3] transactions at once, each taking one
// token of the `daily` limit for key "ada". It waits for "go" on stdin so that every process
// starts together, and prints what happened as one JSON line.
import { LIMITS, NOW } from "./deno-kv-scenarios.mjs";

const inDeno = typeof globalThis.Deno !== "undefined";
const [path, requests] = inDeno ? Deno.args : process.argv.slice(2);
// Non-literal specifiers: each runtime loads only its own.
const specifiers = inDeno
  ? { core: "ratebound", adapter: "ratebound/deno-kv" }
  : { core: new URL("../../pkg/dist/node.js", import.meta.url).href, adapter: new URL("../../pkg/dist/deno-kv.js", import.meta.url).href, kv: "@deno/kv" };
const { RateLimiter } = await import(specifiers.core);
const { kvTransaction } = await import(specifiers.adapter);
const kv = inDeno ? await Deno.openKv(path) : await (await import(specifiers.kv)).openKv(path);

async function waitForGo() {
  if (inDeno) {
    for await (const chunk of Deno.stdin.readable) if (new TextDecoder().decode(chunk).includes("go")) return;
  } else {
    for await (const chunk of process.stdin) if (String(chunk).includes("go")) return;
  }
}

console.log("ready");
await waitForGo();
let conflicts = 0;
const outcomes = await Promise.all(
  Array.from({ length: Number(requests) }, () =>
    kvTransaction(kv, (tx) => new RateLimiter(tx, LIMITS, { now: () => NOW }).limit("daily", { key: "ada" }), {
      maxAttempts: 100,
      onConflict: () => conflicts++,
    }).catch((error) => ({ error: String(error) })),
  ),
);
kv.close();
console.log(
  JSON.stringify({
    runtime: inDeno ? "deno" : "node",
    admitted: outcomes.filter((outcome) => outcome.ok === true).length,
    refused: outcomes.filter((outcome) => outcome.ok === false).length,
    failed: outcomes.filter((outcome) => outcome.error).map((outcome) => outcome.error),
    conflicts,
  }),
);
