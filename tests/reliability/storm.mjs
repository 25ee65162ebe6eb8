// The harness of the "no panic" suites (not a test file itself): a storm of
// failing calls of one kind, then a probe that the same WebAssembly instance
// still decides exactly right, still holds what it held, and has not grown.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { RateLimiter, MemoryStore, calculateRateLimit, withJitter, SECOND } from "../../pkg/dist/node.js";
import * as engine from "../../pkg/dist/core/engine.js";
import { CheckedStore } from "./helpers.mjs";

export const CALLS_PER_KIND = 10_000;
export const NOW = 1_700_000_000_000;

export const LIMITS = {
  send: { kind: "token bucket", rate: 3, period: SECOND },
  wide: { kind: "fixed window", rate: 40, period: SECOND, shards: 4, start: 0 },
};

/** The package's WebAssembly memory: the running instance's. */
const wasmMemory = () => engine.core.memory;

/** Limiters on both paths (a MemoryStore's slab, a callback store), with a fixed clock. */
export function healthy() {
  const memory = new MemoryStore();
  const callbacks = new CheckedStore();
  const options = { now: () => NOW, random: () => 0.25 };
  return { memory, callbacks, limiters: [new RateLimiter(memory, LIMITS, options), new RateLimiter(callbacks, LIMITS, options)] };
}

/**
 * Every kind of decision on a fresh key and on `ada` (who took 1 of her 3
 * tokens first), as plain data: a healthy instance gives the same answers
 * every time, since the clock and the random source are fixed.
 */
export async function probeAnswers(limiter, freshKey) {
  const answers = [];
  for (let i = 0; i < 4; i++) answers.push(await limiter.limit("send", { key: freshKey }));
  answers.push(await limiter.check("send", { key: "ada", count: 2 }));
  answers.push(await limiter.check("send", { key: "ada", count: 3 }));
  answers.push(await limiter.limitAll([{ name: "wide", key: freshKey, count: 10 }, { name: "send", key: `${freshKey}+` }]));
  answers.push((await limiter.getValue("wide", { key: freshKey, sampleShards: 4 })).value);
  answers.push(calculateRateLimit({ value: 0, ts: 0 }, LIMITS.send, 100, 1));
  answers.push(withJitter(1000, 500, () => 0.5));
  return answers;
}

/** Asserts what a healthy instance answers the probe (the first time, before any failure). */
export function assertHealthyAnswers(answers) {
  const [first, second, third, fourth, adaTwo, adaThree, batch, wideValue, transition, jittered] = answers;
  assert.deepEqual([first, second, third, adaTwo, batch], [{ ok: true }, { ok: true }, { ok: true }, { ok: true }, { ok: true }]);
  for (const refusal of [fourth, adaThree]) {
    assert.equal(refusal.ok, false);
    // 1 token short at 3 a second: a third of a second, in whole ms rounded up (334).
    assert.equal(refusal.retryAfter, Math.ceil(1000 / 3), JSON.stringify(refusal));
  }
  assert.equal(wideValue, 30);
  assert.equal(transition.value, -0.7);
  assert.equal(jittered, 1250);
}

/**
 * Calls `fail` `times` times; each must throw or reject a real Error, never
 * trap (`WebAssembly.RuntimeError`) and never succeed. Returns the codes seen
 * (`error.code`, else `error.name`).
 */
export async function failRepeatedly(fail, times, tally) {
  const codes = new Set();
  for (let i = 0; i < times; i++) {
    let threw = false;
    try {
      await fail(i);
    } catch (error) {
      threw = true;
      assert.ok(!(error instanceof WebAssembly.RuntimeError), `call ${i} trapped: ${error.message}`);
      assert.ok(error instanceof Error, `call ${i} threw a non-Error: ${String(error)}`);
      codes.add(error.code ?? error.name);
    }
    assert.ok(threw, `call ${i} did not fail`);
  }
  tally?.add("failing calls", times);
  return [...codes];
}

/** A revoked Proxy: almost any operation on it throws. */
export const revoked = (() => {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
})();
/** `target` behind a Proxy whose `ownKeys` trap throws (so `Object.keys` throws). */
export const trapKeys = (target) => new Proxy(target, { ownKeys: () => { throw new Error("ownKeys trap"); } });
/** `target` behind a Proxy whose `get` trap throws (except for `then`, so it is not a thenable). */
export const trapGet = (target) =>
  new Proxy(target, {
    get: (_, key) => {
      if (key === "then") return undefined;
      throw new Error(`get trap: ${String(key)}`);
    },
  });

/** What a kind of failing call gets: a limiter on `store`, and limiters with a broken clock or random source. */
function contextFor(limiter, store) {
  return {
    limiter,
    store,
    nanClock: new RateLimiter(store, LIMITS, { now: () => NaN }),
    randomOne: new RateLimiter(store, LIMITS, { now: () => NOW, random: () => 1 }),
    randomThrows: new RateLimiter(store, LIMITS, { now: () => NOW, random: () => { throw new Error("no entropy"); } }),
  };
}

/**
 * Defines the suite: for each kind, `CALLS_PER_KIND` failing calls (half on a
 * MemoryStore, half on a callback store), then the probe on both; at the end,
 * the instance's memory and ada's tokens are checked.
 *
 * @param {string} title
 * @param {{ kinds: Array<[string, (context: object) => unknown, string[] | null]>,
 *           storeKinds: Array<[string, () => unknown, string[] | null]>, tally: import("./helpers.mjs").Tally }} storm
 *   `kinds` run on both stores; `storeKinds` bring their own store. `null` codes: any Error.
 */
export function defineStorm(title, { kinds, storeKinds, tally }) {
  describe(title, () => {
    const { memory, callbacks, limiters } = healthy();
    const contexts = [contextFor(limiters[0], memory), contextFor(limiters[1], callbacks)];
    let memoryBefore;
    let probe = 0;
    const baselines = [];
    const probeBoth = async () => {
      probe += 1;
      for (const [index, limiter] of limiters.entries()) {
        const answers = await probeAnswers(limiter, `probe-${probe}`);
        if (baselines[index] === undefined) {
          assertHealthyAnswers(answers);
          baselines[index] = answers;
        }
        assert.deepEqual(answers, baselines[index], "the instance answers differently than before the failing calls");
      }
      tally.add("decisions checked", 2 * 10);
    };
    const checkCodes = (what, seen, codes) => {
      if (codes === null) return;
      for (const code of seen) assert.ok(codes.includes(code), `${what} failed with ${code}, expected one of ${codes}`);
    };

    it("a healthy instance answers the probe, and ada takes 1 of her 3 tokens", async () => {
      for (const limiter of limiters) assert.deepEqual(await limiter.limit("send", { key: "ada" }), { ok: true });
      await probeBoth();
      memoryBefore = wasmMemory().buffer.byteLength;
    });

    for (const [what, fail, codes] of kinds) {
      it(`${what}: ${CALLS_PER_KIND.toLocaleString("en")} times (MemoryStore and callback store), then it decides exactly right`, async () => {
        for (const context of contexts) checkCodes(what, await failRepeatedly(() => fail(context), CALLS_PER_KIND / 2, tally), codes);
        await probeBoth();
      });
    }

    for (const [what, fail, codes] of storeKinds) {
      it(`${what}: ${CALLS_PER_KIND.toLocaleString("en")} times, then it decides exactly right`, async () => {
        checkCodes(what, await failRepeatedly(fail, CALLS_PER_KIND, tally), codes);
        await probeBoth();
      });
    }

    it("afterwards the instance's memory has grown by at most 1 MiB, and ada still holds exactly 2 tokens", async () => {
      const grown = wasmMemory().buffer.byteLength - memoryBefore;
      assert.ok(grown <= 1 << 20, `WebAssembly memory grew by ${grown} bytes during the failing calls`);
      for (const [index, limiter] of limiters.entries()) {
        assert.deepEqual(await limiter.limit("send", { key: "ada", count: 2 }), { ok: true });
        assert.deepEqual(await limiter.limit("send", { key: "ada" }), baselines[index][3], "ada is empty now, like a fresh key after 3");
      }
    });
  });
}
