// acquire, acquireAll and throttle (issue 31, items 1 and 2) in memory: the scenarios every host
// runs (tests/js/acquire-scenarios.mjs), then what only needs one process: bad input, a clock
// slower than the timers, throttle's arguments and types.
import { describe, it, test } from "node:test";
import assert from "node:assert/strict";
import { MemoryStore, RateLimiter, throttle } from "../../pkg/dist/node.js";
import { KINDS } from "./helpers.mjs";
import { scenariosFor } from "./acquire-scenarios.mjs";

/** A MemoryStore shared by every limiter of a scenario; each read is one "round trip". */
function countingMemory() {
  const inner = new MemoryStore();
  let reads = 0;
  const store = {
    read: (ref) => {
      reads += 1;
      return inner.read(ref);
    },
    write: (ref, state, info) => inner.write(ref, state, info),
  };
  return { store, roundTrips: () => reads, inner };
}

for (const kind of KINDS) {
  describe(`acquire in memory, ${kind}`, () => {
    for (const [name, scenario] of scenariosFor(kind)) {
      test(name, () => {
        const { store, roundTrips } = countingMemory();
        return scenario({ kind, roundTrips, connect: async (limits, options) => new RateLimiter(store, limits, options) });
      });
    }
  });
}

describe("acquire's bad input fails before anything is written", () => {
  const limits = { api: { kind: "token bucket", rate: 10, period: 1_000, maxReserved: 5 } };
  const cases = [
    ["a negative maxWait", () => ({ maxWait: -1 }), "INVALID_REQUEST", "maxWait"],
    ["a maxWait that is not a number", () => ({ maxWait: "1000" }), "INVALID_REQUEST", "maxWait"],
    ["a signal that is not an AbortSignal", () => ({ signal: { aborted: "no" } }), "INVALID_ARGUMENT", "signal"],
    ["an unknown option (acquire always reserves)", () => ({ reserve: false }), "INVALID_REQUEST", "reserve"],
    ["a grant that is not a boolean", () => ({ grant: 1 }), "INVALID_REQUEST", "grant"],
    ["a count above capacity + maxReserved", () => ({ count: 16 }), "COUNT_EXCEEDS_MAX", "count"],
  ];
  for (const [what, options, code, field] of cases) {
    it(what, async () => {
      const inner = new MemoryStore();
      const limiter = new RateLimiter(inner, limits);
      await assert.rejects(limiter.acquire("api", options()), (error) => error.code === code && error.field === field);
      assert.equal(inner.read({ name: "api", key: undefined, shard: 0 }), null, "nothing written");
    });
  }
  it("acquireAll: not an array, an unknown field, an unknown limit", async () => {
    const limiter = new RateLimiter(new MemoryStore(), limits);
    await assert.rejects(limiter.acquireAll({ name: "api" }), { code: "INVALID_ARGUMENT", field: "requests" });
    await assert.rejects(limiter.acquireAll([{ name: "api", reserve: true }]), { code: "INVALID_REQUEST", field: "reserve" });
    await assert.rejects(limiter.acquireAll([{ name: "api" }, { name: "nope" }]), { code: "UNKNOWN_LIMIT" });
    await assert.rejects(limiter.acquireAll([{ name: "api" }, { name: "nope" }], { grant: true }), { code: "UNKNOWN_LIMIT" });
    assert.equal((await limiter.getValue("api")).value, 10, "the grant taken before the unknown limit was given back");
  });
});

test("never early by the limiter's clock, even when it runs slower than the timers", async () => {
  // This clock runs at half speed: a timer set for the wait fires when the clock shows half of it.
  const origin = Date.now();
  const now = () => origin + (Date.now() - origin) / 2;
  const limiter = new RateLimiter(new MemoryStore(), { slow: { kind: "token bucket", rate: 1, period: 40, capacity: 1 } }, { now });
  await limiter.acquire("slow");
  const asked = now();
  await limiter.acquire("slow");
  assert.ok(now() - asked >= 40, `waited ${now() - asked} ms by the limiter's clock`);
});

describe("throttle", () => {
  const limits = { host: { kind: "token bucket", rate: 1, period: 50, capacity: 1 } };

  it("waits its turn per key (a function of the arguments), with fn's this, arguments and result", async () => {
    const limiter = new RateLimiter(new MemoryStore(), limits);
    const calls = [];
    const fetchPage = throttle(
      limiter,
      "host",
      function (url, depth) {
        calls.push([this?.name, url, depth, Date.now()]);
        return `${url}@${depth}`;
      },
      { key: (url) => new URL(url).host },
    );
    const started = Date.now();
    const crawler = { name: "crawler", fetchPage };
    const pages = await Promise.all([crawler.fetchPage("https://a.example/1", 0), crawler.fetchPage("https://a.example/2", 1), crawler.fetchPage("https://b.example/1", 0)]);
    assert.deepEqual(pages, ["https://a.example/1@0", "https://a.example/2@1", "https://b.example/1@0"]);
    assert.ok(calls.every(([self]) => self === "crawler"));
    const at = Object.fromEntries(calls.map(([, url, , time]) => [url, time - started]));
    assert.ok(at["https://b.example/1"] < 40, "another host does not wait");
    assert.ok(at["https://a.example/2"] >= 50, `the second page of a host waits a token (${at["https://a.example/2"]} ms)`);
  });

  it("count as a function of the arguments; past maxWait the call rejects and fn is not called", async () => {
    const limiter = new RateLimiter(new MemoryStore(), { tokens: { kind: "token bucket", rate: 10, period: 1_000, maxReserved: 10 } });
    let called = 0;
    const complete = throttle(limiter, "tokens", (prompt, maxTokens) => ++called, { count: (prompt, maxTokens) => maxTokens, maxWait: 500 });
    assert.equal(await complete("hi", 10), 1);
    await assert.rejects(complete("hi", 10), { code: "WAIT_TOO_LONG" });
    assert.equal(called, 1, "fn was not called");
    assert.equal((await limiter.getValue("tokens")).value < 0.5, true, "and nothing was charged");
  });

  it("refuses what is not a limiter, a function or a known option", () => {
    const limiter = new RateLimiter(new MemoryStore(), limits);
    assert.throws(() => throttle(limiter, "host", "fetch"), { code: "INVALID_ARGUMENT", field: "fn" });
    assert.throws(() => throttle({}, "host", () => {}), { code: "INVALID_ARGUMENT", field: "limiter" });
    assert.throws(() => throttle(limiter, "host", () => {}, { concurrency: 2 }), { code: "INVALID_ARGUMENT", field: "concurrency" });
    assert.throws(() => throttle(limiter, "host", () => {}, { key: 1 }), { code: "INVALID_ARGUMENT", field: "key" });
  });
});

test("a polluted Object.prototype is never read as an option of acquire, acquireAll or throttle", async () => {
  const limiter = new RateLimiter(new MemoryStore(), { api: { kind: "token bucket", rate: 10, period: 1_000 } });
  Object.prototype.key = "polluted";
  Object.prototype.count = 10;
  Object.prototype.maxWait = -1;
  try {
    await limiter.acquire("api", {});
    await limiter.acquireAll([{ name: "api" }], {});
    await throttle(limiter, "api", () => 1, {})();
  } finally {
    delete Object.prototype.key;
    delete Object.prototype.count;
    delete Object.prototype.maxWait;
  }
  assert.equal((await limiter.getValue("api")).value < 7.5, true, "3 tokens of the shared state were taken");
  assert.equal((await limiter.getValue("api", { key: "polluted" })).value, 10, "nothing under the polluted key");
});
