// The settle scenarios every host runs (not a test file itself): an LLM-style flow whose answers
// must equal a MemoryStore's, the serialised data settled by another limiter, concurrent settles
// of one grant (exactly one refunds), the same race without the host's transaction (it refunds
// more than once, so the test can fail), bad actuals that write nothing, and a sharded grant.
import { test } from "node:test";
import assert from "node:assert/strict";
import { RateLimiter, MemoryStore, MINUTE } from "../../pkg/dist/node.js";

export const NOW = 1_700_000_000_000;
export const LIMITS = {
  llm: { kind: "token bucket", rate: 40_000, period: MINUTE, maxReserved: 10_000 },
  window: { kind: "fixed window", rate: 10, period: MINUTE, start: 0 },
  sharded: { kind: "token bucket", rate: 40, period: MINUTE, shards: 4 },
};

/** A clock the scenario moves; every limiter of a run shares it. */
function clock() {
  let now = NOW;
  return { now: () => now, tick: (ms) => (now += ms) };
}

/** The flow: a plain charge, then grants settled below, above, cancelled and late; every answer, in order. */
async function flow(makeLimiter, key) {
  const time = clock();
  const limiter = makeLimiter(time.now);
  const seen = [];
  await limiter.limit("llm", { key, count: 30_000 });
  const below = await limiter.limit("llm", { key, count: 4_000, reserve: true, grant: true });
  time.tick(1_000);
  seen.push(await below.grant.settle(1_000));
  const above = await limiter.limit("llm", { key, count: 4_000, reserve: true, grant: true });
  time.tick(2_000);
  seen.push(await above.grant.settle(7_000));
  const cancelled = await limiter.limit("llm", { key, count: 2_000, reserve: true, grant: true });
  seen.push(await cancelled.grant.cancel());
  const late = await limiter.limit("window", { key, count: 6, grant: true });
  time.tick(MINUTE);
  seen.push(await makeLimiter(time.now).settle(JSON.parse(JSON.stringify(late.grant.data)), 0));
  seen.push(await limiter.getValue("llm", { key }));
  seen.push(await limiter.getValue("window", { key }));
  return seen;
}

/**
 * Registers the scenarios for one host. `host` gives:
 * - `store()`: a store for one limiter (a fresh connection or request where the host has them);
 * - `bare(store)`: the same store without its transaction, or `undefined` when the host's calls
 *   cannot interleave (a synchronous store);
 * - `racers`: how many concurrent settles to run (default 8).
 */
export function settleScenarios(host) {
  const limiterOn = (store, now = () => NOW) => new RateLimiter(store, LIMITS, { now });
  const racers = host.racers ?? 8;

  test("an LLM flow (settled below, above, cancelled, late from its data) answers exactly as on a MemoryStore", async () => {
    const memory = new MemoryStore();
    const expected = await flow((now) => new RateLimiter(memory, LIMITS, { now }), "team-1");
    const store = await host.store();
    const seen = await flow((now) => limiterOn(store, now), "team-1");
    assert.deepEqual(seen, expected);
    assert.equal(seen[0].refunded > 2_999 && seen[0].refunded <= 3_000, true, `refunded ${seen[0].refunded}`);
    assert.deepEqual([seen[1].charged, seen[2].refunded, seen[3].refunded], [3_000, 2_000, 0]);
  });

  test(`${racers} concurrent settles of one grant's data: exactly one refunds, the rest are GRANT_SETTLED`, async () => {
    const granting = limiterOn(await host.store());
    const { grant } = await granting.limit("llm", { key: "race", count: 4_000, grant: true });
    const data = JSON.parse(JSON.stringify(grant.data));
    const limiters = await Promise.all(Array.from({ length: racers }, async () => limiterOn(await host.store())));
    const outcomes = await Promise.allSettled(limiters.map((limiter) => limiter.settle(data, 0)));
    const refunds = outcomes.filter((outcome) => outcome.status === "fulfilled").map((outcome) => outcome.value.refunded);
    const codes = outcomes.filter((outcome) => outcome.status === "rejected").map((outcome) => outcome.reason.code);
    assert.deepEqual(refunds, [4_000]);
    assert.deepEqual(codes, Array(racers - 1).fill("GRANT_SETTLED"));
    assert.equal((await granting.getValue("llm", { key: "race" })).value, 40_000);
  });

  test("the same race through the bare read and write, without the host's transaction, refunds more than once (so the test above can fail)", { skip: host.bare === undefined && "a synchronous store cannot interleave" }, async () => {
    const granting = limiterOn(await host.store());
    await granting.limit("llm", { key: "naive", count: 36_000 });
    const { grant } = await granting.limit("llm", { key: "naive", count: 4_000, grant: true });
    const data = JSON.parse(JSON.stringify(grant.data));
    const limiters = await Promise.all(Array.from({ length: racers }, async () => limiterOn(host.bare(await host.store()))));
    const outcomes = await Promise.allSettled(limiters.map((limiter) => limiter.settle(data, 0)));
    const refunded = outcomes.filter((outcome) => outcome.status === "fulfilled").length;
    assert.ok(refunded > 1, `${refunded} of ${racers} settles refunded`);
  });

  test("a negative, non-finite or non-number actual is INVALID_REQUEST and writes nothing", async () => {
    const limiter = limiterOn(await host.store());
    const { grant } = await limiter.limit("llm", { key: "bad", count: 4_000, grant: true });
    const before = await limiter.getValue("llm", { key: "bad" });
    for (const actual of [-1, NaN, Infinity, "10"]) {
      const error = await grant.settle(actual).catch((caught) => caught);
      assert.equal(error.code, "INVALID_REQUEST", String(actual));
    }
    assert.deepEqual(await limiter.getValue("llm", { key: "bad" }), before);
    assert.equal((await grant.cancel()).refunded, 4_000, "the handle is still open");
  });

  test("a sharded grant settles on the shards it took from", async () => {
    const limiter = limiterOn(await host.store());
    // 4 shards of 10: take 8 from each, then ask 7, which needs two shards together.
    for (let i = 0; i < 4; i++) await limiter.limit("sharded", { key: "s", count: 8 });
    const values = async () => (await limiter.getValue("sharded", { key: "s", sampleShards: 4 })).value;
    const before = await values();
    const { ok, grant } = await limiter.limit("sharded", { key: "s", count: 3, grant: true });
    assert.equal(ok, true);
    assert.equal(await values(), before - 3);
    assert.ok(grant.data.shards.length >= 1);
    assert.equal((await grant.cancel()).refunded, 3);
    assert.equal(await values(), before);
  });
}
