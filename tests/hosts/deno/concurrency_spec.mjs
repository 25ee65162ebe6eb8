// Concurrency limits with leases on Deno KV in real Deno (Deno.openKv --unstable-kv, a SQLite file,
// a handle per limiter): the scenarios of tests/concurrency/scenarios.mjs through kvStore and
// kvTransaction (tests/hosts/concurrency-deno-kv-harness.mjs), 64 slots included (Deno's own KV
// takes more than the 10 checks a commit @deno/kv allows). Run by
// tests/hosts/concurrency-deno-kv.test.mjs with `deno test --unstable-kv --config tests/hosts/deno/deno.json`.
import * as ratebound from "ratebound";
import * as kvLib from "ratebound/deno-kv";
import { SCENARIOS, overAdmitsWithoutTransaction } from "../../concurrency/scenarios.mjs";
import { kvHarnesses, leaseInTheAppsTransaction, scenariosOf } from "../concurrency-deno-kv-harness.mjs";

for (const flavour of ["kvStore", "kvTransaction"]) {
  for (const [name, scenario] of Object.entries(scenariosOf(SCENARIOS, overAdmitsWithoutTransaction, flavour, { manyChecks: true }))) {
    Deno.test({
      name: `${flavour}: ${name}`,
      sanitizeResources: true,
      sanitizeOps: false, // the bare store's reads wait on timers that the race leaves behind
      async fn() {
        const dir = await Deno.makeTempDir({ prefix: "ratebound-concurrency-kv-" });
        const harnesses = kvHarnesses({ ratebound, kvLib, open: () => Deno.openKv(`${dir}/kv.sqlite`) });
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

Deno.test("kvTransaction: a lease beside the app's writes commits or rolls back with them, and is released later through limiter.lease(data)", async () => {
  const dir = await Deno.makeTempDir({ prefix: "ratebound-concurrency-kv-" });
  try {
    await leaseInTheAppsTransaction({ ratebound, kvLib, open: () => Deno.openKv(`${dir}/kv.sqlite`) });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
