// Settle on Deno KV in real Deno (Deno.openKv --unstable-kv, a SQLite file, a handle per limiter):
// the scenarios of tests/settle/scenarios.mjs through kvStore and kvTransaction. Run by
// tests/hosts/settle-deno-kv.test.mjs with `deno test --unstable-kv --config tests/hosts/deno/deno.json`.
import * as ratebound from "ratebound";
import * as kvLib from "ratebound/deno-kv";
import { SCENARIOS, concurrentSettlesWithoutTransaction } from "../../settle/scenarios.mjs";
import { kvHarnesses } from "../settle-deno-kv-harness.mjs";

for (const kind of ["token bucket", "fixed window"]) {
  for (const flavour of ["kvStore", "kvTransaction"]) {
    const scenarios = { ...SCENARIOS, "the same concurrent settles through kvStore's bare read and write refund more than once": concurrentSettlesWithoutTransaction };
    for (const [name, scenario] of Object.entries(scenarios)) {
      Deno.test({
        name: `${flavour}, ${kind}: ${name}`,
        sanitizeResources: true,
        sanitizeOps: false, // the bare store's reads wait on timers that the race leaves behind
        async fn() {
          const dir = await Deno.makeTempDir({ prefix: "ratebound-settle-kv-" });
          const harnesses = kvHarnesses({ ratebound, kvLib, kind, open: () => Deno.openKv(`${dir}/kv.sqlite`) });
          try {
            await scenario(harnesses[flavour]);
          } finally {
            harnesses[flavour].close();
            await Deno.remove(dir, { recursive: true });
          }
        },
      });
    }
  }
}
