// ratebound/durable-object in real workerd (Miniflare): the ready object on SQLite- and
// key-value-backed storage admits exactly the bound under concurrent requests, survives a restart
// with persistence on, answers a bad config with a 400 and changes nothing, and keeps every
// (name, key, shard) apart. Then examples/cloudflare (on ratebound/http's guard), run as it is.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { COLLIDING_REFS, stateFor } from "./collisions.mjs";
import { bundleWorker, post, scratch, startMiniflare, workerOptions } from "./workerd.mjs";

const here = fileURLToPath(new URL("./", import.meta.url));
const repo = fileURLToPath(new URL("../../", import.meta.url));

const OBJECTS = {
  durableObjects: {
    LIMITER: { className: "Limiter", useSQLite: true },
    LIMITER_KV: { className: "KvLimiter" },
    RACY: { className: "RacyLimiter" },
    RPC: { className: "RpcLimiter", useSQLite: true },
    PROBE: { className: "Probe", useSQLite: true },
    PROBE_KV: { className: "KvProbe" },
  },
};
const BACKENDS = [
  { storage: "SQLite-backed", binding: "LIMITER", probe: "PROBE" },
  { storage: "key-value-backed", binding: "LIMITER_KV", probe: "PROBE_KV" },
];

let work;
let outdir;
let miniflare;
let objectCount = 0;
/** A fresh object name, so that tests never share state. */
const freshObject = () => `object-${++objectCount}`;

before(async () => {
  work = scratch("durable-object");
  outdir = join(work.dir, "bundle");
  const inputs = await bundleWorker(join(here, "durable-object", "worker.mjs"), outdir);
  assert.ok(inputs.some((input) => input.endsWith("pkg/dist/workerd.js")), "the bundle took in ratebound's workerd entry");
  miniflare = await startMiniflare(workerOptions(outdir, OBJECTS));
});

after(async () => {
  await miniflare?.dispose();
  work?.remove();
});

const admitted = (answers) => answers.filter(({ result }) => result?.ok === true).length;

/** One call through rateLimiterClient inside the Worker. */
async function call(binding, object, request) {
  const { status, body } = await post(miniflare, "/call", { binding, object, ...request });
  assert.equal(status, 200);
  return body;
}

for (const { storage, binding, probe } of BACKENDS) {
  describe(`the ready object, ${storage}`, () => {
    test("40 parallel requests from outside to one object admit exactly the bound of 10", async () => {
      const object = freshObject();
      const answers = await Promise.all(
        Array.from({ length: 40 }, () => call(binding, object, { op: "limit", name: "daily", options: { key: "ada" } })),
      );
      assert.equal(admitted(answers), 10);
      const { result } = await call(binding, object, { op: "getValue", name: "daily", options: { key: "ada" } });
      assert.ok(result.value >= 0 && result.value < 0.01, `the bucket is empty (value ${result.value})`);
    });

    test("40 requests fired at once from inside the Worker admit exactly the bound of 10", async () => {
      const { body } = await post(miniflare, "/burst", { binding, object: freshObject(), n: 40, op: "limit", name: "daily", options: { key: "ada" } });
      assert.equal(admitted(body), 10);
    });

    test("no update is lost: 7 parallel requests under the bound leave 3 tokens", async () => {
      const object = freshObject();
      const { body } = await post(miniflare, "/burst", { binding, object, n: 7, op: "limit", name: "daily", options: { key: "ada" } });
      assert.equal(admitted(body), 7);
      const { result } = await call(binding, object, { op: "getValue", name: "daily", options: { key: "ada" } });
      assert.ok(Math.abs(result.value - 3) < 0.01, `3 tokens left (value ${result.value})`);
    });

    test("a sliding window: 40 parallel requests from outside admit exactly its rate of 10, and it reports 0 left", async () => {
      const object = freshObject();
      const answers = await Promise.all(
        Array.from({ length: 40 }, () => call(binding, object, { op: "limit", name: "sliding", options: { key: "ada" } })),
      );
      assert.equal(admitted(answers), 10);
      const { result } = await call(binding, object, { op: "getValue", name: "sliding", options: { key: "ada" } });
      assert.equal(result.value, 0);
    });

    test("a sharded limit never admits more than its bound of 20 under 60 parallel requests", async () => {
      const { body } = await post(miniflare, "/burst", { binding, object: freshObject(), n: 60, op: "limit", name: "dailySharded", options: { key: "ada" } });
      const taken = admitted(body);
      assert.ok(taken <= 20 && taken >= 15, `admitted ${taken}`);
    });

    test("a limit stored in the object through one client is obeyed by the next call of another, and deleteLimit restores the code's", async () => {
      const object = freshObject();
      const stored = { kind: "token bucket", rate: 2, period: 86_400_000 };
      assert.deepEqual(await call(binding, object, { op: "setLimit", name: "daily", config: stored, options: { key: "ada" } }), { result: null });
      const limits = await call(binding, object, { op: "getLimit", name: "daily", options: { key: "ada" } });
      assert.deepEqual(limits.result, { config: { ...stored, capacity: 2, shards: 1 }, source: "key" });
      const answers = [];
      for (let index = 0; index < 3; index++) answers.push((await call(binding, object, { op: "limit", name: "daily", options: { key: "ada" } })).result.ok);
      assert.deepEqual(answers, [true, true, false]);
      assert.equal((await call(binding, object, { op: "limit", name: "daily", options: { key: "bob", count: 10 } })).result.ok, true, "another key keeps the code's 10");
      const refused = await call(binding, object, { op: "setLimit", name: "daily", config: { ...stored, shards: 2 }, options: { key: "ada" } });
      assert.deepEqual([refused.error.status, refused.error.code], [400, "INVALID_CONFIG"]);
      await call(binding, object, { op: "deleteLimit", name: "daily", options: { key: "ada" } });
      assert.equal((await call(binding, object, { op: "getLimit", name: "daily", options: { key: "ada" } })).result.source, "code");
    });

    test("a grant and its settle through the client decide on the key's stored limit", async () => {
      const object = freshObject();
      const stored = { kind: "token bucket", rate: 10, period: 86_400_000, capacity: 50 };
      await call(binding, object, { op: "setLimit", name: "daily", config: stored, options: { key: "ada" } });
      // The code's bucket holds 10: a grant of 20 passes only on ada's 50.
      const granted = (await call(binding, object, { op: "limit", name: "daily", options: { key: "ada", count: 20, grant: true } })).result;
      assert.equal(granted.ok, true);
      // The client's settle(data, actual), through the worker's generic call (name: the data, options: actual).
      const settled = await call(binding, object, { op: "settle", name: granted.grant.data, options: 5 });
      // The object's clock is real: a little refills meanwhile. The code's capacity would cap the state at 10.
      const { refunded, charged, unpaid } = settled.result;
      assert.ok(Math.abs(refunded - 15) < 0.01 && charged === 0 && unpaid === 0, JSON.stringify(settled));
      const { value } = (await call(binding, object, { op: "getValue", name: "daily", options: { key: "ada" } })).result;
      assert.ok(Math.abs(value - 45) < 0.01, `45 tokens left (value ${value})`);
    });

    test("two limits in one limitAll are all-or-nothing", async () => {
      const object = freshObject();
      const batch = (user) => ({ op: "limitAll", requests: [{ name: "perUser", key: user }, { name: "global" }] });
      assert.deepEqual((await call(binding, object, batch("ada"))).result, { ok: true });
      assert.deepEqual((await call(binding, object, batch("bob"))).result, { ok: true });
      assert.equal((await call(binding, object, batch("cy"))).result.ok, false); // global is used up
      const { result } = await call(binding, object, { op: "getValue", name: "perUser", options: { key: "cy" } });
      assert.ok(Math.abs(result.value - 3) < 0.01, `cy's perUser is untouched (value ${result.value})`);
      // A batch's dryRun reaches the object: never refused, its would-be refusal reported, nothing charged.
      const dry = (await call(binding, object, { ...batch("cy"), batchOptions: { dryRun: true, throws: true } })).result;
      assert.deepEqual([dry.ok, dry.dryRun.ok], [true, false]);
      const untouched = (await call(binding, object, { op: "getValue", name: "perUser", options: { key: "cy" } })).result;
      assert.ok(Math.abs(untouched.value - 3) < 0.01, `cy's perUser is untouched by the dry run (value ${untouched.value})`);
    });

    test("a request with a bad config gets a 400 with the core's error, and changes nothing", async () => {
      const object = freshObject();
      await call(binding, object, { op: "limit", name: "daily", options: { key: "ada", count: 4 } });
      const before = (await call(binding, object, { op: "getValue", name: "daily", options: { key: "ada" } })).result;

      const badConfig = { kind: "token bucket", rate: -1, period: 1000 };
      const inline = await call(binding, object, { op: "limit", name: "inline", options: { config: badConfig } });
      assert.equal(inline.error.status, 400);
      assert.equal(inline.error.code, "INVALID_CONFIG");
      assert.match(inline.error.message, /Rate limit "inline": rate must be a positive finite number \(got -1\)/);

      const batch = await call(binding, object, {
        op: "limitAll",
        requests: [{ name: "daily", key: "ada", count: 2 }, { name: "inline", config: badConfig }],
      });
      assert.equal(batch.error.status, 400);
      assert.equal(batch.error.code, "INVALID_CONFIG");

      const tooMany = await call(binding, object, { op: "limit", name: "daily", options: { key: "ada", count: 11 } });
      assert.deepEqual([tooMany.error.status, tooMany.error.code], [400, "COUNT_EXCEEDS_MAX"]);
      const unknown = await call(binding, object, { op: "limit", name: "nope" });
      assert.deepEqual([unknown.error.status, unknown.error.code], [400, "UNKNOWN_LIMIT"]);

      const after = (await call(binding, object, { op: "getValue", name: "daily", options: { key: "ada" } })).result;
      assert.equal(after.ts, before.ts, "daily was not written");
      assert.equal(after.value, before.value);
    });

    test("a malformed request gets a 400 and a GET a 405", async () => {
      const object = freshObject();
      const notJson = (await post(miniflare, "/raw", { binding, object, raw: "{not json" })).body;
      assert.deepEqual([notJson.status, notJson.body.error.code], [400, "INVALID_REQUEST"]);
      const unknownOp = (await post(miniflare, "/raw", { binding, object, raw: JSON.stringify({ op: "drop" }) })).body;
      assert.equal(unknownOp.status, 400);
      assert.match(unknownOp.body.error.message, /unknown op "drop"/);
      const get = (await post(miniflare, "/raw", { binding, object, method: "GET" })).body;
      assert.equal(get.status, 405);
    });

    test("throws: true turns a refusal into a RateLimitError on the calling side", async () => {
      const object = freshObject();
      await call(binding, object, { op: "limit", name: "perUser", options: { key: "ada", count: 3 } });
      const { error } = await call(binding, object, { op: "limit", name: "perUser", options: { key: "ada", throws: true } });
      assert.equal(error.isRateLimitError, true);
      assert.equal(error.data.kind, "RateLimited");
      assert.equal(error.data.name, "perUser");
      assert.ok(error.data.retryAfter > 0);
    });

    test("reset makes the limit full again", async () => {
      const object = freshObject();
      await call(binding, object, { op: "limit", name: "perUser", options: { key: "ada", count: 3 } });
      assert.equal((await call(binding, object, { op: "check", name: "perUser", options: { key: "ada" } })).result.ok, false);
      await call(binding, object, { op: "reset", name: "perUser", options: { key: "ada" } });
      assert.deepEqual((await call(binding, object, { op: "check", name: "perUser", options: { key: "ada", count: 3 } })).result, { ok: true });
    });

    test("every (name, key, shard) triple is its own storage key, however its strings look", async () => {
      const states = COLLIDING_REFS.map((_, index) => stateFor(index));
      const { status, body } = await post(miniflare, "/refs", { binding: probe, object: freshObject(), refs: COLLIDING_REFS, states });
      assert.equal(status, 200);
      assert.deepEqual(body.states, states);
      assert.equal(body.synchronous, storage === "SQLite-backed", "the store uses storage.kv exactly when the object is SQLite-backed");
    });
  });
}

test("an app's own RPC Durable Object over durableObjectStore admits exactly the bound of 10 of 40 parallel calls", async () => {
  const { status, body } = await post(miniflare, "/rpc-burst", { object: freshObject(), n: 40, name: "daily", options: { key: "ada" } });
  assert.equal(status, 200);
  assert.equal(admitted(body), 10);
});

test("a sliding window, through an app's own RPC object: exactly 10 of 40 parallel calls; through the racy object, more than 10", async () => {
  const { body } = await post(miniflare, "/rpc-burst", { object: freshObject(), n: 40, name: "sliding", options: { key: "ada" } });
  assert.equal(admitted(body), 10);
  const racy = await post(miniflare, "/racy", { object: freshObject(), n: 40, name: "sliding", options: { key: "ada" } });
  assert.ok(admitted(racy.body) > 10, `admitted ${admitted(racy.body)}`);
});

test("the harness sees over-admission: an object whose store yields to a timer mid-decision admits more than 10", async () => {
  const { body } = await post(miniflare, "/racy", { object: freshObject(), n: 40, name: "daily", options: { key: "ada" } });
  assert.ok(admitted(body) > 10, `admitted ${admitted(body)}`);
});

for (const { storage, binding } of BACKENDS) {
  test(`state survives a restart of Miniflare with persistence on (${storage})`, async () => {
    const persist = scratch("durable-object-persist");
    const options = workerOptions(outdir, { ...OBJECTS, durableObjectsPersist: persist.dir });
    try {
      let first = await startMiniflare(options);
      try {
        const { body } = await post(first, "/call", { binding, object: "persisted", op: "limit", name: "daily", options: { key: "ada", count: 4 } });
        assert.deepEqual(body.result, { ok: true });
      } finally {
        await first.dispose();
      }
      const second = await startMiniflare(options);
      try {
        const value = (await post(second, "/call", { binding, object: "persisted", op: "getValue", name: "daily", options: { key: "ada" } })).body.result;
        assert.ok(Math.abs(value.value - 6) < 0.01, `6 tokens left after the restart (value ${value.value})`);
        const sixMore = (await post(second, "/call", { binding, object: "persisted", op: "limit", name: "daily", options: { key: "ada", count: 6 } })).body;
        assert.deepEqual(sixMore.result, { ok: true });
        const oneMore = (await post(second, "/call", { binding, object: "persisted", op: "limit", name: "daily", options: { key: "ada" } })).body;
        assert.equal(oneMore.result.ok, false);
      } finally {
        await second.dispose();
      }
    } finally {
      persist.remove();
    }
  });
}

describe("examples/cloudflare", () => {
  let example;
  let exampleWork;

  before(async () => {
    exampleWork = scratch("example-cloudflare");
    const bundle = join(exampleWork.dir, "bundle");
    await bundleWorker(join(repo, "examples", "cloudflare", "src", "worker.ts"), bundle);
    // As examples/cloudflare/wrangler.toml binds it.
    example = await startMiniflare(workerOptions(bundle, { durableObjects: { RATE_LIMITS: { className: "RateLimits", useSQLite: true } } }));
  });

  after(async () => {
    await example?.dispose();
    exampleWork?.remove();
  });

  const request = (user, method = "GET") =>
    example.dispatchFetch("http://127.0.0.1/", { method, headers: user ? { "x-user": user } : {}, signal: AbortSignal.timeout(30_000) });

  test("a user gets 10 requests at once, then 429 with a Retry-After; another user is unaffected", async () => {
    const responses = await Promise.all(Array.from({ length: 12 }, () => request("ada")));
    const statuses = await Promise.all(responses.map(async (response) => (await response.text(), response.status)));
    assert.equal(statuses.filter((status) => status === 200).length, 10);
    assert.equal(statuses.filter((status) => status === 429).length, 2);
    const refused = responses.find((response) => response.status === 429);
    assert.equal(refused.headers.get("retry-after"), "1");
    const bob = await request("bob");
    assert.equal(bob.status, 200);
    assert.equal(await bob.text(), "Hello, bob");
    assert.equal(bob.headers.get("ratelimit"), '"api";r=9;t=1', "9 of 10 left, full again in 1 s at 60 a minute");
    assert.equal(bob.headers.get("ratelimit-policy"), '"api";q=10;w=60');
  });

  test("uploads have their own fixed window of 5 an hour", async () => {
    const statuses = [];
    for (let index = 0; index < 6; index++) {
      const response = await request("cy", "PUT");
      await response.text();
      statuses.push(response.status);
    }
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429]);
  });

  test("without a user, a client is limited by its address: 20 addresses of one IPv6 /64 share 10", async () => {
    const statuses = [];
    for (let host = 1; host <= 20; host++) {
      const response = await example.dispatchFetch("http://127.0.0.1/", { headers: { "cf-connecting-ip": `2001:db8:77:1:${host.toString(16)}::1` }, signal: AbortSignal.timeout(30_000) });
      const text = await response.text();
      if (response.status === 200) assert.equal(text, "Hello, stranger");
      statuses.push(response.status);
    }
    assert.equal(statuses.filter((status) => status === 200).length, 10, String(statuses));
    const other = await example.dispatchFetch("http://127.0.0.1/", { headers: { "cf-connecting-ip": "2001:db8:78::1" }, signal: AbortSignal.timeout(30_000) });
    assert.equal(other.status, 200, "another /56 is another client");
    await other.text();
  });
});
