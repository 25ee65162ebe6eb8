// Runs the settle scenarios inside workerd (./worker.mjs, through Miniflare) for one host: not a
// test file itself; tests/hosts/settle-durable-object.test.mjs and tests/sql/settle-d1.test.mjs
// register it.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { bundleWorker, post, scratch, startMiniflare, workerOptions } from "../hosts/workerd.mjs";

const here = fileURLToPath(new URL("./", import.meta.url));

/** Function names of ./scenarios.mjs, by test sentence. */
export const NAMED = {
  "an LLM flow: estimates settled below and above (debt bounded by maxReserved), a cancel, and a second settle refused": "llmFlow",
  "a grant's data through JSON settles in another limiter instance, a sharded one on its own shards": "serialisedSettle",
  "concurrent settles of one grant: exactly one refunds, the rest are GRANT_SETTLED": "concurrentSettles",
  "a negative, NaN or infinite actual is INVALID_REQUEST and writes nothing": "badActualWritesNothing",
  "a calendar quota (a year from an anchor): the quota, a wait to the anniversary, a settle's refund, getValue": "calendarQuota",
  "the same concurrent settles without the host's atomicity refund more than once (so the test above can fail)": "concurrentSettlesWithoutTransaction",
};

export const DURABLE_OBJECTS = {
  SETTLE_TokenBucket: { className: "SettleTokenBucket", useSQLite: true },
  SETTLE_FixedWindow: { className: "SettleFixedWindow", useSQLite: true },
  SETTLE_TokenBucket_KV: { className: "SettleTokenBucketKv" },
  SETTLE_FixedWindow_KV: { className: "SettleFixedWindowKv" },
  SETTLE_Calendar: { className: "SettleCalendar", useSQLite: true },
  SETTLE_Calendar_KV: { className: "SettleCalendarKv" },
  RACY_TokenBucket: { className: "RacyTokenBucket" },
  RACY_FixedWindow: { className: "RacyFixedWindow" },
};

/**
 * Starts the Worker once and registers every scenario for each of `runs`
 * (`{ title, host, kind, backend? }`), then `more(call)`'s own tests: `call(body)` posts to the Worker.
 */
export function workerdSettleSuite(title, runs, more = () => {}) {
  describe(title, () => {
    let work;
    let miniflare;
    before(async () => {
      work = scratch("settle");
      const outdir = join(work.dir, "bundle");
      await bundleWorker(join(here, "worker.mjs"), outdir);
      miniflare = await startMiniflare(workerOptions(outdir, { d1Databases: { DB: "ratebound-settle" }, durableObjects: DURABLE_OBJECTS }));
      assert.deepEqual((await post(miniflare, "/", { setup: true })).body, { result: null });
    });
    after(async () => {
      await miniflare?.dispose();
      work?.remove();
    });
    more(async (body) => (await post(miniflare, "/", body)).body);
    for (const run of runs) {
      describe(run.title, () => {
        for (const [sentence, scenario] of Object.entries(NAMED)) {
          test(sentence, async () => {
            const { status, body } = await post(miniflare, "/", { ...run, scenario });
            assert.equal(status, 200);
            assert.equal(body.error, undefined, body.error && `${body.error.message}\n${body.error.stack}`);
          });
        }
      });
    }
  });
}
