// Concurrency limits with leases on Cloudflare D1 in real workerd (Miniflare): the scenarios of
// tests/concurrency/scenarios.mjs run inside the Worker (./../concurrency/worker.mjs), each take,
// release and extend one batch that re-checks every state it read, so concurrent takes grant
// exactly max; through d1Store's bare read and write, more.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { bundleWorker, post, scratch, startMiniflare, workerOptions } from "../hosts/workerd.mjs";
import { SCENARIOS } from "../concurrency/scenarios.mjs";

const worker = fileURLToPath(new URL("../concurrency/worker.mjs", import.meta.url));

describe("concurrency limits on Cloudflare D1 in workerd (Miniflare)", () => {
  let work;
  let miniflare;
  before(async () => {
    work = scratch("concurrency-d1");
    const outdir = join(work.dir, "bundle");
    await bundleWorker(worker, outdir);
    miniflare = await startMiniflare(workerOptions(outdir, { d1Databases: { DB: "ratebound-concurrency" } }));
    assert.deepEqual((await post(miniflare, "/", { setup: true })).body, { result: null });
  });
  after(async () => {
    await miniflare?.dispose();
    work?.remove();
  });
  for (const scenario of [...Object.keys(SCENARIOS), "overAdmitsWithoutTransaction"]) {
    test(scenario, async () => {
      const { status, body } = await post(miniflare, "/", { scenario });
      assert.equal(status, 200);
      assert.equal(body.error, undefined, body.error && `${body.error.message}\n${body.error.stack}`);
    });
  }
});
