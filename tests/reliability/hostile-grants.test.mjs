// Hostile and careless settles (issue 16): a grant's data comes back from
// wherever the app kept it (a queue, a database, a request body), so settle
// treats it as input. Every bad form is an error with a code that writes
// nothing; inherited fields are never read; a forged grant cannot take a
// limit above its capacity; and a thousand bad settles leave the instance
// working.
import { describe, it, after } from "node:test";
import assert from "node:assert/strict";
import { RateLimiter, MINUTE } from "../../pkg/dist/node.js";
import { CheckedStore, Tally } from "./helpers.mjs";

const tally = new Tally("hostile callers: grants");
after(() => tally.flush());

const LIMITS = { llm: { kind: "token bucket", rate: 10_000, period: MINUTE, maxReserved: 1_000 } };
const T = 1_700_000_000_000;

async function fresh() {
  const store = new CheckedStore();
  let now = T;
  const limiter = new RateLimiter(store, LIMITS, { now: () => now, random: () => 0.5 });
  const { grant } = await limiter.limit("llm", { key: "team", count: 4_000, grant: true });
  return { store, limiter, grant, tick: (ms) => (now += ms) };
}

const snapshot = (store) => JSON.stringify([...store.states]);

/** Expects `call` to reject with `code`, and the store to be as it was. */
async function refusesCleanly(store, call, code, what) {
  const before = snapshot(store);
  await assert.rejects(call, (error) => {
    assert.equal(error.code, code, `${what}: ${error.message}`);
    return true;
  }, what);
  assert.equal(snapshot(store), before, `${what} wrote something`);
  tally.add("hostile options");
}

describe("a grant's data is input: bad forms are coded errors that write nothing", () => {
  it("refuses actuals that are negative, not finite or not numbers", async () => {
    const { store, limiter, grant } = await fresh();
    for (const actual of [-1, -0.5, NaN, Infinity, -Infinity, "100", null, undefined, 10n, {}]) {
      await refusesCleanly(store, () => limiter.settle(grant.data, actual), "INVALID_REQUEST", `actual ${String(actual)}`);
      await refusesCleanly(store, () => grant.settle(actual), "INVALID_REQUEST", `handle, actual ${String(actual)}`);
    }
    // The handle is still open after those failures: a good settle works once.
    assert.equal((await grant.settle(1_000)).refunded, 3_000);
    await refusesCleanly(store, () => grant.cancel(), "GRANT_SETTLED", "a second settle of the handle");
    await refusesCleanly(store, () => limiter.settle(grant.data, 0), "GRANT_SETTLED", "a second settle of the data");
  });

  it("refuses data of the wrong shape, naming the field", async () => {
    const { store, limiter, grant } = await fresh();
    const data = grant.data;
    const part = data.shards[0];
    const cases = [
      [null, "INVALID_ARGUMENT"],
      ["grant", "INVALID_ARGUMENT"],
      [[data], "INVALID_ARGUMENT"],
      [{ ...data, extra: 1 }, "INVALID_ARGUMENT"],
      [{ ...data, name: 7 }, "INVALID_REQUEST"],
      [{ ...data, name: "nope" }, "UNKNOWN_LIMIT"],
      [{ ...data, id: "" }, "INVALID_REQUEST"],
      [{ ...data, id: "x".repeat(65) }, "INVALID_REQUEST"],
      [{ ...data, count: -1 }, "INVALID_REQUEST"],
      [{ ...data, count: "4000" }, "INVALID_ARGUMENT"],
      [{ ...data, chargedAt: NaN }, "INVALID_REQUEST"],
      [{ ...data, shards: [] }, "INVALID_REQUEST"],
      [{ ...data, shards: "0" }, "INVALID_ARGUMENT"],
      [{ ...data, shards: [part, part, part] }, "INVALID_REQUEST"],
      [{ ...data, shards: [part, part] }, "INVALID_REQUEST"],
      [{ ...data, shards: [{ ...part, shard: 1 }] }, "INVALID_REQUEST"],
      [{ ...data, shards: [{ ...part, shard: -1 }] }, "INVALID_ARGUMENT"],
      [{ ...data, shards: [{ ...part, shard: 0.5 }] }, "INVALID_ARGUMENT"],
      [{ ...data, shards: [{ ...part, value: Infinity }] }, "INVALID_REQUEST"],
      [{ ...data, shards: [{ ...part, refunded: -1 }] }, "INVALID_REQUEST"],
      [{ ...data, shards: [{ ...part, extra: 1 }] }, "INVALID_ARGUMENT"],
    ];
    for (const [bad, code] of cases) {
      await refusesCleanly(store, () => limiter.settle(bad, 0), code, JSON.stringify(bad) ?? String(bad));
    }
  });

  it("never reads an inherited field of the data, nor a polluted prototype", async () => {
    const { store, limiter, grant } = await fresh();
    const { count, ...rest } = grant.data;
    const inherits = Object.assign(Object.create({ count }), rest);
    await refusesCleanly(store, () => limiter.settle(inherits, 0), "INVALID_ARGUMENT", "count only inherited");
    const { refunded, ...partRest } = grant.data.shards[0];
    Object.prototype.refunded = 0;
    try {
      const shards = [Object.assign({}, partRest)];
      await refusesCleanly(store, () => limiter.settle({ ...grant.data, shards }, 0), "INVALID_ARGUMENT", "refunded only on Object.prototype");
    } finally {
      delete Object.prototype.refunded;
    }
    assert.equal(refunded, 0);
  });

  it("a forged grant cannot raise a limit above its capacity, nor give back more than it names", async () => {
    const { store, limiter, grant, tick } = await fresh();
    tick(1);
    // Claims 1e6 tokens taken from a deep debt: the refund is still capped by the limit's capacity.
    const forged = { ...grant.data, id: "forged", count: 1e6, shards: [{ ...grant.data.shards[0], count: 1e6, value: -1e6 }] };
    const settled = await limiter.settle(forged, 0);
    const { value } = await limiter.getValue("llm", { key: "team" });
    assert.ok(value <= LIMITS.llm.rate, `value ${value} above capacity`);
    assert.ok(settled.refunded <= 4_000 + 1, `refunded ${settled.refunded}`);
    tally.add("hostile options");
  });

  it("a thousand hostile settles (throwing getters, Proxies, revoked Proxies) leave the instance working", async () => {
    const { store, limiter, grant } = await fresh();
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    const hostile = [
      Object.defineProperty({ ...grant.data }, "count", { get() { throw new Error("boom"); }, enumerable: true }),
      new Proxy(grant.data, { ownKeys() { throw new Error("no keys"); } }),
      proxy,
      { ...grant.data, shards: new Proxy([], { get() { throw new Error("no length"); } }) },
    ];
    for (let round = 0; round < 250; round++) {
      for (const bad of hostile) {
        await assert.rejects(() => limiter.settle(bad, 0));
        tally.add("trap attempts");
      }
    }
    assert.equal((await grant.settle(4_000)).refunded, 0);
    assert.equal((await limiter.limit("llm", { key: "other" })).ok, true);
    assert.ok(store.states.size > 0);
  });
});
