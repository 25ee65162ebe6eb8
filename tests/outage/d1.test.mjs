// Outages of Cloudflare D1 (issue 24, "Also"), in real workerd through Miniflare: ratebound/sqlite
// over a D1 binding whose reads or batches throw (as a lost connection does) or hang, and over a
// table that does not exist (D1's own error). Under "closed" (the default) a call rejects with a
// coded error (SQL_FAILED, its cause D1's message) and nothing is written; "open" admits
// degraded; the memory fallback admits exactly the bound; with a timeout a hang is STORE_TIMEOUT
// (or degraded "store-timeout") and writes nothing, and once D1 answers the next call is its own.
// Grants, getValue and reset fail closed whatever the policy; the app's own d1Transaction fails
// with the same code and its statement never runs.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { bundleWorker, post, scratch, startMiniflare, workerOptions } from "../hosts/workerd.mjs";

const here = fileURLToPath(new URL("./", import.meta.url));
const NOW = 1_700_000_000_000;
const TAKEN = { value: 3, ts: NOW }; // the row after the healthy store took 2 of 5

describe("Cloudflare D1 in workerd (Miniflare) when it fails", () => {
  let work;
  let miniflare;
  let keys = 0;
  const route = async (path, body = {}) => {
    const { status, body: answer } = await post(miniflare, `/${path}`, body);
    assert.equal(status, 200);
    assert.equal(answer.error, undefined, JSON.stringify(answer.error));
    return answer.result;
  };
  const calls = (failure, options, list) => route("calls", { key: `k${++keys}`, failure, options, calls: list });

  before(async () => {
    work = scratch("outage-d1");
    const outdir = join(work.dir, "bundle");
    await bundleWorker(join(here, "d1", "worker.mjs"), outdir);
    miniflare = await startMiniflare(workerOptions(outdir, { d1Databases: { DB: "ratebound-outage" } }));
    await route("setup");
  });
  after(async () => {
    await miniflare?.dispose();
    work?.remove();
  });

  for (const failure of ["reads throw", "batches throw", "the table is missing"]) {
    describe(failure, () => {
      test('"closed" (the default): limit, limitAll and a grant reject with a coded error naming D1\'s, and nothing is written', async () => {
        const seen = await calls(failure, {}, [
          { op: "limit", name: "api", options: { key: "_" } },
          { op: "limitAll", requests: [{ name: "api", key: "_" }] },
          { op: "limit", name: "api", options: { key: "_", grant: true } },
        ].map((call) => withKey(call, keys + 1)));
        for (const { error } of seen.answers) {
          assert.equal(error?.code, "SQL_FAILED", JSON.stringify(error));
          assert.match(error.message, failure === "the table is missing" ? /no such table/ : /Network connection lost/);
        }
        assert.deepEqual(seen.row, TAKEN);
      });

      test('"open" admits limit and limitAll degraded; getValue and reset still fail closed where their half fails', async () => {
        const key = `k${keys + 1}`;
        const seen = await calls(failure, { onStoreError: "open" }, [
          { op: "limit", name: "api", options: { key } },
          { op: "limitAll", requests: [{ name: "api", key }] },
          { op: "getValue", name: "api", options: { key } },
          { op: "reset", name: "api", options: { key } },
        ]);
        const [limit, all, value, reset] = seen.answers;
        for (const { result } of [limit, all]) assert.deepEqual([result.ok, result.degraded, result.cause.code], [true, "store-error", "SQL_FAILED"]);
        // getValue only reads, reset only writes: each fails where its half does.
        if (failure !== "batches throw") assert.equal(value.error?.code, "SQL_FAILED");
        else assert.equal(value.result.value, 3);
        if (failure !== "reads throw") assert.equal(reset.error?.code, "SQL_FAILED");
        if (failure !== "reads throw") assert.deepEqual(seen.row, TAKEN);
      });

      test("the memory fallback admits exactly the limit's bound over 20 calls, and nothing is written", async () => {
        const key = `k${keys + 1}`;
        const seen = await calls(failure, {}, Array.from({ length: 20 }, () => ({ op: "limit", name: "guarded", options: { key } })));
        assert.ok(seen.answers.every(({ result }) => result?.degraded === "store-error"), JSON.stringify(seen.answers[0]));
        assert.equal(seen.answers.filter(({ result }) => result.ok).length, 5);
        assert.deepEqual(seen.row, TAKEN);
      });
    });
  }

  for (const hang of ["read", "batch"]) {
    test(`a ${hang} that hangs: with a timeout, closed rejects STORE_TIMEOUT, open and the fallback answer degraded "store-timeout", nothing is written; once D1 answers the next call is its own`, async () => {
      const seen = await route("hang", { key: `k${++keys}`, hang });
      const [closed, open, fallback, after] = seen.answers;
      assert.equal(closed.error?.code, "STORE_TIMEOUT");
      assert.deepEqual([open.result.ok, open.result.degraded], [true, "store-timeout"]);
      assert.deepEqual([fallback.result.ok, fallback.result.degraded], [true, "store-timeout"]);
      assert.deepEqual(seen.untouched, TAKEN);
      assert.deepEqual(after.result, { ok: true }, "the hung calls no longer hold the key");
      assert.deepEqual(seen.row, { value: 2, ts: NOW });
    });
  }

  test("the app's own d1Transaction whose batch throws rejects with SQL_FAILED, once (a failure is not a lost race), and its statement never runs", async () => {
    const seen = await route("appTransaction", { key: `k${++keys}` });
    assert.equal(seen.outcome.error?.code, "SQL_FAILED");
    assert.deepEqual([seen.posts, seen.batches], [0, 1]);
    assert.deepEqual(seen.row, TAKEN);
  });
});

/** The call with the test's key. */
function withKey(call, index) {
  const key = `k${index}`;
  return call.op === "limitAll" ? { ...call, requests: call.requests.map((request) => ({ ...request, key })) } : { ...call, options: { ...call.options, key } };
}
