// `ratebound/preview` in browsers (the `browser` condition: dist/browser/preview-small.js) brings
// its own tiny module, the two calls a preview makes, when the app has loaded no other; an app
// that imports `ratebound` as well compiles its module over it. Run in its own process: the
// entries instantiate the core for the whole realm, and the order of the imports is the test.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

const manifest = JSON.parse(readFileSync(new URL("../../pkg/package.json", import.meta.url), "utf8"));
const engine = await import("../../pkg/dist/core/engine.js");
// Every answer of the tiny module is checked against the whole package's (its own instance, in Node).
const whole = await import("../../pkg/dist/preview.js");
const snapshot = { value: 0, ts: 60_000, shard: 0, config: { kind: "token bucket", rate: 3, period: 10_000, capacity: 3, shards: 1 } };
const windowed = { value: 2, ts: 60_000, shard: 0, config: { kind: "fixed window", rate: 3, period: 10_000, capacity: 3, shards: 1, start: 0 } };

function sameAnswers(small, label) {
  for (const [start, options] of [[snapshot, { serverTimeOffset: 5_000 }], [windowed, {}]]) {
    const ours = new small.RateLimitPreview(start, { ...options, now: () => 55_000 });
    const theirs = new whole.RateLimitPreview(start, { ...options, now: () => 55_000 });
    for (const at of [50_000, 55_000, 58_334, 64_000, 80_000]) {
      for (const count of [0, 1, 2, 3]) assert.deepEqual(ours.status({ at, count }), theirs.status({ at, count }), `${label}: ${start.config.kind} at ${at}, count ${count}`);
      assert.deepEqual(ours.consume({ at }), theirs.consume({ at }), `${label}: consume at ${at}`);
    }
    assert.throws(() => ours.status({ count: 4 }), (error) => error.code === "COUNT_EXCEEDS_MAX");
    assert.throws(() => ours.status({ count: -1 }), (error) => error.code === "INVALID_REQUEST");
  }
}

test("the package's browser condition of ratebound/preview and ratebound/react names the small preview", async () => {
  for (const [subpath, file] of [["./preview", "preview"], ["./react", "react"]]) {
    assert.equal(manifest.exports[subpath].browser, `./dist/browser/${file}-small.js`);
    for (const runtime of ["workerd", "worker", "edge-light", "convex", "deno"]) {
      assert.equal(manifest.exports[subpath][runtime], `./dist/${file}.js`, `${runtime} may not compile from bytes, or has its own entry: it keeps the ${file} that imports ratebound`);
    }
  }
  const react = readFileSync(new URL("../../pkg/dist/browser/react-small.js", import.meta.url), "utf8");
  assert.match(react, /from "\.\/preview-small\.js";/, "the small React hook uses the small preview");
});

test("the preview alone compiles the tiny module, and answers as the whole package does", async () => {
  assert.equal(engine.core, undefined, "nothing compiled a module yet");
  const small = await import("../../pkg/dist/browser/preview-small.js");
  assert.equal(typeof engine.core.rb_calculate_next, "function");
  assert.equal(engine.core.rb_decide_one, undefined, "the tiny module has the preview's calls only");
  sameAnswers(small, "tiny module");
});

test("an app that imports ratebound after the preview decides on its own module, and the preview keeps answering", async () => {
  const small = await import("../../pkg/dist/browser/preview-small.js");
  const { RateLimiter, MemoryStore, SECOND } = await import("../../pkg/dist/browser.js");
  assert.equal(typeof engine.core.rb_decide_one, "function", "the browser entry compiled its module over the tiny one");
  const limiter = new RateLimiter(new MemoryStore(), { send: { kind: "token bucket", rate: 2, period: SECOND } }, { now: () => 0 });
  assert.deepEqual(await limiter.limit("send"), { ok: true });
  sameAnswers(small, "the browser entry's module");
});
