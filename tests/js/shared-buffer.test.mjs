// Calls share the core's one buffer: a call waiting on its reads must decide on its own numbers,
// whatever ran meanwhile. Regressions of two holes the coalescing tests found: a plan that failed
// (bad input) left its items in the buffer while a waiting batch still counted them as its own,
// and a single call decided after a batch planned left the batch counting the single call's items.
import { test } from "node:test";
import assert from "node:assert/strict";
import { RateLimiter } from "../../pkg/dist/node.js";

const NOW = 1_700_000_000_000;
const LIMITS = { api: { kind: "token bucket", rate: 10, period: 60_000 } };

/** An async store whose reads answer only when the test lets each key's read go. */
function heldStore() {
  const states = new Map();
  const waiting = new Map();
  return {
    states,
    read(ref) {
      return new Promise((resolve) => waiting.set(ref.key, () => resolve(states.get(ref.key) ?? null)));
    },
    write(ref, state) {
      states.set(ref.key, state);
    },
    release: (key) => waiting.get(key)(),
    settle: () => new Promise((resolve) => setTimeout(resolve, 5)),
  };
}

test("a batch waiting on its reads decides on its own numbers after another call's plan failed on bad input", async () => {
  const store = heldStore();
  const limiter = new RateLimiter(store, LIMITS, { now: () => NOW });
  const waiting = limiter.limitAll([{ name: "api", key: "a", count: 2 }]);
  await assert.rejects(limiter.limitAll([{ name: "api", key: "b", count: -1 }]), { code: "INVALID_REQUEST" });
  store.release("a");
  assert.deepEqual(await waiting, { ok: true });
  assert.deepEqual(store.states.get("a"), { value: 8, ts: NOW });
});

test("a batch waiting on its reads decides on its own numbers after a single call decided meanwhile", async () => {
  const store = heldStore();
  const limiter = new RateLimiter(store, LIMITS, { now: () => NOW });
  const single = limiter.limit("api", { key: "a", count: 1 });
  const batch = limiter.limitAll([{ name: "api", key: "b", count: 3 }]);
  await store.settle();
  store.release("a");
  assert.deepEqual(await single, { ok: true });
  store.release("b");
  assert.deepEqual(await batch, { ok: true });
  assert.deepEqual(store.states.get("a"), { value: 9, ts: NOW });
  assert.deepEqual(store.states.get("b"), { value: 7, ts: NOW });
});
