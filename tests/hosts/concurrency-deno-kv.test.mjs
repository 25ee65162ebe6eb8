// Concurrency limits with leases on the real Deno KV engine, in Node through @deno/kv: the
// scenarios of tests/concurrency/scenarios.mjs through kvStore (each take, release and extend one
// checked atomic commit), every limiter on a handle of its own on one database file. Concurrent
// takes on separate handles grant exactly max; through kvStore's bare read and write, more.
import { describe, test } from "node:test";
import { join } from "node:path";
import { openKv } from "@deno/kv";
import * as ratebound from "../../pkg/dist/node.js";
import * as kvLib from "../../pkg/dist/deno-kv.js";
import { SCENARIOS, checkAndReset, exactOnSixtyFourSlots, overAdmitsWithoutTransaction } from "../concurrency/scenarios.mjs";
import { bareStore } from "../settle/scenarios.mjs";
import { scratch } from "./workerd.mjs";

describe("concurrency limits on Deno KV in Node, through @deno/kv (kvStore)", () => {
  const scenarios = {
    ...SCENARIOS,
    checkAndReset,
    "the same concurrent calls through kvStore's bare read and write over-admit": overAdmitsWithoutTransaction,
    // The atomic commit takes at most 10 checks: a take checks the slots it writes, or the guard (ts/stores/deno-kv-slots.ts).
    "on 64 slots, 70 takes of one slot and two of 12 at once hold exactly 64, each slot once": (h) => exactOnSixtyFourSlots(h, 70, [12, 12]),
    "on 64 slots, the same takes through kvStore's bare read and write over-admit": (h) => overAdmitsWithoutTransaction(h, 70, 64),
  };
  for (const [name, scenario] of Object.entries(scenarios)) {
    test(name, async () => {
      const work = scratch("concurrency-kv");
      const handles = [];
      const handle = async () => {
        const kv = await openKv(join(work.dir, "kv.sqlite"));
        handles.push(kv);
        return kv;
      };
      const clock = { now: 1_700_000_000_000, read: () => clock.now };
      const options = { now: clock.read };
      const retry = { maxAttempts: 200, maxDelayMs: 20 };
      const harness = {
        clock,
        connect: async (limits) => new ratebound.RateLimiter(kvLib.kvStore(await handle(), retry), limits, options),
        bare: async (limits) => new ratebound.RateLimiter(bareStore(kvLib.kvStore(await handle())), limits, options),
      };
      try {
        await scenario(harness);
      } finally {
        handles.splice(0).forEach((kv) => kv.close());
        work.remove();
      }
    });
  }
});
