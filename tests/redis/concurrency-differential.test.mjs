// The concurrency script (ts/stores/redis-script-concurrency.ts) against the core, on a real
// redis-server: the same random traffic (takes of random counts, releases, extends, forged leases,
// the clock moving in random steps past expiries) through a limiter on redisStore (every take,
// release and extend one EVALSHA of the script, replayed by the core) and through a limiter on a
// MemoryStore (the core alone), with the same clock and the same random numbers (so the same
// lease ids). Every answer and every stored number must be equal (Object.is). Leases are long in
// real time (Redis's PX is real time; the test's clock jumps), so no key expires while it runs.
// RATEBOUND_DIFFERENTIAL_OPS sets the number of operations (default 20,000).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { MemoryStore, RateLimiter } from "../../pkg/dist/node.js";
import { redisStore } from "../../pkg/dist/redis.js";
import { CLIENTS, startRedis } from "./servers.mjs";
import { seeded } from "../js/helpers.mjs";

const OPS = Number(process.env.RATEBOUND_DIFFERENTIAL_OPS ?? 20_000);
let redis;
let connection;
before(async () => {
  redis = await startRedis();
  connection = await CLIENTS["node-redis"].open({ redisUrl: redis.url });
});
after(async () => {
  await connection?.close();
  redis?.stop();
});

/** What a call answered, or its error's code, as plain data. */
async function outcome(promise) {
  try {
    const answer = await promise;
    if (answer && answer.lease) return { ok: true, id: answer.lease.id, slots: [...answer.lease.slots], expiresAt: answer.lease.expiresAt };
    return answer;
  } catch (error) {
    return { code: error.code ?? String(error) };
  }
}

test(`${OPS} random operations through the script and through the core answer and store the same`, { timeout: 600_000 }, async () => {
  const draw = seeded(31);
  const clock = { now: 1_700_000_000_000 };
  const store = redisStore(connection.client);
  const memory = new MemoryStore();
  let checked = 0;
  let scriptCalls = 0;
  const decideSlots = store.decideSlots.bind(store);
  store.decideSlots = (...args) => (scriptCalls++, decideSlots(...args));
  for (let run = 0; checked < OPS; run++) {
    const max = 1 + Math.floor(draw() * 8);
    const lease = 1_000 + Math.floor(draw() * 600_000);
    const limits = { jobs: { kind: "concurrency", max, lease } };
    const ids = seeded(1_000 + run);
    const idsAgain = seeded(1_000 + run);
    const viaScript = new RateLimiter(store, limits, { now: () => clock.now, random: ids });
    const viaCore = new RateLimiter(memory, limits, { now: () => clock.now, random: idsAgain });
    const key = `run-${run}`;
    const leases = [];
    const expiresAt = [];
    for (let step = 0; step < 60 && checked < OPS; step++, checked++) {
      // Often exactly onto a lease's expiry (where a slot turns free), else a random step.
      const expiries = expiresAt.filter((at) => at >= clock.now);
      if (expiries.length > 0 && draw() < 0.25) clock.now = expiries[Math.floor(draw() * expiries.length)];
      else clock.now += draw() < 0.3 ? 0 : Math.floor(draw() * 200_000);
      const choice = draw();
      let pair;
      if (choice < 0.45 || leases.length === 0) {
        const count = 1 + Math.floor(draw() * (max + 1)); // max + 1: COUNT_EXCEEDS_MAX too
        const answers = [];
        for (const limiter of [viaScript, viaCore]) answers.push(await limiter.limit("jobs", { key, count }).catch((error) => ({ code: error.code ?? String(error) })));
        if (answers[0].ok && answers[1].ok) {
          leases.push(answers.map((answer) => answer.lease.toJSON()));
          expiresAt.push(answers[1].lease.expiresAt);
        }
        pair = answers.map((answer) => (answer.ok ? { ok: true, id: answer.lease.id, slots: [...answer.lease.slots], expiresAt: answer.lease.expiresAt } : answer));
      } else {
        const [data, dataCore] = leases[Math.floor(draw() * leases.length)];
        const forged = draw() < 0.15;
        const id = forged ? data.id + 1 : data.id;
        const handles = [viaScript.lease({ ...data, id }), viaCore.lease({ ...dataCore, id })];
        if (choice < 0.75) pair = [await outcome(handles[0].release()), await outcome(handles[1].release())];
        else {
          const ms = 1 + Math.floor(draw() * 600_000);
          pair = [await outcome(handles[0].extend(ms)), await outcome(handles[1].extend(ms))];
          if (pair[1].expiresAt !== undefined) expiresAt.push(pair[1].expiresAt);
        }
      }
      assert.deepEqual(pair[0], pair[1], `run ${run} step ${step}: the script answered ${JSON.stringify(pair[0])}, the core ${JSON.stringify(pair[1])}`);
      for (let slot = 0; slot < max; slot++) {
        const ref = { name: "jobs", key, shard: slot };
        const [stored, expected] = [await store.read(ref), memory.read(ref)];
        assert.ok(
          (stored === null && expected === null) || (stored !== null && expected !== null && Object.is(stored.value, expected.value) && Object.is(stored.ts, expected.ts)),
          `run ${run} step ${step} slot ${slot}: Redis holds ${JSON.stringify(stored)}, the core ${JSON.stringify(expected)}`,
        );
      }
    }
  }
  // Bad input (a count past max) fails on the core before the script; the rest is the script's.
  assert.ok(scriptCalls >= OPS * 0.8, `the script decided ${scriptCalls} of ${OPS} operations`);
});
