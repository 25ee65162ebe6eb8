// Concurrency limits with leases on Durable Objects in real workerd (Miniflare): the scenarios of
// tests/concurrency/scenarios.mjs run inside the Worker (tests/concurrency/do-worker.mjs), each
// call one request to a ready object through rateLimiterClient, a lease crossing as its data.
// The object decides one request at a time, so concurrent takes grant exactly max, on SQLite-backed
// and key-value-backed storage; an object whose reads wait on a timer grants more (the control).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { bundleWorker, post, scratch, startMiniflare, workerOptions } from "./workerd.mjs";

const worker = fileURLToPath(new URL("../concurrency/do-worker.mjs", import.meta.url));
const CLASSES = ["C2", "C1short", "C1", "C3", "C64"];
const durableObjects = { RACY: { className: "Racy" } };
for (const name of CLASSES) {
  durableObjects[name] = { className: name, useSQLite: true };
  durableObjects[`${name}_KV`] = { className: `${name}Kv` };
}
// acquire is the in-process limiter's (the client has none yet); bad configs fail when the object starts.
const RUN = ["takeReleaseAndReleaseTwice", "anExpiredLeaseFreesItsSlot", "countsAndBadInput", "leaseDataOnAnotherLimiter", "sixtyFourSlots", "exactUnderConcurrentCalls"];

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
  for (const backend of ["sqlite", "kv"]) {
    describe(`${backend}-backed`, () => {
      for (const scenario of RUN) {
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
});
