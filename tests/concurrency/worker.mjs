// The Worker of the workerd concurrency suite (tests/sql/concurrency-d1.test.mjs): it runs a
// scenario of ./scenarios.mjs inside workerd on D1 (d1Store: each take, release and extend one
// batch that re-checks every state it read) and answers what the scenario saw.
import { RateLimiter } from "ratebound";
import { createTable, d1Store } from "ratebound/sqlite";
import { bareStore } from "../settle/scenarios.mjs";
import * as scenarios from "./scenarios.mjs";

export default {
  async fetch(request, env) {
    const body = await request.json();
    try {
      if (body.setup) return Response.json({ result: (await createTable(env.DB)) ?? null });
      const scenario = scenarios[body.scenario];
      if (typeof scenario !== "function") throw new Error(`no scenario ${body.scenario}`);
      const clock = { now: 1_700_000_000_000 };
      clock.read = () => clock.now;
      const options = { now: clock.read };
      const harness = {
        clock,
        connect: (limits) => new RateLimiter(d1Store(env.DB, { maxAttempts: 100 }), limits, options),
        bare: (limits) => new RateLimiter(bareStore(d1Store(env.DB)), limits, options),
      };
      const seen = await scenario(harness);
      return Response.json({ result: seen ?? null });
    } catch (error) {
      return Response.json({ error: { message: String(error?.message ?? error), stack: String(error?.stack ?? "") } });
    }
  },
};
