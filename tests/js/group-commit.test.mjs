// The group-commit batcher (ts/stores/shared/group-commit.ts), host-neutral: what it sends, when,
// in which batches, and how each call's answer, failure and deadline stay its own. `send` here is
// a plain function standing for a host's round trip (the Redis store's is tested on a real server
// in tests/redis/group-commit.test.mjs).
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { GroupCommit } from "../../pkg/dist/stores/shared/group-commit.js";

/** A round trip the test answers by hand: `sent` lists each batch, `answer(i)` settles batch i. */
function manualHost() {
  const sent = [];
  const pending = [];
  return {
    sent,
    send: (items) => {
      sent.push(items);
      return new Promise((resolve, reject) => pending.push({ resolve, reject, items }));
    },
    answer: (index, map = (item) => item * 10) => pending[index].resolve(pending[index].items.map(map)),
    fail: (index, error) => pending[index].reject(error),
  };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("GroupCommit", () => {
  test("calls made in one tick go together at once; calls that arrive while it is in flight go in the next, in order", async () => {
    const host = manualHost();
    const batcher = new GroupCommit({ maxSize: 128, send: host.send });
    const first = [1, 2, 3].map((item) => batcher.enqueue(item));
    await tick();
    assert.deepEqual(host.sent, [[1, 2, 3]]);
    const second = [4, 5].map((item) => batcher.enqueue(item));
    await tick();
    assert.equal(host.sent.length, 1, "nothing more is sent while one is in flight");
    host.answer(0);
    assert.deepEqual(await Promise.all(first), [10, 20, 30]);
    await tick();
    assert.deepEqual(host.sent[1], [4, 5]);
    host.answer(1);
    assert.deepEqual(await Promise.all(second), [40, 50]);
  });

  test("inFlight: up to that many batches of a lane in flight; a call goes at once while fewer are, and waits only when all are", async () => {
    const host = manualHost();
    const batcher = new GroupCommit({ maxSize: 128, inFlight: 2, send: host.send });
    const first = batcher.enqueue(1);
    await tick();
    const second = batcher.enqueue(2);
    await tick();
    assert.deepEqual(host.sent, [[1], [2]], "the second call did not wait for the first's answer");
    const later = [3, 4, 5].map((item) => batcher.enqueue(item));
    await tick();
    assert.equal(host.sent.length, 2, "with 2 in flight, the rest wait");
    host.answer(1);
    assert.equal(await second, 20);
    await tick();
    assert.deepEqual(host.sent[2], [3, 4, 5], "they go together when one comes back");
    host.answer(0);
    host.answer(2);
    assert.deepEqual([await first, ...(await Promise.all(later))], [10, 30, 40, 50]);
    assert.throws(() => new GroupCommit({ maxSize: 1, inFlight: 0, send: host.send }), RangeError);
  });

  test("a batch holds at most maxSize, counted with size; a larger item goes alone", async () => {
    const host = manualHost();
    const batcher = new GroupCommit({ maxSize: 4, size: (item) => (item >= 100 ? item / 100 : 1), send: host.send });
    const all = [1, 2, 3, 200, 4, 500, 5, 6].map((item) => batcher.enqueue(item));
    for (let batch = 0; batch < 4; batch++) {
      await tick();
      host.answer(batch);
    }
    await Promise.all(all);
    assert.deepEqual(host.sent, [[1, 2, 3], [200, 4], [500], [5, 6]]);
  });

  test("an Error answer fails its own call; a failed round trip fails only the calls it carried", async () => {
    const host = manualHost();
    const batcher = new GroupCommit({ maxSize: 128, send: host.send });
    const [one, two] = [1, 2].map((item) => batcher.enqueue(item));
    await tick();
    const three = batcher.enqueue(3);
    host.answer(0, (item) => (item === 2 ? new Error("corrupt") : item));
    assert.equal(await one, 1);
    await assert.rejects(two, /corrupt/);
    await tick();
    const four = batcher.enqueue(4);
    host.fail(1, new Error("connection lost"));
    await assert.rejects(three, /connection lost/);
    await tick();
    assert.deepEqual(host.sent[2], [4]);
    host.answer(2);
    assert.equal(await four, 40);
  });

  test("each call keeps its own deadline: a round trip that never answers fails its calls at their deadlines, and the lane sends the next batch without waiting for it", async () => {
    const host = manualHost();
    const batcher = new GroupCommit({ maxSize: 128, send: host.send, timeoutMs: 40, timeoutError: () => Object.assign(new Error("late"), { code: "LATE" }) });
    const stuck = batcher.enqueue(1); // its round trip never answers
    // Its deadline well after the first's (a loaded machine's timer can fire a few ms late).
    await new Promise((resolve) => setTimeout(resolve, 20));
    const queuedAt = Date.now();
    const queued = batcher.enqueue(2); // waits behind it
    await assert.rejects(stuck, { code: "LATE" });
    await tick();
    assert.deepEqual(host.sent, [[1], [2]], "once every call in flight timed out, the lane sent the next");
    await assert.rejects(queued, { code: "LATE" });
    assert.ok(Date.now() - queuedAt >= 39, "the queued call failed at its own deadline, not its predecessor's");
    const later = batcher.enqueue(3);
    await tick();
    assert.deepEqual(host.sent[2], [3]);
    host.answer(2);
    assert.equal(await later, 30);
    host.answer(0); // a late answer changes nothing
    host.answer(1);
    await tick();
  });

  test("lanes are independent: each has its own round trip in flight", async () => {
    const host = manualHost();
    const batcher = new GroupCommit({ maxSize: 128, lane: (item) => item % 2, send: host.send });
    const calls = [1, 2, 3, 4].map((item) => batcher.enqueue(item));
    await tick();
    assert.deepEqual(host.sent, [[1, 3], [2, 4]]);
    host.answer(1);
    host.answer(0);
    assert.deepEqual(await Promise.all(calls), [10, 20, 30, 40]);
  });
});
