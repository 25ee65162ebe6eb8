// Dry runs on memory (a MemoryStore per scenario); tests/redis/dry-run.test.mjs runs the same
// scenarios on a real redis-server, and tests/http/dry-run.test.mjs through the HTTP guard.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { MemoryStore, RateLimiter } from "../../pkg/dist/node.js";
import { ALGORITHMS, dryRunScenarios } from "./dry-run-scenarios.mjs";

const NOW = 1_700_000_000_000;

describe("dry runs on a MemoryStore", () => dryRunScenarios(() => new MemoryStore()));

describe("dry runs in the metrics and with a refusal cache", () => {
  test("ratebound/otel counts a would-be refusal as allowed, with ratebound.dry_run", async () => {
    const { MeterProvider, MetricReader } = await import("@opentelemetry/sdk-metrics");
    const { otelMetrics } = await import("../../pkg/dist/otel.js");
    class Reader extends MetricReader {
      async onForceFlush() {}
      async onShutdown() {}
    }
    const reader = new Reader();
    const provider = new MeterProvider({ readers: [reader] });
    const limiter = new RateLimiter(new MemoryStore(), { api: { ...ALGORITHMS["token bucket"], dryRun: true } }, {
      now: () => NOW,
      onDecision: otelMetrics({ meter: provider.getMeter("test") }),
    });
    for (let call = 0; call < 3; call++) await limiter.limit("api");
    const { resourceMetrics } = await reader.collect();
    const decisions = resourceMetrics.scopeMetrics.flatMap(({ metrics }) => metrics).find(({ descriptor }) => descriptor.name === "ratebound.decisions");
    const counted = Object.fromEntries(decisions.dataPoints.map(({ attributes, value }) => [`${attributes["ratebound.outcome"]}/${attributes["ratebound.dry_run"]}`, value]));
    assert.deepEqual(counted, { "allowed/allowed": 2, "allowed/refused": 1 });
    await provider.shutdown();
  });

  test("a refusal the refusal cache repeats is a dry run's would-be refusal too", async () => {
    const events = [];
    const limiter = new RateLimiter(new MemoryStore(), { api: { ...ALGORITHMS["token bucket"], dryRun: true } }, {
      now: () => NOW,
      refusalCache: true,
      onDecision: (event) => events.push(event),
    });
    const answers = [];
    for (let call = 0; call < 4; call++) answers.push(await limiter.limit("api", { throws: true }));
    assert.deepEqual(answers.slice(2), [
      { ok: true, dryRun: { ok: false, retryAfter: 30_000 } },
      { ok: true, dryRun: { ok: false, retryAfter: 30_000 } },
    ]);
    assert.deepEqual(events.slice(2).map(({ outcome, dryRun, fromCache }) => [outcome, dryRun, fromCache]), [
      ["allowed", "refused", undefined],
      ["allowed", "refused", true],
    ]);
  });

  test("a grant of a dry-run limit: granted, it is a grant; a would-be refusal carries none and took nothing", async () => {
    const limiter = new RateLimiter(new MemoryStore(), { api: { ...ALGORITHMS["token bucket"], dryRun: true } }, { now: () => NOW });
    const granted = await limiter.limit("api", { grant: true, count: 2 });
    assert.deepEqual([granted.ok, granted.dryRun, typeof granted.grant?.settle], [true, { ok: true }, "function"]);
    const wouldRefuse = await limiter.limit("api", { grant: true, throws: true });
    assert.deepEqual(wouldRefuse, { ok: true, dryRun: { ok: false, retryAfter: 30_000 } });
    await granted.grant.settle(1);
    assert.equal((await limiter.getValue("api")).value, 1, "the grant settled; the would-be refusal took nothing");
  });
});

describe("dry runs when the store fails", () => {
  const down = Object.assign(new Error("the store is down"), { code: "STORE_DOWN" });
  const throwingStore = { read() { throw down; }, write() { throw down; } };
  const limits = { perUser: { ...ALGORITHMS["token bucket"] }, global: { ...ALGORITHMS["token bucket"], dryRun: true } };
  const batch = [{ name: "perUser", key: "ada" }, { name: "global" }];

  test('under "closed" a dry run still fails closed: a store failure is no refusal to excuse', async () => {
    const limiter = new RateLimiter(throwingStore, limits, { now: () => NOW });
    await assert.rejects(limiter.limit("global"), { code: "STORE_DOWN" });
    await assert.rejects(limiter.limitAll(batch, { figures: true }), { code: "STORE_DOWN" });
  });

  test('under "open" a mixed batch is admitted undecided, without figures', async () => {
    const limiter = new RateLimiter(throwingStore, limits, { now: () => NOW, onStoreError: "open" });
    const answer = await limiter.limitAll(batch, { figures: true });
    assert.deepEqual([answer.ok, answer.degraded, answer.figures, answer.dryRun], [true, "store-error", undefined, { ok: true }]);
  });
});
