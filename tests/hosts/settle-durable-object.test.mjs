// Settle on Durable Objects in real workerd (Miniflare), the scenarios of tests/settle/scenarios.mjs
// run inside the Worker: every call is a request to the ready object through rateLimiterClient,
// whose grant handle settles through the object's settle op; the object decides one request at a
// time, so concurrent settles of one grant refund once. The same object over storage whose reads
// wait on a timer (the input gate opens) refunds more than once.
import { test } from "node:test";
import assert from "node:assert/strict";
import { workerdSettleSuite } from "../settle/workerd-suite.mjs";

workerdSettleSuite("settle on Durable Objects in workerd (Miniflare)", [
  { title: "SQLite-backed, token bucket", host: "do", kind: "token bucket", backend: "sqlite" },
  { title: "SQLite-backed, fixed window", host: "do", kind: "fixed window", backend: "sqlite" },
  { title: "key-value-backed, token bucket", host: "do", kind: "token bucket", backend: "kv" },
  { title: "key-value-backed, fixed window", host: "do", kind: "fixed window", backend: "kv" },
], (call) => {
  test("the object's ops: limit with grant answers the data, settle answers 200, a second settle 400 GRANT_SETTLED, bad input 400 writing nothing", async () => {
    const { result, error } = await call({ statuses: true });
    assert.equal(error, undefined, error?.message);
    assert.equal(result.granted.status, 200);
    assert.deepEqual(Object.keys(result.granted.result.grant).sort(), ["chargedAt", "count", "id", "key", "name", "shards"]);
    assert.deepEqual(result.plain, { status: 200, result: { ok: true } }, "a limit without grant answers as before");
    assert.deepEqual([result.badGrant.status, result.badGrant.code], [400, "INVALID_ARGUMENT"], "a grant that is not data is the core's argument error");
    assert.deepEqual([result.negative.status, result.negative.code], [400, "INVALID_REQUEST"]);
    assert.equal(result.settled.status, 200);
    assert.ok(Math.abs(result.settled.result.refunded - 200) < 0.05, `refunded ${result.settled.result.refunded}: the -1 wrote nothing`);
    assert.deepEqual([result.again.status, result.again.code], [400, "GRANT_SETTLED"]);
  });
});
