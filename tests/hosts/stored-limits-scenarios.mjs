// Limits stored in the host (setLimit, getLimit, deleteLimit), as every host must honour them:
// two limiter instances over one store, where what one stores the other obeys at its next call.
// `storedLimitScenarios(test, open)` registers the scenarios with the runner's `test`; `open()`
// answers `{ store, other?, close? }`: a store over an empty place, and another store over the
// same place (another connection or client: the second instance's), or the same one.
import assert from "node:assert/strict";

const { RateLimiter } = await import("../../pkg/dist/node.js");

export const NOW = 1_700_000_000_000;
/** Where a key's stored limit lives (src/stored_limit.rs): past every grant's record. */
export const KEY_LIMIT_SHARD = 2048 + 2 ** 30;
/** Where a name's stored limit lives. */
export const NAME_LIMIT_SHARD = KEY_LIMIT_SHARD + 2;

export const LIMITS = {
  api: { kind: "token bucket", rate: 10, period: 60_000 },
  window: { kind: "fixed window", rate: 5, period: 60_000, start: 0 },
  sharded: { kind: "token bucket", rate: 40, period: 60_000, shards: 4 },
  quota: { kind: "fixed window", rate: 100, period: "day" },
};

/** Two limiters (over `store` and `other`) on one clock, reading stored limits. */
export function pair(store, other = store, clock = { now: NOW }) {
  const make = (over) => new RateLimiter(over, LIMITS, { now: () => clock.now, storedLimits: true });
  return { a: make(store), b: make(other), clock };
}

/** `count` calls of one token each, answering whether each was granted. */
async function grants(limiter, name, key, count) {
  const answers = [];
  for (let call = 0; call < count; call++) answers.push((await limiter.limit(name, key === undefined ? {} : { key })).ok);
  return answers;
}

const repeat = (ok, times) => Array.from({ length: times }, () => ok);

export function storedLimitScenarios(test, open) {
  const run = (title, body) =>
    test(title, async () => {
      const { store, other, close } = await open();
      try {
        await body(store, other ?? store);
      } finally {
        await close?.();
      }
    });

  run("a key's limit set by one instance is obeyed by another at its next call, and other keys keep the code's", async (store, other) => {
    const { a, b } = pair(store, other);
    assert.deepEqual(await grants(b, "api", "acme", 1), [true]);
    await a.setLimit("api", { kind: "token bucket", rate: 3, period: 60_000 }, { key: "acme" });
    // acme's bucket holds 9 of 10: getValue reports that state with the stored limit, which caps it at 3.
    const { value, config } = await b.getValue("api", { key: "acme" });
    assert.deepEqual([value, config.rate, config.capacity], [9, 3, 3]);
    assert.deepEqual(await grants(b, "api", "acme", 4), [true, true, true, false]);
    assert.deepEqual(await grants(b, "api", "bob", 11), [...repeat(true, 10), false]);
  });

  run("the key's limit wins over the name's, and the name's over the code's; getLimit says which", async (store, other) => {
    const { a, b } = pair(store, other);
    assert.deepEqual(await b.getLimit("api", { key: "k1" }), { config: { kind: "token bucket", rate: 10, period: 60_000, capacity: 10, shards: 1 }, source: "code" });
    await a.setLimit("api", { kind: "token bucket", rate: 2, period: 60_000 });
    await a.setLimit("api", { kind: "token bucket", rate: 4, period: 60_000, capacity: 5, maxReserved: 3 }, { key: "k1" });
    assert.deepEqual(await b.getLimit("api", { key: "k1" }), { config: { kind: "token bucket", rate: 4, period: 60_000, capacity: 5, maxReserved: 3, shards: 1 }, source: "key" });
    assert.deepEqual(await b.getLimit("api", { key: "k2" }), { config: { kind: "token bucket", rate: 2, period: 60_000, capacity: 2, shards: 1 }, source: "name" });
    assert.deepEqual(await b.getLimit("api"), { config: { kind: "token bucket", rate: 2, period: 60_000, capacity: 2, shards: 1 }, source: "name" });
    assert.deepEqual(await grants(b, "api", "k1", 6), [...repeat(true, 5), false]);
    assert.deepEqual(await grants(b, "api", "k2", 3), [true, true, false]);
    assert.deepEqual(await grants(b, "api", undefined, 3), [true, true, false]);
    // Deleting the key's limit: the name's from the next call; deleting the name's: the code's.
    await a.deleteLimit("api", { key: "k1" });
    assert.equal((await b.getLimit("api", { key: "k1" })).source, "name");
    await a.deleteLimit("api");
    assert.equal((await b.getLimit("api", { key: "k1" })).source, "code");
    // k3 never called: a full bucket of the code's 10.
    assert.deepEqual(await grants(b, "api", "k3", 11), [...repeat(true, 10), false]);
  });

  run("changing a limit keeps the state: a grown capacity is not a refill", async (store, other) => {
    const { a, b, clock } = pair(store, other);
    assert.deepEqual(await grants(b, "api", "grow", 8), repeat(true, 8));
    await a.setLimit("api", { kind: "token bucket", rate: 10, period: 60_000, capacity: 20 }, { key: "grow" });
    assert.equal((await b.limit("api", { key: "grow", count: 3 })).ok, false);
    assert.equal((await b.limit("api", { key: "grow", count: 2 })).ok, true);
    // A minute later the bucket has refilled at the stored rate, up to the stored capacity.
    clock.now += 120_000;
    assert.equal((await b.limit("api", { key: "grow", count: 20 })).ok, true);
    clock.now = NOW;
  });

  run("a count above the code's capacity but within the stored one is granted, at an instance's first call", async (store, other) => {
    const { a } = pair(store, other);
    await a.setLimit("api", { kind: "token bucket", rate: 10, period: 60_000, capacity: 25 }, { key: "big" });
    // The bucket starts full at the stored capacity: 15 then 10 are granted, 1 more is not.
    assert.deepEqual([(await a.limit("api", { key: "big", count: 15 })).ok, (await a.limit("api", { key: "big", count: 10 })).ok], [true, true]);
    assert.equal((await a.limit("api", { key: "big" })).ok, false);
    assert.match((await a.limit("api", { key: "big", count: 26 }).catch((error) => error)).message, /count 26 exceeds 25/);
  });

  run("a fixed window's stored rate applies to its current window", async (store, other) => {
    const { a, b, clock } = pair(store, other);
    clock.now = 60_000 * 1000;
    await a.setLimit("window", { kind: "fixed window", rate: 2, period: 60_000, start: 0 }, { key: "w" });
    assert.deepEqual(await grants(b, "window", "w", 3), [true, true, false]);
    clock.now += 60_000;
    assert.deepEqual(await grants(b, "window", "w", 3), [true, true, false]);
    clock.now = NOW;
  });

  run("a stored limit keeps the kind, shards and start in code, and is checked as code's configs are", async (store, other) => {
    const { a } = pair(store, other);
    const code = (promise) => promise.then(() => "stored", (error) => `${error.code} ${error.field ?? ""}`.trim());
    assert.equal(await code(a.setLimit("api", { kind: "fixed window", rate: 3, period: 60_000 })), "INVALID_CONFIG kind");
    assert.equal(await code(a.setLimit("sharded", { kind: "token bucket", rate: 3, period: 60_000 })), "INVALID_CONFIG shards");
    assert.equal(await code(a.setLimit("window", { kind: "fixed window", rate: 3, period: 60_000, start: 7 })), "INVALID_CONFIG start");
    assert.equal(await code(a.setLimit("api", { kind: "token bucket", rate: -1, period: 60_000 })), "INVALID_CONFIG rate");
    assert.equal(await code(a.setLimit("api", { kind: "token bucket", rate: 1, period: 60_000, extra: 1 })), "INVALID_CONFIG extra");
    assert.equal(await code(a.setLimit("nope", { kind: "token bucket", rate: 1, period: 60_000 })), "UNKNOWN_LIMIT");
    assert.equal(await code(a.setLimit("api", { kind: "token bucket", rate: 1, period: 60_000 }, { key: 5 })), "INVALID_REQUEST key");
    const plain = new RateLimiter(store, LIMITS, { now: () => NOW });
    assert.equal(await code(plain.setLimit("api", { kind: "token bucket", rate: 1, period: 60_000 })), "INVALID_ARGUMENT storedLimits");
    // None of them stored anything.
    assert.equal((await a.getLimit("api")).source, "code");
    assert.equal((await a.getLimit("sharded", { key: "s" })).source, "code");
  });

  run("a calendar quota's stored limit keeps a calendar period (its unit may change, its anchor not), and records of a period in ms fail it closed", async (store, other) => {
    const { a, b, clock } = pair(store, other);
    const code = (promise) => promise.then(() => "stored", (error) => `${error.code} ${error.field ?? ""}`.trim());
    await a.setLimit("quota", { kind: "fixed window", rate: 2, period: "month" }, { key: "q" });
    assert.deepEqual(await b.getLimit("quota", { key: "q" }), { config: { kind: "fixed window", rate: 2, period: "month", capacity: 2, shards: 1, start: 0 }, source: "key" });
    // NOW is Nov 14 2023: two grants this month, then a wait until Dec 1, whatever the day's limit in code.
    assert.deepEqual(await grants(b, "quota", "q", 2), [true, true]);
    const refused = await b.limit("quota", { key: "q" });
    assert.deepEqual([refused.ok, refused.retryAfter], [false, Date.UTC(2023, 11, 1) - NOW]);
    clock.now = Date.UTC(2023, 11, 1);
    assert.deepEqual(await grants(b, "quota", "q", 3), [true, true, false]);
    clock.now = NOW;
    // The other kind of period either way, and a week's default anchor (a Monday, not the day's epoch).
    assert.equal(await code(a.setLimit("quota", { kind: "fixed window", rate: 2, period: 86_400_000, start: 0 })), "INVALID_CONFIG period");
    assert.equal(await code(a.setLimit("window", { kind: "fixed window", rate: 2, period: "day", start: 0 })), "INVALID_CONFIG period");
    assert.equal(await code(a.setLimit("quota", { kind: "fixed window", rate: 2, period: "week" })), "INVALID_CONFIG start");
    assert.equal((await a.getLimit("quota")).source, "code");
    // Records of a period in ms under the calendar quota in code (the code changed since): not its limit.
    await store.write({ name: "quota", key: "ms", shard: KEY_LIMIT_SHARD }, { value: 2, ts: 60_000 }, { now: NOW, fullAt: Infinity });
    await store.write({ name: "quota", key: "ms", shard: KEY_LIMIT_SHARD + 1 }, { value: 2, ts: -1 }, { now: NOW, fullAt: Infinity });
    assert.equal((await b.limit("quota", { key: "ms" }).catch((thrown) => thrown)).code, "CORRUPT_STATE");
  });

  run("a sharded limit takes its stored rate on every shard", async (store, other) => {
    const { a, b } = pair(store, other);
    await a.setLimit("sharded", { kind: "token bucket", rate: 4, period: 60_000, shards: 4 }, { key: "s" });
    // 4 tokens over 4 shards: at most 4 grants whatever the shards chosen, and 1 token a shard can never take 2.
    const answers = await grants(b, "sharded", "s", 8);
    assert.ok(answers.filter(Boolean).length <= 4, `${answers}`);
    assert.equal((await b.limit("sharded", { key: "s", count: 3 }).catch((error) => error)).code, "COUNT_EXCEEDS_MAX");
  });

  run("records that are not a limit fail closed and write nothing", async (store, other) => {
    const { b } = pair(store, other);
    await store.write({ name: "api", key: "bad", shard: KEY_LIMIT_SHARD }, { value: -3, ts: 60_000 }, { now: NOW, fullAt: Infinity });
    await store.write({ name: "api", key: "bad", shard: KEY_LIMIT_SHARD + 1 }, { value: 5, ts: -1 }, { now: NOW, fullAt: Infinity });
    const error = await b.limit("api", { key: "bad" }).catch((thrown) => thrown);
    assert.equal(error.code, "CORRUPT_STATE", String(error));
    assert.match(error.message, /stored limit/);
    assert.equal(await store.read({ name: "api", key: "bad", shard: 0 }, { now: NOW }), null);
    // One record of two is no limit either.
    await store.write({ name: "api", key: "half", shard: KEY_LIMIT_SHARD }, { value: 3, ts: 60_000 }, { now: NOW, fullAt: Infinity });
    assert.equal((await b.check("api", { key: "half" }).catch((thrown) => thrown)).code, "CORRUPT_STATE");
  });

  run("random traffic on a stored limit answers exactly what the same limit in code answers", async (store, other) => {
    // Stored for "api" key "same": the config another limiter has in code for "twin".
    const twin = { kind: "token bucket", rate: 7, period: 60_000, capacity: 12, maxReserved: 5 };
    const { a, b, clock } = pair(store, other);
    const coded = new RateLimiter(other, { ...LIMITS, twin }, { now: () => clock.now });
    await a.setLimit("api", twin, { key: "same" });
    let seed = 7;
    const next = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
    for (let call = 0; call < 150; call++) {
      clock.now += Math.floor(next() * 6_000);
      const options = { count: Math.floor(next() * 4), reserve: next() < 0.3, figures: true };
      const write = next() < 0.8;
      const [stored, code] = await Promise.all([
        (write ? b.limit("api", { key: "same", ...options }) : b.check("api", { key: "same", ...options })).catch((error) => error.code),
        (write ? coded.limit("twin", { key: "same", ...options }) : coded.check("twin", { key: "same", ...options })).catch((error) => error.code),
      ]);
      assert.deepEqual(stored, code, `call ${call}`);
    }
    clock.now = NOW;
  });

  run("a call's inline config is its own: stored limits do not apply to it", async (store, other) => {
    const { a, b } = pair(store, other);
    await a.setLimit("api", { kind: "token bucket", rate: 1, period: 60_000 }, { key: "inline" });
    const config = { kind: "token bucket", rate: 10, period: 60_000 };
    const answers = [];
    for (let call = 0; call < 3; call++) answers.push((await b.limit("api", { key: "inline", config })).ok);
    assert.deepEqual(answers, [true, true, true]);
  });

  run("limitAll and check decide on the stored limits of each of their limits", async (store, other) => {
    const { a, b } = pair(store, other);
    await a.setLimit("api", { kind: "token bucket", rate: 1, period: 60_000 }, { key: "all" });
    // The count is checked against the stored capacity, not the code's.
    assert.match((await b.check("api", { key: "all", count: 2 }).catch((error) => error)).message, /count 2 exceeds 1/);
    assert.equal((await b.check("api", { key: "all", count: 1 })).ok, true);
    assert.equal((await b.limitAll([{ name: "api", key: "all" }, { name: "window", key: "all" }])).ok, true);
    assert.equal((await b.limitAll([{ name: "api", key: "all" }, { name: "window", key: "all" }])).ok, false);
    assert.equal((await b.check("api", { key: "all" })).ok, false);
  });

  run("a grant is charged on the key's stored limit, and settles on the limit stored when it settles", async (store, other) => {
    const { a, b } = pair(store, other);
    // Code: a bucket of 10. acme's own limit: a bucket of 50, so a grant of 20 passes only on it.
    await a.setLimit("api", { kind: "token bucket", rate: 10, period: 60_000, capacity: 50 }, { key: "acme" });
    const first = await b.limit("api", { key: "acme", count: 20, grant: true, figures: true });
    assert.equal(first.ok, true);
    assert.deepEqual([first.figures.limit, first.figures.remaining], [50, 30]);
    assert.equal((await a.getValue("api", { key: "acme" })).value, 30);
    // The settle gives back 15 up to the stored capacity of 50 (the code's 10 would cap it at 10).
    assert.deepEqual(await first.grant.settle(5), { refunded: 15, charged: 0, unpaid: 0 });
    assert.equal((await b.getValue("api", { key: "acme" })).value, 45);
    // Another instance settles from the data alone, on the limit stored now: lowered to 40, the refund stops there.
    const second = await b.limit("api", { key: "acme", count: 20, grant: true });
    await a.setLimit("api", { kind: "token bucket", rate: 10, period: 60_000, capacity: 40 }, { key: "acme" });
    // 25 left after the charge: of the 20 charged, 15 come back, up to 40.
    assert.deepEqual(await a.settle(second.grant.data, 0), { refunded: 15, charged: 0, unpaid: 0 });
    assert.equal((await a.getValue("api", { key: "acme" })).value, 40);
    // A count past the stored capacity is refused as past the code's would be, naming the stored one.
    assert.match((await b.limit("api", { key: "acme", count: 41, grant: true }).catch((error) => error)).message, /count 41 exceeds 40/);
    // Another key has the code's bucket of 10.
    assert.equal((await b.limit("api", { key: "bob", count: 20, grant: true }).catch((error) => error)).code, "COUNT_EXCEEDS_MAX");
  });

  run("a grant decides on the name's stored limit, and on its inline config when it has one", async (store, other) => {
    const { a, b } = pair(store, other);
    await a.setLimit("api", { kind: "token bucket", rate: 2, period: 60_000 });
    const granted = [];
    for (let call = 0; call < 3; call++) granted.push((await b.limit("api", { key: "k", grant: true })).ok);
    assert.deepEqual(granted, [true, true, false]);
    const config = { kind: "token bucket", rate: 10, period: 60_000 };
    const inline = await b.limit("api", { key: "own", count: 5, config, grant: true });
    assert.equal(inline.ok, true);
    // Its settle keeps the inline config too: the refund of 5 fills that state to 10, past the name's 2.
    assert.deepEqual(await inline.grant.settle(0), { refunded: 5, charged: 0, unpaid: 0 });
    assert.equal((await b.getValue("api", { key: "own", config })).value, 10);
  });

  run("a grant or a settle on records that are not a limit fails closed and writes nothing", async (store, other) => {
    const { a, b } = pair(store, other);
    const taken = await b.limit("api", { key: "bad", count: 4, grant: true });
    assert.equal(taken.ok, true);
    await store.write({ name: "api", key: "bad", shard: KEY_LIMIT_SHARD }, { value: -3, ts: 60_000 }, { now: NOW, fullAt: Infinity });
    await store.write({ name: "api", key: "bad", shard: KEY_LIMIT_SHARD + 1 }, { value: 5, ts: -1 }, { now: NOW, fullAt: Infinity });
    assert.equal((await b.limit("api", { key: "bad", grant: true }).catch((error) => error)).code, "CORRUPT_STATE");
    assert.equal((await a.settle(taken.grant.data, 0).catch((error) => error)).code, "CORRUPT_STATE");
    // The state is still the charge's 6 of 10.
    assert.equal((await store.read({ name: "api", key: "bad", shard: 0 }, { now: NOW })).value, 6);
  });

  run("acquire with maxWait or a grant reserves on the stored limit", async (store, other) => {
    const { a, b } = pair(store, other);
    await a.setLimit("api", { kind: "token bucket", rate: 50, period: 60_000 }, { key: "acme" });
    const { waited, grant } = await b.acquire("api", { key: "acme", count: 30, maxWait: 0, grant: true });
    assert.equal(waited, 0);
    assert.equal(grant.data.count, 30);
    assert.equal((await b.getValue("api", { key: "acme" })).value, 20);
    // Its settle gives back 20, up to the stored capacity of 50.
    assert.equal((await grant.settle(10)).refunded, 20);
    assert.equal((await b.getValue("api", { key: "acme" })).value, 40);
    // 40 left: 50 come in 12 s at the stored rate (50 a minute), past a maxWait of 1 s; nothing stays charged.
    const late = await b.acquire("api", { key: "acme", count: 50, maxWait: 1_000 }).catch((error) => error);
    assert.equal(late.code, "WAIT_TOO_LONG");
    assert.equal((await b.getValue("api", { key: "acme" })).value, 40);
  });
}

/**
 * A sliding window's stored limit (it has no capacity, maxReserved or shards of its own): one
 * instance raises a key's rate, another obeys it at its next call, other keys keep the code's.
 * Not among the scenarios every host runs (their limits are fixed in advance on some hosts).
 */
export async function slidingWindowStored(store, other = store) {
  const clock = { now: NOW };
  const limits = { slide: { kind: "sliding window", rate: 2, period: 60_000 } };
  const make = (over) => new RateLimiter(over, limits, { now: () => clock.now, storedLimits: true });
  const [a, b] = [make(store), make(other)];
  await a.setLimit("slide", { kind: "sliding window", rate: 5, period: 60_000 }, { key: "acme" });
  assert.deepEqual(await b.getLimit("slide", { key: "acme" }), { config: { kind: "sliding window", rate: 5, period: 60_000 }, source: "key" });
  assert.deepEqual(await grants(b, "slide", "acme", 6), [...repeat(true, 5), false]);
  assert.deepEqual(await grants(b, "slide", "bob", 3), [true, true, false]);
  // A capacity on a sliding window's stored limit is refused as in code, and nothing is stored.
  await assert.rejects(a.setLimit("slide", { kind: "sliding window", rate: 5, period: 60_000, capacity: 9 }, { key: "bob" }), { code: "INVALID_CONFIG", field: "capacity" });
  assert.equal((await b.getLimit("slide", { key: "bob" })).source, "code");
}
