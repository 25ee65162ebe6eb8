// ratebound/redis inside real workerd (Miniflare), through @upstash/redis's Workers build and the
// Upstash REST bridge, against a real redis-server: what a Cloudflare Worker or an edge function
// does, since it cannot open TCP sockets.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createClient } from "redis";
import { bundleWorker, scratch, startMiniflare, workerOptions } from "../hosts/workerd.mjs";
import { startRedis, startUpstashBridge } from "./servers.mjs";

const here = fileURLToPath(new URL("./", import.meta.url));
let redis;
let bridge;
let work;
let worker;

before(async () => {
  redis = await startRedis();
  bridge = await startUpstashBridge(redis.url);
  work = scratch("redis-workerd");
  await bundleWorker(join(here, "worker", "upstash-worker.mjs"), work.dir);
  worker = await startMiniflare(workerOptions(work.dir, { bindings: { UPSTASH_URL: bridge.url } }));
});

after(async () => {
  await worker?.dispose();
  await bridge?.stop();
  redis?.stop();
  work?.remove();
});

test("in workerd through @upstash/redis: 30 concurrent requests on one key admit exactly the bound of 10, and the state is left empty", { timeout: 60_000 }, async () => {
  const answers = await Promise.all(
    Array.from({ length: 30 }, async () => {
      const response = await worker.dispatchFetch("http://127.0.0.1/?key=ada", { signal: AbortSignal.timeout(30_000) });
      return response.json();
    }),
  );
  assert.deepEqual(answers.filter((answer) => answer.error), []);
  assert.equal(answers.filter((answer) => answer.ok === true).length, 10);
  assert.equal(answers.filter((answer) => answer.ok === false).length, 20);
  const admin = createClient({ url: redis.url });
  await admin.connect();
  try {
    // Real clock in the Worker: 10 taken, and less than one token refilled since (one a 2.4 h).
    const [value] = (await admin.get("ratebound:{daily:ada}:0")).split(",").map(Number);
    assert.ok(value >= 0 && value < 0.01, `value left ${value}`);
  } finally {
    await admin.quit();
  }
  assert.ok(bridge.forwarded.get("EVALSHA") + (bridge.forwarded.get("EVAL") ?? 0) >= 10, "the commits went through the bridge to redis-server");
});
