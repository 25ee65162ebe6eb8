// Concurrency limits with leases on Durable Objects in real workerd (Miniflare): the scenarios of
// tests/concurrency/scenarios.mjs run inside the Worker (tests/concurrency/do-worker.mjs), each
// call one request to a ready object through rateLimiterClient, a lease crossing as its data.
// The object decides one request at a time, so concurrent takes grant exactly max, on SQLite-backed
// and key-value-backed storage; an object whose reads wait on a timer grants more (the control).
// The client's acquire polls the object for a slot. An app's own object (RPC) with a RateLimiter
// over durableObjectStore(ctx.storage) runs the same scenarios, and its jobs, each holding a lease
// while a timer lets other requests in, never run more than max at once; the same object whose
// store's reads wait runs more.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { bundleWorker, post, scratch, startMiniflare, workerOptions } from "./workerd.mjs";

const worker = fileURLToPath(new URL("../concurrency/do-worker.mjs", import.meta.url));
const CLASSES = ["C2", "C1short", "C1", "C3", "C64"];
const durableObjects = {
  RACY: { className: "Racy" },
  MIXED: { className: "Mixed", useSQLite: true },
  JOBS: { className: "Jobs", useSQLite: true },
  RACY_JOBS: { className: "RacyJobs", useSQLite: true },
};
for (const name of CLASSES) {
  durableObjects[name] = { className: name, useSQLite: true };
  durableObjects[`${name}_KV`] = { className: `${name}Kv` };
}
// Bad configs fail when the object starts; the clock is real time (no hand-moved extends).
const RUN = ["takeReleaseAndReleaseTwice", "anExpiredLeaseFreesItsSlot", "countsAndBadInput", "acquireWaitsForASlot", "leaseDataOnAnotherLimiter", "sixtyFourSlots", "exactUnderConcurrentCalls"];

describe("concurrency limits on Durable Objects in workerd (Miniflare)", () => {
  let work;
  let miniflare;
  before(async () => {
    work = scratch("concurrency-do");
    const outdir = join(work.dir, "bundle");
    await bundleWorker(worker, outdir);
    miniflare = await startMiniflare(workerOptions(outdir, { durableObjects }));
  });
  after(async () => {
    await miniflare?.dispose();
    work?.remove();
  });
  const result = async (body) => {
    const { status, body: answer } = await post(miniflare, "/", body);
    assert.equal(status, 200);
    assert.equal(answer.error, undefined, answer.error && `${answer.error.message}\n${answer.error.stack}`);
    return answer.result;
  };
  for (const backend of ["sqlite", "kv", "own"]) {
    describe(backend === "own" ? "an app's own object (RPC) over durableObjectStore(ctx.storage)" : `${backend}-backed`, () => {
      // The own object has no acquire of its own: the waiting is the client's, tested on the ready object.
      for (const scenario of RUN.filter((name) => backend !== "own" || name !== "acquireWaitsForASlot")) {
        test(scenario, async () => {
          const { status, body } = await post(miniflare, "/", { scenario, backend });
          assert.equal(status, 200);
          assert.equal(body.error, undefined, body.error && `${body.error.message}\n${body.error.stack}`);
        });
      }
    });
  }
  test("an object whose reads wait on a timer, concurrent takes grant more than max (the control)", async () => {
    const { status, body } = await post(miniflare, "/", { scenario: "overAdmitsWithoutTransaction" });
    assert.equal(status, 200);
    assert.equal(body.error, undefined, body.error && `${body.error.message}\n${body.error.stack}`);
  });
  test("the client's acquire on a rate limit's name is INVALID_ARGUMENT and takes no token; on a concurrency limit it waits, then WAIT_TOO_LONG", async () => {
    assert.deepEqual(await result({ scenario: "acquireTakesOnlyAConcurrencyLimit" }), { refused: "INVALID_ARGUMENT", tokenStillThere: true, slots: [0], waiting: "WAIT_TOO_LONG", released: { released: 1 } });
  });
  test("12 jobs at once on an app's own object with 3 slots: exactly 3 run, never more than 3 at once, each stored", async () => {
    assert.deepEqual(await result({ scenario: "ownObjectJobs" }), { ran: 3, peak: 3, stored: 3 });
  });
  test("the same jobs on the same object whose store's reads wait on a timer run more than 3 at once (the control)", async () => {
    const seen = await result({ scenario: "ownObjectJobs", racy: true });
    assert.ok(seen.ran > 3 && seen.peak > 3, JSON.stringify(seen));
  });
});
