// Dry runs (issue 32, item 4), the same scenarios on every store they run on: a dry-run limit (its
// config's dryRun, an inline config's, or the call's) is decided by the core as when enforcing and
// never refused; a granted call is charged as enforcing charges it (the state equals an enforced
// twin's), a would-be refusal charges nothing; `throws` never throws for it; onDecision sees what
// enforcing would have answered. limitAll: the enforced limits decide, the dry-run ones are reported.
import { test } from "node:test";
import assert from "node:assert/strict";
import { RateLimiter } from "../../pkg/dist/node.js";

const NOW = 1_700_000_000_000;
export const ALGORITHMS = {
  "token bucket": { kind: "token bucket", rate: 2, period: 60_000 },
  "fixed window": { kind: "fixed window", rate: 2, period: 60_000, start: 0 },
};
// Both algorithms, at NOW: two calls pass, the third would wait 30 s (bucket) or until the window ends.
const WAIT = { "token bucket": 30_000, "fixed window": 60_000 - (NOW % 60_000) };

/** Every tag the scenarios ask `makeStore` for (a host whose namespaces must be made first makes these). */
export const STORE_TAGS = [...Object.keys(ALGORITHMS).flatMap((algorithm) => [`dry-${algorithm}`, `enforced-${algorithm}`]), "figures", "inline", "mixed"];

/**
 * Registers the scenarios.
 *
 * @param makeStore `(tag) => store`, a fresh store (or a fresh prefix of one) per tag.
 */
export function dryRunScenarios(makeStore) {
  for (const [algorithm, config] of Object.entries(ALGORITHMS)) {
    test(`${algorithm}: a dry-run limit is never refused, charges a grant as enforcing does and a would-be refusal nothing`, async () => {
      const events = [];
      const store = makeStore(`dry-${algorithm}`);
      const dry = new RateLimiter(store, { api: { ...config, dryRun: true } }, { now: () => NOW, onDecision: (event) => events.push(event) });
      const enforced = new RateLimiter(makeStore(`enforced-${algorithm}`), { api: config }, { now: () => NOW });
      const answers = [];
      for (let call = 0; call < 4; call++) {
        answers.push(await dry.limit("api", { key: "ada", throws: true }));
        await enforced.limit("api", { key: "ada" });
      }
      assert.deepEqual(answers, [
        { ok: true, dryRun: { ok: true } },
        { ok: true, dryRun: { ok: true } },
        { ok: true, dryRun: { ok: false, retryAfter: WAIT[algorithm] } },
        { ok: true, dryRun: { ok: false, retryAfter: WAIT[algorithm] } },
      ]);
      // The state measured is the real one: what enforcing left, the would-be refusals charged nothing.
      const [dryValue, enforcedValue] = [await dry.getValue("api", { key: "ada" }), await enforced.getValue("api", { key: "ada" })];
      assert.equal(dryValue.value, 0);
      assert.deepEqual([dryValue.value, dryValue.ts], [enforcedValue.value, enforcedValue.ts]);
      assert.deepEqual(
        events.map(({ outcome, dryRun, retryAfter }) => ({ outcome, dryRun, retryAfter })),
        [
          { outcome: "allowed", dryRun: "allowed", retryAfter: undefined },
          { outcome: "allowed", dryRun: "allowed", retryAfter: undefined },
          { outcome: "allowed", dryRun: "refused", retryAfter: WAIT[algorithm] },
          { outcome: "allowed", dryRun: "refused", retryAfter: WAIT[algorithm] },
        ],
      );
    });
  }

  test("the figures of a would-be refusal are the refusal's", async () => {
    const store = makeStore("figures");
    const dry = new RateLimiter(store, { api: { ...ALGORITHMS["token bucket"], dryRun: true } }, { now: () => NOW });
    await dry.limitAll([{ name: "api" }, { name: "api", count: 1 }]);
    const answer = await dry.limit("api", { figures: true });
    assert.deepEqual(answer, { ok: true, dryRun: { ok: false, retryAfter: 30_000 }, figures: { limit: 2, remaining: 0, reset: 60, window: 60, retryAfter: 30, sampled: 1, effectiveWindow: 30 } });
  });

  test("an inline config's dryRun, and the call's on an enforced limit, are dry runs too; check writes nothing", async () => {
    const store = makeStore("inline");
    const limiter = new RateLimiter(store, { api: ALGORITHMS["token bucket"] }, { now: () => NOW });
    const inline = { ...ALGORITHMS["token bucket"], rate: 1, dryRun: true };
    assert.deepEqual(await limiter.limit("oneOff", { config: inline }), { ok: true, dryRun: { ok: true } });
    assert.deepEqual(await limiter.limit("oneOff", { config: inline, throws: true }), { ok: true, dryRun: { ok: false, retryAfter: 60_000 } });
    await limiter.limit("api", { count: 2 });
    assert.deepEqual(await limiter.check("api", { dryRun: true, throws: true }), { ok: true, dryRun: { ok: false, retryAfter: 30_000 } });
    assert.deepEqual(await limiter.limit("api", { dryRun: true }), { ok: true, dryRun: { ok: false, retryAfter: 30_000 } });
    // Enforced again without the option: refused, and nothing was charged by the dry runs.
    assert.deepEqual(await limiter.limit("api"), { ok: false, retryAfter: 30_000 });
    assert.equal((await limiter.getValue("api")).value, 0);
    await assert.rejects(limiter.limit("api", { dryRun: "yes" }), { code: "INVALID_REQUEST" });
    await assert.rejects(limiter.limit("x", { config: { ...inline, dryRun: 1 } }), { code: "INVALID_CONFIG", field: "dryRun" });
    assert.throws(() => new RateLimiter(store, { api: { ...inline, dryRun: "no" } }), { code: "INVALID_CONFIG", field: "dryRun" });
  });

  test("limitAll with enforced and dry-run limits: the enforced ones decide, the dry-run ones are reported and charged only with them", async () => {
    const events = [];
    const limiter = new RateLimiter(
      makeStore("mixed"),
      { perUser: { kind: "token bucket", rate: 3, period: 60_000 }, global: { kind: "token bucket", rate: 1, period: 60_000, dryRun: true } },
      { now: () => NOW, onDecision: (event) => events.push(event) },
    );
    const batch = [{ name: "perUser", key: "ada" }, { name: "global" }];
    // Both grant: both charged.
    assert.deepEqual(await limiter.limitAll(batch, { figures: true, throws: true }), {
      ok: true,
      dryRun: { ok: true },
      figures: [
        { limit: 3, remaining: 2, reset: 20, window: 60, sampled: 1, effectiveWindow: 20 },
        { limit: 1, remaining: 0, reset: 60, window: 60, sampled: 1, effectiveWindow: 60 },
      ],
    });
    // The dry-run limit would refuse: the enforced one grants and is charged, the dry-run one is not.
    assert.deepEqual(await limiter.limitAll(batch, { throws: true }), { ok: true, dryRun: { ok: false, retryAfter: 60_000 } });
    assert.deepEqual([(await limiter.getValue("perUser", { key: "ada" })).value, (await limiter.getValue("global")).value], [1, 0]);
    await limiter.limitAll(batch);
    // The enforced one refuses: the answer is its refusal (throws), the dry-run one is only checked.
    await assert.rejects(limiter.limitAll(batch, { throws: true }), { name: "RateLimitError" });
    assert.deepEqual(await limiter.limitAll(batch), { ok: false, retryAfter: 20_000, dryRun: { ok: false, retryAfter: 60_000 } });
    assert.equal((await limiter.getValue("global")).value, 0);
    assert.deepEqual(
      events.slice(-2).map(({ name, outcome, dryRun }) => ({ name, outcome, dryRun })),
      [
        { name: "perUser", outcome: "refused", dryRun: undefined },
        { name: "global", outcome: "allowed", dryRun: "refused" },
      ],
    );
    // A batch of dry runs only (the option on the batch): one decision, never refused.
    assert.deepEqual(await limiter.limitAll(batch, { dryRun: true, throws: true }), { ok: true, dryRun: { ok: false, retryAfter: 60_000 } });
    assert.equal((await limiter.getValue("perUser", { key: "ada" })).value, 0);
  });
}
