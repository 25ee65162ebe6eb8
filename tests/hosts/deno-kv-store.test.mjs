// ratebound/deno-kv's kvStore: `new RateLimiter(kvStore(kv), LIMITS)` makes each call its own
// checked Deno KV transaction, on the shared optimistic driver (Node, through @deno/kv).
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { openKv } from "@deno/kv";
import { RateLimiter } from "../../pkg/dist/node.js";
import { KvConflictError, kvStore, kvTransaction } from "../../pkg/dist/deno-kv.js";
import { LIMITS, NOW } from "./deno-kv-scenarios.mjs";
import { scratch } from "./workerd.mjs";

async function withHandles(count, run) {
  const work = scratch("deno-kv-store");
  const handles = await Promise.all(Array.from({ length: count }, () => openKv(join(work.dir, "kv.sqlite"))));
  try {
    return await run(handles);
  } finally {
    handles.forEach((kv) => kv.close());
    work.remove();
  }
}

const stored = (kv, ref) => kvTransaction(kv, (tx) => tx.read(ref));

test("kvStore: 60 concurrent limits on 8 handles admit exactly the bound of 10, and the state is left at 0", () =>
  withHandles(8, async (handles) => {
    let conflicts = 0;
    const outcomes = await Promise.all(
      Array.from({ length: 60 }, (_, index) =>
        new RateLimiter(kvStore(handles[index % 8], { maxAttempts: 100, onConflict: () => conflicts++ }), LIMITS, { now: () => NOW })
          .limit("daily", { key: "ada" })
          .catch((error) => ({ error })),
      ),
    );
    assert.deepEqual(outcomes.filter((outcome) => outcome.error), []);
    assert.equal(outcomes.filter((outcome) => outcome.ok).length, 10);
    assert.deepEqual(await stored(handles[0], { name: "daily", key: "ada", shard: 0 }), { value: 0, ts: NOW });
    assert.ok(conflicts > 0, "the calls did race");
  }));

test("kvStore: a refused limitAll writes nothing, a granted one writes every limit", () =>
  withHandles(1, async ([kv]) => {
    const limiter = new RateLimiter(kvStore(kv), LIMITS, { now: () => NOW });
    assert.equal((await limiter.limit("daily", { key: "bo", count: 8 })).ok, true);
    assert.equal((await limiter.limitAll([{ name: "perUser", key: "bo", count: 3 }, { name: "daily", key: "bo", count: 4 }])).ok, false);
    assert.equal(await stored(kv, { name: "perUser", key: "bo", shard: 0 }), null);
    assert.deepEqual(await stored(kv, { name: "daily", key: "bo", shard: 0 }), { value: 2, ts: NOW });
    assert.equal((await limiter.limitAll([{ name: "perUser", key: "bo", count: 3 }, { name: "daily", key: "bo", count: 2 }])).ok, true);
    assert.deepEqual(await stored(kv, { name: "perUser", key: "bo", shard: 0 }), { value: 0, ts: NOW });
    assert.deepEqual(await stored(kv, { name: "daily", key: "bo", shard: 0 }), { value: 0, ts: NOW });
  }));

test("kvStore: a call whose commit always loses fails closed with KvConflictError after maxAttempts", () =>
  withHandles(2, async ([kv, rival]) => {
    let attempts = 0;
    // A store whose reads let a rival write first, every time: the commit's check always fails.
    const store = kvStore(kv, { maxAttempts: 3, baseDelayMs: 1 });
    const racing = {
      read: (ref) => store.read(ref),
      write: (ref, state, info) => store.write(ref, state, info),
      transaction: (body) =>
        store.transaction(async (tx) => {
          attempts++;
          const result = await body(tx);
          await rival.set(["ratebound", "daily", "cy", 0], new Uint8Array(16));
          return result;
        }),
    };
    const error = await new RateLimiter(racing, LIMITS, { now: () => NOW }).limit("daily", { key: "cy" }).catch((caught) => caught);
    assert.ok(error instanceof KvConflictError, String(error));
    assert.equal(error.code, "KV_CONFLICT");
    assert.deepEqual([attempts, error.attempts], [3, 3]);
    assert.deepEqual(await stored(kv, { name: "daily", key: "cy", shard: 0 }), { value: 0, ts: 0 }, "only the rival's write is there");
  }));
