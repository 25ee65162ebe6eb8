// The browser entry starts with the small .wasm (no grants, what a browser app downloads) and
// loads the full one on the first grant, once, from the URL beside the entry (dist/wasm/
// ratebound.wasm; in Node the entry reads that file). Run in its own process: the entry
// instantiates the core for the whole realm.
import { renameSync } from "node:fs";
import { test } from "node:test";
import assert from "node:assert/strict";
import { RateLimiter, MemoryStore, SECOND } from "../../pkg/dist/browser.js";
import * as engine from "../../pkg/dist/core/engine.js";

test("the browser entry decides on the small module, which has no grant exports", async () => {
  assert.equal(typeof engine.core.rb_decide_one, "function");
  assert.equal(engine.core.rb_charge, undefined, "the module the page compiled carries no grants");
  const limiter = new RateLimiter(new MemoryStore(), { send: { kind: "token bucket", rate: 2, period: SECOND } }, { now: () => 0 });
  assert.deepEqual(await limiter.limit("send"), { ok: true });
  assert.equal((await limiter.getValue("send")).value, 1);
});

test("the small module decides on stored limits too (the build keeps the exports the entry calls)", async () => {
  assert.equal(typeof engine.core.rb_limit_resolve, "function");
  const limiter = new RateLimiter(new MemoryStore(), { send: { kind: "token bucket", rate: 2, period: SECOND } }, { now: () => 0, storedLimits: true });
  await limiter.setLimit("send", { kind: "token bucket", rate: 1, period: SECOND }, { key: "ada" });
  assert.deepEqual([(await limiter.limit("send", { key: "ada" })).ok, (await limiter.limit("send", { key: "ada" })).ok], [true, false]);
});

test("a grant whose full module cannot be loaded is refused with where it was looked for, and the next grant tries again", async () => {
  const limiter = new RateLimiter(new MemoryStore(), { llm: { kind: "token bucket", rate: 100, period: SECOND } }, { now: () => 0 });
  const full = new URL("../../pkg/dist/wasm/ratebound.wasm", import.meta.url);
  const aside = new URL("../../pkg/dist/wasm/ratebound.wasm.aside", import.meta.url);
  renameSync(full, aside);
  try {
    await assert.rejects(limiter.limit("llm", { count: 40, grant: true }), (error) => {
      assert.match(error.message, /a grant needs the full module, which could not be loaded from file:.*\/dist\/wasm\/ratebound\.wasm/);
      return true;
    });
  } finally {
    renameSync(aside, full);
  }
  assert.equal((await limiter.getValue("llm")).value, 100, "the refused grant took nothing");
});

test("a grant loads the full module once, and charges and settles as on the server", async () => {
  const limiter = new RateLimiter(new MemoryStore(), { llm: { kind: "token bucket", rate: 100, period: SECOND } }, { now: () => 0 });
  const first = await limiter.limit("llm", { count: 40, grant: true });
  const second = await limiter.limit("llm", { count: 10, grant: true });
  assert.deepEqual((await first.grant.settle(15)).refunded, 25);
  assert.deepEqual((await second.grant.cancel()).refunded, 10);
  assert.equal((await limiter.getValue("llm")).value, 85);
  const [a, b] = await Promise.all([engine.grantsEngine(), engine.grantsEngine()]);
  assert.equal(a, b, "loaded once");
  assert.notEqual(a.core, engine.core, "a second instance, beside the small one");
});

test("a grant's figures come from the full module's own buffer, and are those a plain limit answers (issue 28 item 7)", async () => {
  const limits = { llm: { kind: "token bucket", rate: 100, period: SECOND } };
  const charged = new RateLimiter(new MemoryStore(), limits, { now: () => 0 });
  const limited = new RateLimiter(new MemoryStore(), limits, { now: () => 0 });
  for (const count of [40, 50, 20]) {
    const { grant, ...answer } = await charged.limit("llm", { count, figures: true, grant: true });
    assert.deepEqual(answer, await limited.limit("llm", { count, figures: true }), `count ${count}`);
    assert.equal(typeof (grant?.settle ?? (() => {})), "function");
  }
  assert.notEqual((await engine.grantsEngine()).io, engine.io, "the charge answered in the other instance's buffer");
});
