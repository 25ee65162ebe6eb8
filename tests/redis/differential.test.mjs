// The decision script (ratebound/redis DECIDE_SCRIPT, through the store's own `decide`) against the
// Rust core (its WebAssembly exports `rb_plan` and `rb_decide`, which are what the package runs),
// on a real redis-server: random batches of decisions — both kinds, reservations, maxReserved
// (0 included), capacity ≠ rate, 1 to 16 shards (3+ reach the second shard and the combined
// path), all-or-nothing and each-its-own-call batches, states near 0, debts, tiny and huge
// numbers, clocks that step back, corrupt stored values — planned by the core, decided by both.
// Every answer (granted, refused, error; the wait), every `wrote` flag, every stored number (GET
// after the script, in the same MULTI) and every TTL must be equal, numbers with `Object.is`.
//
// Reproduce a failure with DIFF_SEED=<seed printed in the message> node --test tests/redis/differential.test.mjs
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createClient } from "redis";
import { DECIDE_SCRIPT, redisKey, redisStore } from "../../pkg/dist/redis.js";
import { randomTools, seeded, show } from "../js/helpers.mjs";
import { startRedis } from "./servers.mjs";
import { KINDS, coreDecide, corePlan } from "./core.mjs";

/** A number as a stored string: JavaScript's shortest form, or 17 significant digits (as Lua's %.17g writes), -0 kept. */
const stored = (x, long) => (Object.is(x, -0) ? "-0" : long && x !== 0 ? x.toPrecision(17) : String(x));

/** The same number spelled with a leading zero and, when it has a fraction, a trailing one: valid text both sides read as the same number. */
const padded = (text) => {
  if (/e/.test(text)) return text;
  const sign = text.startsWith("-") ? "-" : "";
  const digits = text.slice(sign.length);
  return `${sign}0${digits}${digits.includes(".") ? "0" : ""}`;
};

/** Stored text in the plain form the script's fast path reads itself (no exponent). */
const PLAIN_STATE = /^-?\d+(?:\.\d+)?,-?\d+(?:\.\d+)?$/;

// ---------------------------------------------------------------------------------------------
// Random batches.
// ---------------------------------------------------------------------------------------------
function generator(seed) {
  const { random, chance, pick, integer, logUniform } = randomTools(seed);

  const rate = () => pick([() => integer(1, 100), () => logUniform(-3, 7), () => pick([1, 2, 3, 5, 10, 60, 1000, 40_000]), () => 0.001 + random() * 1000])();
  const period = () => pick([() => pick([1, 7, 1000, 60_000, 3_600_000, 86_400_000]), () => integer(2, 10_000_000), () => logUniform(0.5, 9), () => 2 + random() * 5000])();
  const clock = () =>
    pick([
      () => 0,
      () => integer(0, 1_000_000),
      () => 1_700_000_000_000 + integer(0, 100_000_000_000),
      () => 1_700_000_000_000 + random() * 1e6,
      () => logUniform(0, 15.5),
      () => -integer(0, 1_000_000_000_000),
      () => random() * 1e-6,
    ])();

  function limit(now) {
    const kind = pick(KINDS);
    const config = { kind, rate: rate(), period: period() };
    if (chance(0.6)) {
      config.capacity = pick([() => 0, () => -0, () => config.rate, () => config.rate * integer(2, 10), () => config.rate * random(), () => logUniform(-3, 8), () => integer(0, 1000)])();
    }
    if (chance(0.5)) config.maxReserved = pick([() => 0, () => 0, () => 1, () => 5.5, () => config.rate * random(), () => logUniform(-3, 9), () => 1e300])();
    config.shards = pick([1, 1, 1, 1, 2, 2, 3, 3, 4, 5, 8, 16, integer(1, 16)]);
    if (kind === "fixed window" && chance(0.5)) config.start = pick([() => now - random() * config.period, () => now - config.period * integer(0, 1000), () => now + integer(0, 5000), () => 0, () => -0])();
    return config;
  }

  /** A count: mostly a fraction of what validation allows, sometimes whole, zero, tiny or huge. */
  function count(config, reserve) {
    const shardFactor = config.shards < 3 ? 1 : config.shards / 2;
    const max = (config.capacity ?? config.rate) / shardFactor;
    const largest = reserve ? (config.maxReserved === undefined ? 3 * max + 1 : max + config.maxReserved / shardFactor) : max;
    return pick([() => largest * random(), () => largest * random(), () => largest, () => 0, () => integer(1, 5), () => random() * 1e-9, () => (reserve && config.maxReserved === undefined ? logUniform(0, 12) : largest * random())])();
  }

  /** A stored state of a shard (per-shard capacity `capacity`), or a corrupt or absent one. */
  function state(now, periodMs, capacity) {
    if (chance(0.25)) return null;
    if (chance(0.005)) return { corrupt: pick(["x", "Infinity,0", "1,2,3", "1e999,5", "null", '"1,1700000000000"', "5", "", " 1,2", "0x10,1"]) };
    // Text the fast path's pattern nearly accepts: corrupt to both sides, so the general path must answer.
    if (chance(0.004)) return { corrupt: pick(["1.,2", "1,2.", ".5,2", "+1,2", "1e5,2", "1,2 ", "-,2", "1,-", "1.5.5,2", "1,,2", "-0.,5", "1,2e+", "1E+5,2"]) };
    const value = pick([
      () => capacity,
      () => 0,
      () => -0,
      () => pick([5e-324, -5e-324, 1e-300, -1e-300, 2.2250738585072014e-308]),
      () => (random() - 0.5) * 1e-9,
      () => random() * capacity,
      () => -random() * capacity * 3,
      () => -logUniform(-3, 12),
      () => -pick([1e300, 1.7e308, 1e200]),
      () => capacity - integer(1, 20),
      () => capacity * (1 + random()),
    ])();
    const ts = pick([
      () => now,
      () => now - random() * periodMs,
      () => now - periodMs * integer(1, 5),
      () => now - periodMs * integer(1, 100) - random(),
      () => now - logUniform(0, 13),
      () => now + integer(1, 100_000),
      () => now + logUniform(0, 12),
      () => clock(),
    ])();
    return { value, ts };
  }

  return function next(caseIndex) {
    const baseNow = clock();
    const limits = [limit(baseNow), limit(baseNow)];
    const size = pick([1, 1, 1, 2, 2, 3, 4]);
    const all = size > 1 ? chance(0.35) : chance(0.1);
    const sameNow = all || chance(0.7);
    const items = [];
    for (let index = 0; index < size; index++) {
      const which = chance(0.7) ? 0 : 1;
      const reserve = chance(0.4);
      const now = sameNow ? baseNow : baseNow + pick([0, -integer(1, 100_000), integer(1, 100_000), -logUniform(0, 11)]);
      items.push({ name: `${"ab"[which]}${caseIndex}`, key: pick(["k0", "k0", "k1"]), which, reserve, write: chance(0.8), now, count: count(limits[which], reserve) });
    }
    return { limits, items, all, sameNow, state, long: chance(0.5), padded: chance(0.05) };
  };
}

/** The TTL a written state gets: PX = ceil(fullAt - now), at least 1; none (-1) past 9e12 ms or when never full. */
function expectedTtl(fullAt, now) {
  const ms = Math.ceil(fullAt - now);
  return ms <= 9e12 ? Math.max(1, ms) : -1;
}

// ---------------------------------------------------------------------------------------------
// One case through the script: the store's own decide, on a client that wraps its EVALSHA in one
// MULTI with the SETs that lay out the stored states before it and the GETs and PTTLs after it
// (time stands still inside a MULTI, so no state expires between the script and its GET).
// ---------------------------------------------------------------------------------------------
function scriptClient(admin, setup, keys, seen) {
  const transaction = (add) => async (what, options) => {
    const multi = admin.multi();
    for (const [key, value] of setup) multi.set(key, value);
    add(multi, what, options);
    for (const key of keys) multi.get(key);
    for (const key of keys) multi.pTTL(key);
    const replies = await multi.exec();
    seen.get = replies.slice(setup.length + 1, setup.length + 1 + keys.length);
    seen.ttl = replies.slice(setup.length + 1 + keys.length);
    return replies[setup.length];
  };
  return {
    get: () => Promise.reject(new Error("the decision path never reads alone")),
    evalSha: transaction((multi, sha, options) => multi.evalSha(sha, options)),
    eval: transaction((multi, script, options) => multi.eval(script, options)),
  };
}

const decode = (text) => {
  if (text === null) return null;
  const [value, ts] = text.split(",").map(Number);
  return { value, ts };
};
const sameState = (a, b) => (a === null || b === null ? a === b : Object.is(a.value, b.value) && Object.is(a.ts, b.ts));
const sameDecision = (a, b) => (a === null || b === null ? a === b : a.ok === b.ok && Object.is(a.retryAfter, b.retryAfter));

/** Runs `cases` cases from `seed`: both sides, every comparison. */
async function compare(admin, seed, cases) {
  const next = generator(seed);
  const random = seeded(seed ^ 0x5a5a5a5a);
  const stats = { cases: 0, decisions: 0, skipped: 0, granted: 0, refused: 0, errors: 0, combined: 0, secondShard: 0, allRefused: 0, reserved: 0, maxReservedZero: 0, clockBack: 0, corrupt: 0, expiring: 0, noTtl: 0, negativeZero: 0, fastPath: 0, fastPathRewritten: 0 };
  const mismatches = [];
  const inFlight = new Set();
  for (let caseIndex = 0; caseIndex < cases; caseIndex++) {
    const testCase = next(caseIndex);
    const batch = corePlan(testCase.items.map((item) => ({ ...item, config: testCase.limits[item.which] })), testCase.all, random);
    if (batch === null) {
      stats.skipped++;
      continue;
    }
    const states = batch.refs.map((ref) => testCase.state(batch.items[0].now, ref.periodMs, ref.capacity));
    const corrupt = states.some((state) => state !== null && "corrupt" in state);
    const keys = batch.refs.map((ref) => redisKey(ref));
    const spell = (x) => (testCase.padded ? padded(stored(x, testCase.long)) : stored(x, testCase.long));
    const setup = states.flatMap((state, index) => (state === null ? [] : [[keys[index], "corrupt" in state ? state.corrupt : `${spell(state.value)},${spell(state.ts)}`]]));
    const expected = corrupt ? null : coreDecide(batch, states);
    stats.cases++;
    stats.decisions += batch.items.length;
    if (corrupt) stats.corrupt++;
    else {
      for (const [index, decision] of expected.decided.entries()) {
        if (decision === null) stats.errors++;
        else if (decision.ok) stats.granted++;
        else stats.refused++;
        if (decision?.ok && expected.shares[index][0] !== 0 && expected.shares[index][1] !== 0) stats.combined++;
        const [first, second] = batch.items[index].reads;
        if (decision?.ok && second !== undefined && expected.after[second].fullAt !== null && expected.after[first].fullAt === null) stats.secondShard++;
        if (decision?.ok && decision.retryAfter !== undefined) stats.reserved++;
      }
      if (batch.all && expected.status === 0) stats.allRefused++;
      if (batch.items.some((item) => item.maxReserved === 0 && item.reserve)) stats.maxReservedZero++;
      if (states.some((state, index) => state !== null && state.ts > batch.items[0].now)) stats.clockBack++;
      if (states.some((state) => state !== null && Object.is(state.value, -0))) stats.negativeZero++;
      // The script's fast path: one item on one state, stored in the plain form or absent, granted without a wait.
      const decided = expected.decided[0];
      if (batch.items.length === 1 && batch.refs.length === 1 && (setup.length === 0 || PLAIN_STATE.test(setup[0][1])) && decided?.ok && decided.retryAfter === undefined) {
        stats.fastPath++;
        if (setup.length === 1 && expected.wrote[0]) stats.fastPathRewritten++;
      }
    }
    const seen = {};
    const differ = (what, ours, core) => mismatches.push({ seed, caseIndex, what, ours, core, batch, states });
    const run = redisStore(scriptClient(admin, setup, keys, seen))
      .decide({ refs: batch.refs.map(({ name, key, shard }) => ({ name, key, shard })), items: batch.items, all: batch.all })
      .then((answer) => {
        states.forEach((state, index) => {
          const want = state === null ? null : "corrupt" in state ? state.corrupt : state;
          const got = answer.stored[index];
          if (typeof want === "string" ? got !== want : !sameState(got, want)) differ(`stored[${index}] as read`, got, want);
        });
        if (corrupt) {
          if (answer.wrote.some(Boolean) || answer.decided.some((decision) => decision !== null)) differ("a corrupt state decided or wrote", answer, null);
          setup.forEach(([key, value], index) => {
            if (seen.get[keys.indexOf(key)] !== value) differ(`key ${index} after`, seen.get[keys.indexOf(key)], value);
          });
          return;
        }
        answer.decided.forEach((decision, index) => {
          if (!sameDecision(decision, expected.decided[index])) differ(`decision of item ${index}`, decision, expected.decided[index]);
        });
        if (answer.wrote.join() !== expected.wrote.join()) differ("wrote", answer.wrote, expected.wrote);
        expected.after.forEach(({ state, fullAt }, index) => {
          const got = decode(seen.get[index]);
          if (!sameState(got, state)) differ(`state of ref ${index} after`, got, state);
          const ttl = seen.ttl[index];
          if (fullAt === null) {
            if (ttl !== (state === null ? -2 : -1)) differ(`TTL of unwritten ref ${index}`, ttl, -1);
            return;
          }
          if (!testCase.sameNow && !batch.all) return; // which item's clock set the TTL is not visible here
          const want = expectedTtl(fullAt, batch.items[0].now);
          if (want === -1) stats.noTtl++;
          else stats.expiring++;
          if (want === -1 ? ttl !== -1 : !(ttl <= want && ttl >= Math.max(0, want - 1_000))) differ(`TTL of ref ${index}`, ttl, want);
        });
      })
      .catch((error) => differ("the call", String(error?.stack ?? error), "an answer"));
    inFlight.add(run);
    run.finally(() => inFlight.delete(run));
    if (inFlight.size >= 64) await Promise.race(inFlight);
    if (caseIndex % 5_000 === 4_999) await admin.flushDb(); // keeps the server's memory small; keys are per case
  }
  await Promise.all(inFlight);
  return { stats, mismatches };
}

function report(seed, { stats, mismatches }) {
  if (mismatches.length === 0) return "";
  const first = mismatches[0];
  return (
    `seed ${seed} (rerun with DIFF_SEED=${seed}): ${mismatches.length} differences in ${stats.decisions} decisions. First, case #${first.caseIndex}, ${first.what}:\n` +
    `  script: ${show(first.ours)}\n  core:   ${show(first.core)}\n  stored: ${show(first.states)}\n  batch:  ${show(first.batch)}`
  );
}

describe("the decision script against the core, on a real redis-server", () => {
  let server;
  let admin;
  before(async () => {
    server = await startRedis();
    admin = createClient({ url: server.url });
    admin.on("error", () => {});
    await admin.connect();
    await admin.scriptLoad(DECIDE_SCRIPT);
  });
  after(async () => {
    await admin?.quit().catch(() => {});
    server?.stop();
  });

  it("hand-picked batches: a reservation, a refusal, a corrupt state, and the Upstash-shaped strings", async () => {
    const now = 1_700_000_000_000;
    const bucket = { kind: 0, rate: 10, period: 60_000, capacity: 10, maxReserved: null, shards: 1, start: null, reserve: false, write: true, now, fresh: [{ value: 10, ts: now }] };
    const store = redisStore(admin);
    const refs = [{ name: "hand", key: "ada", shard: 0 }];
    const answer = await store.decide({ refs, all: false, items: [{ ...bucket, reads: [0], count: 3 }, { ...bucket, reads: [0], count: 8 }, { ...bucket, reads: [0], count: 8, reserve: true }] });
    assert.deepEqual(answer, { stored: [null], wrote: [true, false, true], decided: [{ ok: true }, { ok: false, retryAfter: 6_000 }, { ok: true, retryAfter: 6_000 }] });
    assert.equal(await admin.get("ratebound:{hand:ada}:0"), `-1,${now}`);
    for (const corrupt of ["null", '"1,1700000000000"']) {
      await admin.set("ratebound:{hand:ada}:0", corrupt);
      const refused = await store.decide({ refs, all: false, items: [{ ...bucket, reads: [0], count: 1 }] });
      assert.deepEqual(refused, { stored: [corrupt], wrote: [false], decided: [null] });
      assert.equal(await admin.get("ratebound:{hand:ada}:0"), corrupt);
    }
  });

  const fixedSeed = process.env.DIFF_SEED === undefined ? 0x7ed15 : Number(process.env.DIFF_SEED);
  it(`60,000 random batches from seed ${fixedSeed} (over 100,000 decisions) are equal bit for bit`, { timeout: 180_000 }, async (t) => {
    const outcome = await compare(admin, fixedSeed, 60_000);
    t.diagnostic(`seed ${fixedSeed}: ${show(outcome.stats)}`);
    assert.equal(outcome.mismatches.length, 0, report(fixedSeed, outcome));
    assert.ok(outcome.stats.decisions >= 100_000, `${outcome.stats.decisions} decisions`);
    const { stats } = outcome;
    for (const what of ["granted", "refused", "errors", "combined", "secondShard", "allRefused", "reserved", "maxReservedZero", "clockBack", "corrupt", "expiring", "noTtl", "negativeZero", "fastPath", "fastPathRewritten"]) {
      assert.ok(stats[what] >= 50, `the generator reached "${what}" only ${stats[what]} times: ${show(stats)}`);
    }
    assert.ok(stats.skipped < stats.cases / 4, `too many batches refused before any read: ${show(stats)}`);
  });

  it("10,000 random batches from a fresh seed are equal bit for bit", { timeout: 120_000 }, async (t) => {
    const seed = Math.floor(Math.random() * 2 ** 31);
    const outcome = await compare(admin, seed, 10_000);
    t.diagnostic(`fresh seed ${seed}: ${show(outcome.stats)}`);
    assert.equal(outcome.mismatches.length, 0, report(seed, outcome));
  });
});
