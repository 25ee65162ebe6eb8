// Settle on a MemoryStore (tests/settle/scenarios.mjs), both algorithms, with a hand-moved clock:
// a MemoryStore decides synchronously, so each settle is atomic without a transaction; the same
// traffic through an asynchronous store over the same MemoryStore (reads that wait) refunds twice.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { MemoryStore, RateLimiter } from "../../pkg/dist/node.js";
import { KINDS, manualClock } from "./helpers.mjs";
import { SCENARIOS, bareStore, concurrentSettlesWithoutTransaction, grantFiguresAreLimitFigures } from "../settle/scenarios.mjs";

for (const kind of KINDS) {
  describe(`settle on a MemoryStore, ${kind}`, () => {
    const harness = () => {
      const store = new MemoryStore();
      const clock = manualClock(1_000);
      const options = { now: clock.read };
      return {
        kind,
        clock,
        connect: (limits) => new RateLimiter(store, limits, options),
        bare: (limits) => new RateLimiter(bareStore(store), limits, options),
      };
    };
    for (const [name, scenario] of Object.entries(SCENARIOS)) test(name, () => scenario(harness()));
    test("a grant answers the figures limit answers (issue 28 item 7)", () => grantFiguresAreLimitFigures(harness()));

    test("the same concurrent settles through a store whose reads wait, without a transaction, refund more than once (so the test above can fail)", async () => {
      const seen = await concurrentSettlesWithoutTransaction(harness());
      assert.ok(seen.won.length > 1);
    });
  });
}
