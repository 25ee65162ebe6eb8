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
import { KINDS, coreDecide, corePlan, storeRefs } from "./core.mjs";

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
    if (kind === "fixed window" && chance(0.2)) calendar(config, now);
    return config;
  }

  /** Makes `config` a calendar quota (unsharded), anchored or not, on a month end or Feb 29 now and then. */
  function calendar(config, now) {
    config.period = pick(["day", "week", "month", "year"]);
    config.shards = 1;
    config.start = pick([() => undefined, () => now - random() * 4e10, () => Date.UTC(2024, 0, 31), () => Date.UTC(2024, 1, 29, 12), () => -integer(0, 1e12), () => 0])();
    if (config.start === undefined) delete config.start;
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

  /** `size` items on the two limits of case `caseIndex` (names `a…` and `b…`, keys k0 and k1). */
  function items(caseIndex, limits, size, baseNow, sameNow) {
    const made = [];
    for (let index = 0; index < size; index++) {
      const which = chance(0.7) ? 0 : 1;
      const reserve = chance(0.4);
      const now = sameNow ? baseNow : baseNow + pick([0, -integer(1, 100_000), integer(1, 100_000), -logUniform(0, 11)]);
      made.push({ name: `${"ab"[which]}${caseIndex}`, key: pick(["k0", "k0", "k1"]), which, reserve, write: chance(0.8), now, count: count(limits[which], reserve) });
    }
    return made;
  }

  /** One call: a batch of 1 to 4 items (all or nothing, or each its own). */
  function next(caseIndex) {
    const baseNow = clock();
    const limits = [limit(baseNow), limit(baseNow)];
    const size = pick([1, 1, 1, 2, 2, 3, 4]);
    const all = size > 1 ? chance(0.35) : chance(0.1);
    const sameNow = all || chance(0.7);
    return { limits, items: items(caseIndex, limits, size, baseNow, sameNow), all, sameNow, state, long: chance(0.5), padded: chance(0.05) };
  }

  /**
   * A group commit: 2 to 12 calls on the same two limits and keys, decided in one EVALSHA in
   * order, each call a batch of its own (mostly one item; some a limitAll of several).
   */
  function bundle(caseIndex) {
    const baseNow = clock();
    const limits = [limit(baseNow), limit(baseNow)];
    const sameNow = chance(0.7);
    const calls = [];
    for (let call = integer(2, 12); call > 0; call--) {
      const size = pick([1, 1, 1, 1, 1, 2, 3]);
      const all = size > 1 ? chance(0.5) : chance(0.05);
      calls.push({ items: items(caseIndex, limits, size, baseNow, sameNow), all });
    }
    return { limits, calls, sameNow, state, long: chance(0.5), padded: chance(0.05) };
  }

  return { next, bundle };
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
  await admin.flushDb(); // keys are per case, and cases of another test have the same names
  const { next } = generator(seed);
  const random = seeded(seed ^ 0x5a5a5a5a);
  const stats = { cases: 0, decisions: 0, skipped: 0, granted: 0, refused: 0, errors: 0, combined: 0, secondShard: 0, allRefused: 0, reserved: 0, maxReservedZero: 0, clockBack: 0, corrupt: 0, expiring: 0, noTtl: 0, negativeZero: 0, fastPath: 0, fastPathRewritten: 0, calendar: 0 };
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
      stats.calendar += batch.items.filter((item) => item.window !== null).length;
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

// ---------------------------------------------------------------------------------------------
// Group commits: several calls handed to one store in the same tick go in ONE EVALSHA (the
// script's "many calls" layout), decided in order. The core decides the same calls one by one,
// each on the states the earlier ones left: what each call saw, its answers, its wrote flags, and
// every state and TTL after, must be equal.
// ---------------------------------------------------------------------------------------------
async function compareMany(admin, seed, bundles) {
  await admin.flushDb(); // keys are per bundle, and cases of another test have the same names
  const { bundle } = generator(seed);
  const random = seeded(seed ^ 0x3c3c3c3c);
  const stats = { bundles: 0, calls: 0, decisions: 0, skipped: 0, granted: 0, refused: 0, errors: 0, allCalls: 0, allRefused: 0, chained: 0, corrupt: 0, afterCorrupt: 0, quick: 0, sharded: 0, checks: 0, reserved: 0, calendar: 0 };
  const mismatches = [];
  const inFlight = new Set();
  for (let bundleIndex = 0; bundleIndex < bundles; bundleIndex++) {
    const testCase = bundle(bundleIndex);
    const plans = [];
    for (const call of testCase.calls) {
      const planned = corePlan(call.items.map((item) => ({ ...item, config: testCase.limits[item.which] })), call.all, random);
      if (planned === null) stats.skipped++;
      else plans.push(planned);
    }
    if (plans.length < 2) continue;
    // Every key once, with its state before the bundle.
    const held = new Map();
    const spell = (x) => (testCase.padded ? padded(stored(x, testCase.long)) : stored(x, testCase.long));
    const setup = [];
    for (const planned of plans) {
      for (const ref of planned.refs) {
        const key = redisKey(ref);
        if (held.has(key)) continue;
        const state = testCase.state(planned.items[0].now, ref.periodMs, ref.capacity);
        held.set(key, state);
        if (state !== null) setup.push([key, "corrupt" in state ? state.corrupt : `${spell(state.value)},${spell(state.ts)}`]);
      }
    }
    const keys = [...held.keys()];
    // The core, one call after another.
    const lastWrite = new Map(); // key -> { fullAt, now } of the last call that wrote it
    const expected = plans.map((planned) => {
      const seen = planned.refs.map((ref) => held.get(redisKey(ref)));
      if (seen.some((state) => state !== null && "corrupt" in state)) return { seen, decision: null };
      const decision = coreDecide(planned, seen);
      decision.after.forEach(({ state, fullAt }, index) => {
        if (fullAt === null) return;
        const key = redisKey(planned.refs[index]);
        if (seen[index] !== state) stats.chained += lastWrite.has(key) ? 1 : 0;
        held.set(key, state);
        lastWrite.set(key, { fullAt, now: planned.items[0].now });
      });
      return { seen, decision };
    });
    stats.bundles++;
    for (const [index, planned] of plans.entries()) {
      const { seen, decision } = expected[index];
      stats.calls++;
      stats.decisions += planned.items.length;
      if (planned.all) stats.allCalls++;
      if (planned.items.some((item) => item.shards > 1)) stats.sharded++;
      stats.calendar += planned.items.filter((item) => item.window !== null).length;
      if (planned.items.some((item) => !item.write)) stats.checks++;
      if (decision === null) {
        stats.corrupt++;
        continue;
      }
      if (expected.slice(0, index).some((earlier) => earlier.decision === null)) stats.afterCorrupt++;
      for (const decided of decision.decided) {
        if (decided === null) stats.errors++;
        else if (decided.ok) stats.granted++;
        else stats.refused++;
        if (decided?.ok && decided.retryAfter !== undefined) stats.reserved++;
      }
      if (planned.all && decision.status === 0) stats.allRefused++;
      const only = decision.decided[0];
      if (planned.items.length === 1 && planned.refs.length === 1 && only?.ok && only.retryAfter === undefined) stats.quick++;
      void seen;
    }
    const seenAfter = {};
    let evalShas = 0;
    const client = scriptClient(admin, setup, keys, seenAfter);
    // configGet: the store's one-time eviction-policy check asks CONFIG GET, not a script (not a decision).
    const counted = { ...client, configGet: (parameter) => admin.configGet(parameter), evalSha: (...args) => (evalShas++, client.evalSha(...args)), eval: (...args) => (evalShas++, client.eval(...args)) };
    const differ = (what, ours, core) => mismatches.push({ seed, caseIndex: bundleIndex, what, ours, core, batch: plans, states: [...held] });
    const store = redisStore(counted);
    // Handed to the store in one tick: one round trip for all of them.
    const answers = plans.map((planned) => store.decide({ refs: storeRefs(planned), items: planned.items, all: planned.all }));
    const run = Promise.all(answers)
      .then((got) => {
        if (evalShas !== 1) differ("EVALSHAs for the bundle", evalShas, 1);
        got.forEach((answer, index) => {
          const { seen, decision } = expected[index];
          seen.forEach((state, ref) => {
            const want = state === null ? null : "corrupt" in state ? state.corrupt : state;
            const have = answer.stored[ref];
            if (typeof want === "string" ? have !== want : !sameState(have, want)) differ(`call ${index}: stored[${ref}] as it saw it`, have, want);
          });
          if (decision === null) {
            if (answer.wrote.some(Boolean) || answer.decided.some((decided) => decided !== null)) differ(`call ${index} on a corrupt state decided or wrote`, answer, null);
            return;
          }
          answer.decided.forEach((decided, item) => {
            if (!sameDecision(decided, decision.decided[item])) differ(`call ${index}: decision of item ${item}`, decided, decision.decided[item]);
          });
          if (answer.wrote.join() !== decision.wrote.join()) differ(`call ${index}: wrote`, answer.wrote, decision.wrote);
        });
        keys.forEach((key, index) => {
          const want = held.get(key);
          const have = seenAfter.get[index];
          if (want !== null && "corrupt" in want) {
            if (have !== want.corrupt) differ(`corrupt key ${key} after`, have, want.corrupt);
            return;
          }
          if (!sameState(decode(have), want)) differ(`state of ${key} after`, decode(have), want);
          const ttl = seenAfter.ttl[index];
          const last = lastWrite.get(key);
          if (last === undefined) {
            if (ttl !== (want === null ? -2 : -1)) differ(`TTL of unwritten ${key}`, ttl, -1);
            return;
          }
          if (!testCase.sameNow) return; // which item's clock set the TTL is not visible here
          const wantTtl = expectedTtl(last.fullAt, last.now);
          if (wantTtl === -1 ? ttl !== -1 : !(ttl <= wantTtl && ttl >= Math.max(0, wantTtl - 1_000))) differ(`TTL of ${key}`, ttl, wantTtl);
        });
      })
      .catch((error) => differ("the calls", String(error?.stack ?? error), "answers"));
    inFlight.add(run);
    run.finally(() => inFlight.delete(run));
    if (inFlight.size >= 32) await Promise.race(inFlight);
    if (bundleIndex % 2_000 === 1_999) await admin.flushDb();
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
    assert.deepEqual(answer, { stored: [null], wrote: [true, false, true], decided: [{ ok: true }, { ok: false, retryAfter: 6_000 }, { ok: true, retryAfter: 6_000 }], batchSize: 1 });
    assert.equal(await admin.get("ratebound:{hand:ada}:0"), `-1,${now}`);
    for (const corrupt of ["null", '"1,1700000000000"']) {
      await admin.set("ratebound:{hand:ada}:0", corrupt);
      const refused = await store.decide({ refs, all: false, items: [{ ...bucket, reads: [0], count: 1 }] });
      assert.deepEqual(refused, { stored: [corrupt], wrote: [false], decided: [null], batchSize: 1 });
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
    for (const what of ["granted", "refused", "errors", "combined", "secondShard", "allRefused", "reserved", "maxReservedZero", "clockBack", "corrupt", "expiring", "noTtl", "negativeZero", "fastPath", "fastPathRewritten", "calendar"]) {
      assert.ok(stats[what] >= 50, `the generator reached "${what}" only ${stats[what]} times: ${show(stats)}`);
    }
    assert.ok(stats.skipped < stats.cases / 4, `too many batches refused before any read: ${show(stats)}`);
  });

  it(`12,000 random group commits from seed ${fixedSeed} (over 60,000 calls, one EVALSHA each) are equal to the calls decided one by one`, { timeout: 180_000 }, async (t) => {
    const outcome = await compareMany(admin, fixedSeed, 12_000);
    t.diagnostic(`seed ${fixedSeed}: ${show(outcome.stats)}`);
    assert.equal(outcome.mismatches.length, 0, report(fixedSeed, outcome));
    const { stats } = outcome;
    assert.ok(stats.calls >= 60_000, `${stats.calls} calls`);
    for (const what of ["granted", "refused", "errors", "allCalls", "allRefused", "chained", "corrupt", "afterCorrupt", "quick", "sharded", "checks", "reserved", "calendar"]) {
      assert.ok(stats[what] >= 50, `the generator reached "${what}" only ${stats[what]} times: ${show(stats)}`);
    }
  });

  it("2,000 random group commits from a fresh seed are equal to the calls decided one by one", { timeout: 120_000 }, async (t) => {
    const seed = Math.floor(Math.random() * 2 ** 31);
    const outcome = await compareMany(admin, seed, 2_000);
    t.diagnostic(`fresh seed ${seed}: ${show(outcome.stats)}`);
    assert.equal(outcome.mismatches.length, 0, report(seed, outcome));
  });

  it("10,000 random batches from a fresh seed are equal bit for bit", { timeout: 120_000 }, async (t) => {
    const seed = Math.floor(Math.random() * 2 ** 31);
    const outcome = await compare(admin, seed, 10_000);
    t.diagnostic(`fresh seed ${seed}: ${show(outcome.stats)}`);
    assert.equal(outcome.mismatches.length, 0, report(seed, outcome));
  });
});
