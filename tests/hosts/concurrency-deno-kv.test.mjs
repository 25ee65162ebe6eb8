// Concurrency limits with leases on the real Deno KV engine, in Node through @deno/kv: the
// scenarios of tests/concurrency/scenarios.mjs through kvStore (each take, release and extend one
// checked atomic commit), every limiter on a handle of its own on one database file. Concurrent
// takes on separate handles grant exactly max; through kvStore's bare read and write, more.
import { describe, test } from "node:test";
import { join } from "node:path";
import { openKv } from "@deno/kv";
import * as ratebound from "../../pkg/dist/node.js";
import * as kvLib from "../../pkg/dist/deno-kv.js";
import { SCENARIOS, overAdmitsWithoutTransaction } from "../concurrency/scenarios.mjs";
import { bareStore } from "../settle/scenarios.mjs";
import { scratch } from "./workerd.mjs";

describe("concurrency limits on Deno KV in Node, through @deno/kv (kvStore)", () => {
  // 64 slots fail here (the atomic commit takes at most 10 checks: docs/concurrency-status.md, what is left).
  const { sixtyFourSlots: _tooManyChecks, ...hostScenarios } = SCENARIOS;
  const scenarios = { ...hostScenarios, "the same concurrent calls through kvStore's bare read and write over-admit": overAdmitsWithoutTransaction };
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
