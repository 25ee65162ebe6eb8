// No panic, ever (issue 7, item 1): 10,000 failing calls of every kind the
// API can be asked (bad configs, bad requests, unknown names, impossible
// counts, broken clocks and random sources, failing and corrupt stores,
// re-entrant callbacks), then the same WebAssembly instance still decides
// exactly right, holds what it held before, and has not grown its memory.
// Hostile objects (Proxies that throw) have their own file:
// hostile-objects.test.mjs.
import { describe, it, after } from "node:test";
import assert from "node:assert/strict";
import { RateLimiter, MemoryStore, calculateRateLimit, calculateRateLimits, withJitter, isRateLimitError, SECOND } from "../../pkg/dist/node.js";
import { CORRUPT_STATES, Tally } from "./helpers.mjs";
import { LIMITS, NOW, assertHealthyAnswers, defineStorm, failRepeatedly, healthy, probeAnswers, trapGet } from "./storm.mjs";

const tally = new Tally("no panic: 10,000 failing calls of each kind");
after(() => tally.flush());

const bucket = { kind: "token bucket", rate: 3, period: SECOND };

/** `[what, (context) => a call that must fail, the codes it may fail with]`, run on both stores. */
const kinds = [
  ["an inline config with rate -1", ({ limiter }) => limiter.limit("oneOff", { config: { ...bucket, rate: -1 } }), ["INVALID_CONFIG"]],
  ["an inline config with an unknown field", ({ limiter }) => limiter.check("oneOff", { config: { ...bucket, burst: 3 } }), ["INVALID_CONFIG"]],
  ["a limiter built with a bad config", ({ store }) => new RateLimiter(store, { bad: { ...bucket, period: 0 } }), ["INVALID_CONFIG"]],
  ["count NaN", ({ limiter }) => limiter.limit("send", { key: "k", count: NaN }), ["INVALID_REQUEST"]],
  ["count -1", ({ limiter }) => limiter.limit("send", { key: "k", count: -1 }), ["INVALID_REQUEST"]],
  ['count "1"', ({ limiter }) => limiter.limit("send", { key: "k", count: "1" }), ["INVALID_REQUEST"]],
  ["count 4 of 3", ({ limiter }) => limiter.limit("send", { key: "k", count: 4 }), ["COUNT_EXCEEDS_MAX"]],
  ["a key that is a number", ({ limiter }) => limiter.limit("send", { key: 5 }), ["INVALID_REQUEST"]],
  ["a key of 1025 bytes", ({ limiter }) => limiter.limit("send", { key: "k".repeat(1025) }), ["INVALID_REQUEST"]],
  ['reserve "yes"', ({ limiter }) => limiter.limit("send", { key: "k", reserve: "yes" }), ["INVALID_REQUEST"]],
  ["a name that is not a string", ({ limiter }) => limiter.limit(42), ["INVALID_REQUEST"]],
  ["an unknown name", ({ limiter }) => limiter.limit("nope"), ["UNKNOWN_LIMIT"]],
  ["the name __proto__", ({ limiter }) => limiter.check("__proto__"), ["UNKNOWN_LIMIT"]],
  ["sampleShards 0", ({ limiter }) => limiter.getValue("wide", { sampleShards: 0 }), ["INVALID_REQUEST"]],
  ["now() returning NaN", ({ nanClock }) => nanClock.limit("send"), ["INVALID_REQUEST"]],
  ["random() returning 1", ({ randomOne }) => randomOne.limit("wide", { key: "r" }), ["INVALID_RANDOM"]],
  ["random() throwing", ({ randomThrows }) => randomThrows.limit("wide", { key: "r" }), ["INVALID_RANDOM"]],
  [
    "a refusal with throws: true",
    ({ limiter }) => limiter.limit("send", { key: "empty", count: 3, throws: true }).then(() => limiter.limit("send", { key: "empty", throws: true })),
    ["RATE_LIMITED"],
  ],
  ["limitAll of a non-array", ({ limiter }) => limiter.limitAll("send"), ["INVALID_ARGUMENT"]],
  ["limitAll with a null item", ({ limiter }) => limiter.limitAll([null]), ["INVALID_ARGUMENT"]],
  ["a store without methods", () => new RateLimiter({}, LIMITS), ["INVALID_ARGUMENT"]],
  ["calculateRateLimit with now NaN", () => calculateRateLimit(null, bucket, NaN), ["INVALID_REQUEST"]],
  ["calculateRateLimit with a corrupt state", () => calculateRateLimit({ value: NaN, ts: 0 }, bucket, 0), ["CORRUPT_STATE"]],
  ["calculateRateLimits with count -1", () => calculateRateLimits(new Float64Array([1, 0]), bucket, 0, -1), ["INVALID_REQUEST"]],
  ["withJitter with a negative wait", () => withJitter(-1, 10, () => 0.5), ["INVALID_REQUEST"]],
];

/** Failures that bring their own store: it throws, rejects, answers corrupt, or calls the limiter back. */
function storeKinds() {
  const named = (store) => new RateLimiter(store, LIMITS, { now: () => NOW, random: () => 0.5 });
  let corrupt = 0;
  const readThrows = named({ read: () => { throw new Error("down"); }, write() {} });
  const readRejects = named({ read: () => Promise.reject(new Error("down")), write() {} });
  const writeThrows = named({ read: () => null, write: () => { throw new Error("down"); } });
  const writeRejects = named({ read: () => null, write: () => Promise.reject(new Error("down")) });
  const corruptState = named({ read: () => CORRUPT_STATES[corrupt++ % CORRUPT_STATES.length], write() {} });
  // One level deep: the inner call's own read answers normally.
  const reentrant = {
    limiter: null,
    depth: 0,
    read() {
      if (reentrant.depth > 0) return null;
      reentrant.depth += 1;
      try {
        reentrant.limiter.check("send", { key: "inner" });
      } finally {
        reentrant.depth -= 1;
      }
      throw new Error("re-entered");
    },
    write() {},
  };
  reentrant.limiter = named(reentrant);
  const reentrantRandom = new RateLimiter(new MemoryStore(), LIMITS, {
    now: () => NOW,
    random: () => {
      reentrantRandom.limit("send", { key: "inner" }).catch(() => {});
      throw new Error("re-entered");
    },
  });
  return [
    ["a store whose read throws", () => readThrows.limit("send"), ["Error"]],
    ["a store whose read rejects", () => readRejects.limit("send"), ["Error"]],
    ["a store whose write throws", () => writeThrows.limit("send"), ["Error"]],
    ["a store whose write rejects", () => writeRejects.limit("send"), ["Error"]],
    ["a store that answers a corrupt state", () => corruptState.limit("send"), ["CORRUPT_STATE"]],
    ["a store that calls the limiter from inside read", () => reentrant.limiter.limit("send"), ["Error"]],
    ["a MemoryStore used from inside random()", () => reentrantRandom.limit("wide", { key: "x" }), ["INVALID_RANDOM"]],
  ];
}

defineStorm("10,000 failing calls of every kind leave the instance deciding exactly right", { kinds, storeKinds: storeKinds(), tally });

describe("the storm's checks can fail", () => {
  it("a limiter that grants once too often after failures is caught by the probe", async () => {
    const { limiters } = healthy();
    const [real] = limiters;
    await real.limit("send", { key: "ada" });
    const overAdmitting = Object.create(real);
    overAdmitting.limit = async (name, options) => {
      const result = await real.limit(name, options);
      return result.ok ? result : { ok: true }; // the fault under test: a refusal turned into a grant
    };
    overAdmitting.check = (...args) => real.check(...args);
    overAdmitting.limitAll = (...args) => real.limitAll(...args);
    overAdmitting.getValue = (...args) => real.getValue(...args);
    await assert.rejects(async () => assertHealthyAnswers(await probeAnswers(overAdmitting, "probe-x")), { code: "ERR_ASSERTION" });
  });

  it("a call that traps, or that does not fail, is caught", async () => {
    await assert.rejects(failRepeatedly(() => { throw new WebAssembly.RuntimeError("unreachable"); }, 1), /trapped/);
    await assert.rejects(failRepeatedly(() => "an answer", 1), /did not fail/);
    await assert.rejects(failRepeatedly(() => { throw "a string"; }, 1), /non-Error/);
  });

  it("a refusal thrown with throws: true is a RateLimitError (code RATE_LIMITED), not an error of the core", async () => {
    const { limiters } = healthy();
    await limiters[0].limit("send", { key: "z", count: 3 });
    await assert.rejects(limiters[0].limit("send", { key: "z", throws: true }), (error) => isRateLimitError(error) && error.code === "RATE_LIMITED" && error.name === "RateLimitError");
  });

  it("a store whose state getters throw fails the call with CORRUPT_STATE", async () => {
    const limiter = new RateLimiter({ read: () => trapGet({}), write() {} }, LIMITS, { now: () => NOW });
    await assert.rejects(limiter.limit("send"), { code: "CORRUPT_STATE" });
  });
});
