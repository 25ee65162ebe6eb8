// The settle scenarios every host runs (not a test file itself): an LLM-style flow of grants
// settled above and below their estimate and cancelled, a grant's data settled by another limiter
// instance, N concurrent settles of one grant (exactly one wins; without the host's transaction
// more than one refunds), and bad actuals that write nothing. Runtime-neutral (Node, Deno,
// workerd, Convex): no imports, its own assertions.
//
// A harness `h` gives:
//   kind                 "token bucket" or "fixed window";
//   connect(limits)      a RateLimiter on the host's transactional store, on a new connection or
//                        instance each time (the same data);
//   bare(limits)         optional: a RateLimiter on the same data through a store without the
//                        host's transaction (e.g. bareStore(store));
//   clock                optional: `{ now }` the limiters read, moved by hand (else real time,
//                        and periods of a day keep refills under `epsilon`);
//   epsilon              tolerance of token comparisons (0 with a hand-moved clock).

/** An assertion failure that names what was checked. */
function fail(what, actual, expected) {
  throw new Error(`${what}: got ${JSON.stringify(actual)}, expected ${JSON.stringify(expected)}`);
}
function equal(actual, expected, what) {
  if (actual !== expected) fail(what, actual, expected);
}
function near(actual, expected, epsilon, what) {
  if (!(Math.abs(actual - expected) <= epsilon)) fail(what, actual, expected);
}
async function rejectsWith(promise, code, what) {
  try {
    await promise;
  } catch (error) {
    if (error?.code !== code && error?.data?.code !== code) fail(`${what} (message: ${error?.message})`, error?.code ?? error?.data, code);
    return error;
  }
  return fail(what, "fulfilled", `rejected with ${code}`);
}

let keys = 0;
/** A key no other scenario uses. */
export const freshKey = (what) => `${what}-${++keys}-${Math.random().toString(36).slice(2, 8)}`;

/**
 * The limits of the scenarios: `llm` (1000 tokens a period, 500 of debt), `llmSharded`
 * (4000 a period on 4 shards: 1000 and 250 of debt each). A fixed window starts at 0.
 */
export function settleLimits(kind, period) {
  const start = kind === "fixed window" ? { start: 0 } : {};
  return {
    llm: { kind, rate: 1000, period, maxReserved: 500, ...start },
    llmSharded: { kind, rate: 4000, period, shards: 4, maxReserved: 1000, ...start },
  };
}

/**
 * A store over `store`'s own read and write, without its transaction: each read waits
 * `delayMs` before answering, so concurrent calls decide on what they read before any writes.
 */
export function bareStore(store, delayMs = 5) {
  return {
    read: async (ref) => {
      const state = await store.read(ref);
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      return state;
    },
    write: (ref, state, info) => store.write(ref, state, info),
  };
}

const periodOf = (h) => (h.clock ? 60_000 : 86_400_000);
const epsilonOf = (h) => h.epsilon ?? (h.clock ? 0 : 0.05);
const valueOf = async (limiter, name, key, shards) => (await limiter.getValue(name, { key, ...(shards ? { sampleShards: shards } : {}) })).value;
const settledOf = (result, refunded, charged, unpaid, epsilon, what) => {
  near(result.refunded, refunded, epsilon, `${what}: refunded`);
  near(result.charged, charged, epsilon, `${what}: charged`);
  near(result.unpaid, unpaid, epsilon, `${what}: unpaid`);
};

/**
 * Grant estimates, settle below (refund) and above (charge, bounded by maxReserved), cancel, and
 * settle twice: every answer and the stored value are what the refund rule says.
 */
export async function llmFlow(h) {
  const limits = settleLimits(h.kind, periodOf(h));
  const limiter = await h.connect(limits);
  const key = freshKey("llm");
  const eps = epsilonOf(h);
  const take = async (count) => {
    const granted = await limiter.limit("llm", { key, count, reserve: true, grant: true });
    equal(granted.ok, true, `a grant of ${count} is granted`);
    return granted.grant;
  };
  const value = () => valueOf(limiter, "llm", key);

  const first = await take(300);
  near(await value(), 700, eps, "300 taken");
  settledOf(await first.settle(100), 200, 0, 0, eps, "used 100 of 300");
  near(await value(), 900, eps, "200 given back");

  const second = await take(300);
  settledOf(await second.settle(450), 0, 150, 0, eps, "used 450 of 300");
  near(await value(), 450, eps, "150 more taken");

  const third = await take(400);
  settledOf(await third.cancel(), 400, 0, 0, eps, "cancelled 400");
  near(await value(), 450, eps, "a cancel gives all of it back");

  const fourth = await take(400);
  const over = await fourth.settle(1400);
  settledOf(over, 0, 550, 450, eps, "used 1400 of 400 with 50 left and maxReserved 500");
  equal(typeof over.retryAfter, "number", "debt comes with retryAfter");
  near(await value(), -500, eps, "in debt down to maxReserved");

  await rejectsWith(first.settle(0), "GRANT_SETTLED", "a handle settles once");
  await rejectsWith(limiter.settle(first.data, 0), "GRANT_SETTLED", "its data settles once too");
  near(await value(), -500, eps, "a refused second settle writes nothing");

  if (h.clock) {
    const late = await (await h.connect(limits)).limit("llm", { key: freshKey("late"), count: 300, grant: true });
    h.clock.now += limits.llm.period;
    settledOf(await late.grant.cancel(), 0, 0, 0, 0, "a cancel after the limit refilled gives nothing back");
  }
}

/**
 * A grant's data through JSON, settled by another limiter instance: a sharded grant gives back
 * to the shards it took from, and the first instance's handle then finds it settled.
 */
export async function serialisedSettle(h) {
  const limits = settleLimits(h.kind, periodOf(h));
  const eps = epsilonOf(h);
  const key = freshKey("serialised");
  const charging = await h.connect(limits);
  const granted = await charging.limit("llmSharded", { key, count: 600, grant: true });
  equal(granted.ok, true, "a sharded grant of 600 is granted");
  const data = JSON.parse(JSON.stringify(granted.grant.data));
  equal(data.shards.length >= 1 && data.shards.every(({ shard }) => shard >= 0 && shard < 4), true, "the grant names shards of the limit");
  near(data.shards.reduce((sum, { count }) => sum + count, 0), 600, 1e-9, "the shards gave the 600");

  const settling = await h.connect(limits);
  near(await valueOf(settling, "llmSharded", key, 4), 3400, eps, "the whole limit is 600 down");
  settledOf(await settling.settle(data, 200), 400, 0, 0, eps, "used 200 of 600, settled elsewhere");
  near(await valueOf(settling, "llmSharded", key, 4), 3800, eps, "400 went back to the shards it came from");
  await rejectsWith(granted.grant.settle(0), "GRANT_SETTLED", "the first instance's handle finds it settled");

  const single = await charging.limit("llm", { key, count: 250, grant: true });
  const copy = JSON.parse(JSON.stringify(single.grant.data));
  settledOf(await (await h.connect(limits)).settle(copy, 0), 250, 0, 0, eps, "an unsharded grant cancelled elsewhere");
  near(await valueOf(charging, "llm", key), 1000, eps, "it is full again");
}

/** A grant of 300 with 500 more taken after it (value 200), its data for `n` settles. */
async function grantToRace(h, limits, key, connect = h.connect) {
  const limiter = await connect(limits);
  const granted = await limiter.limit("llm", { key, count: 300, grant: true });
  equal(granted.ok, true, "a grant of 300");
  equal((await limiter.limit("llm", { key, count: 500 })).ok, true, "500 more taken");
  return { limiter, data: JSON.parse(JSON.stringify(granted.grant.data)) };
}

/** `n` settles of one grant's data at once, each on its own limiter; what each answered. */
async function race(limiters, data) {
  const outcomes = await Promise.all(limiters.map((limiter) => limiter.settle(data, 0).then((settled) => ({ settled }), (error) => ({ error }))));
  const won = outcomes.filter(({ settled }) => settled);
  const codes = outcomes.filter(({ error }) => error).map(({ error }) => error.code ?? error.data?.code ?? String(error));
  return { won, codes, refunded: won.reduce((sum, { settled }) => sum + settled.refunded, 0) };
}

/**
 * `n` callers settle the same grant at once, each on its own connection: exactly one wins and
 * refunds the 300 once, the others get GRANT_SETTLED; the state ends at 500.
 * @returns what the race saw.
 */
export async function concurrentSettles(h, n = 6) {
  const limits = settleLimits(h.kind, periodOf(h));
  const eps = epsilonOf(h);
  const key = freshKey("race");
  const { limiter, data } = await grantToRace(h, limits, key);
  const limiters = await Promise.all(Array.from({ length: n }, () => h.connect(limits)));
  const seen = await race(limiters, data);
  equal(seen.won.length, 1, `one of ${n} concurrent settles wins (others: ${seen.codes.join(", ")})`);
  equal(seen.codes.join(), Array(n - 1).fill("GRANT_SETTLED").join(), "the others are GRANT_SETTLED");
  near(seen.refunded, 300, eps, "one refund in all");
  near(await valueOf(limiter, "llm", key), 500, eps, "the state holds one refund");
  return seen;
}

/**
 * The same race through `h.bare` (no transaction): more than one settle refunds, so the test
 * above can fail.
 * @returns what the race saw.
 */
export async function concurrentSettlesWithoutTransaction(h, n = 6) {
  const limits = settleLimits(h.kind, periodOf(h));
  const key = freshKey("bare");
  // Granted through the bare store too: it is the same data on every host but a Durable Object.
  const { data } = await grantToRace(h, limits, key, h.bare);
  const limiters = await Promise.all(Array.from({ length: n }, () => h.bare(limits)));
  const seen = await race(limiters, data);
  if (!(seen.won.length > 1 && seen.refunded > 300)) fail("without the transaction, more than one settle refunds", { won: seen.won.length, refunded: seen.refunded }, "won > 1, refunded > 300");
  return seen;
}

/** A negative, NaN or infinite actual is INVALID_REQUEST and writes nothing: the grant still settles after. */
export async function badActualWritesNothing(h) {
  const limits = settleLimits(h.kind, periodOf(h));
  const eps = epsilonOf(h);
  const limiter = await h.connect(limits);
  const key = freshKey("bad");
  const granted = await limiter.limit("llm", { key, count: 300, grant: true });
  const before = await limiter.getValue("llm", { key });
  for (const actual of [-1, Number.NaN, Number.POSITIVE_INFINITY]) {
    await rejectsWith(granted.grant.settle(actual), "INVALID_REQUEST", `actual ${actual} through the handle`);
    await rejectsWith(limiter.settle(granted.grant.data, actual), "INVALID_REQUEST", `actual ${actual} through the data`);
  }
  const after = await limiter.getValue("llm", { key });
  equal(after.ts, before.ts, "the state's ts is unchanged");
  equal(after.value, before.value, "the state's value is unchanged");
  settledOf(await granted.grant.settle(0), 300, 0, 0, eps, "the grant still cancels: nothing marked it settled");
}

/**
 * Issue 28 item 7: `figures: true` on a grant answers the figures a plain `limit` answers for the
 * same decision (the core's, from the charge): granted, refused, and reserved into debt, on two
 * keys that take the same traffic. Needs a hand-moved clock (`h.clock`): the figures are whole
 * seconds, which a real clock would move between the two calls.
 */
export async function grantFiguresAreLimitFigures(h) {
  if (h.clock === undefined) throw new Error("grantFiguresAreLimitFigures needs a harness with a hand-moved clock");
  const limiter = await h.connect(settleLimits(h.kind, periodOf(h)));
  const [charged, limited] = [freshKey("figures-grant"), freshKey("figures-limit")];
  const steps = [
    { count: 600, reserve: false, advance: 0 },
    { count: 300, reserve: false, advance: 1_000 },
    { count: 300, reserve: false, advance: 0 }, // refused: about 117 tokens left
    { count: 400, reserve: true, advance: 0 }, // granted into debt, with a wait
    { count: 500, reserve: true, advance: 0 }, // refused: past maxReserved
    { count: 1, reserve: false, advance: 45_000 },
  ];
  for (const [index, { count, reserve, advance }] of steps.entries()) {
    h.clock.now += advance;
    const grant = await limiter.limit("llm", { key: charged, count, reserve, figures: true, grant: true });
    const plain = await limiter.limit("llm", { key: limited, count, reserve, figures: true });
    if (plain.figures === undefined) fail(`step ${index}: limit's figures`, plain, "figures");
    const shown = ({ ok, retryAfter, figures }) => JSON.stringify({ ok, retryAfter, figures });
    equal(shown(grant), shown(plain), `step ${index} (count ${count}${reserve ? ", reserve" : ""}): the grant's answer and figures are limit's`);
    equal(grant.ok ? typeof grant.grant?.settle : typeof grant.grant, grant.ok ? "function" : "undefined", `step ${index}: a granted grant has its handle`);
  }
}

/** The anniversary of `anchor` (ms) in `year`, in UTC: its month, day (Feb 29 clamped) and time of day. */
function anniversary(anchor, year) {
  const date = new Date(anchor);
  const [month, day] = [date.getUTCMonth(), date.getUTCDate()];
  const timeOfDay = anchor - Date.UTC(date.getUTCFullYear(), month, day);
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  return Date.UTC(year, month, Math.min(day, lastDay)) + timeOfDay;
}

/** The limits of `calendarQuota`: 10 a calendar year from `anchor`. */
export const calendarLimits = (kind, anchor) => ({ yearly: { kind, rate: 10, period: "year", start: anchor } });

/** The anchor of hosts whose limits are fixed in advance (`h.calendar`): Feb 29, so common years clamp to Feb 28. */
export const CALENDAR_ANCHOR = Date.UTC(2024, 1, 29, 12);

/**
 * Calendar quotas (issue 32 item 3), on the host's own store: a fixed window of a calendar year
 * from an anchor (30 days back; or, for a host whose limits are fixed in advance, its
 * `h.calendar.connect()` to a limiter with `calendarLimits("fixed window", CALENDAR_ANCHOR)`,
 * whatever `h.kind`): grants up to the quota, a refusal whose wait ends at the next anniversary, a
 * grant settled below its estimate giving back the rest, getValue's config naming the period and
 * its anchor, and (with a hand-moved clock) the quota whole again at the anniversary. Elsewhere a
 * token bucket refuses a calendar period (INVALID_CONFIG).
 */
export async function calendarQuota(h) {
  const now = () => (h.clock ? h.clock.now : Date.now());
  const anchor = h.calendar ? CALENDAR_ANCHOR : now() - 30 * 86_400_000;
  const limits = calendarLimits(h.kind, anchor);
  if (h.kind === "token bucket" && !h.calendar) {
    // (At the limiter's construction, or at its first call where a host builds it per call.)
    await rejectsWith((async () => (await h.connect(limits)).limit("yearly", { key: freshKey("calendar") }))(), "INVALID_CONFIG", "a calendar period on a token bucket");
    return;
  }
  const [eps, slack] = [epsilonOf(h), h.clock ? 0 : 60_000];
  const thisYear = new Date(now()).getUTCFullYear();
  const end = [thisYear, thisYear + 1].map((year) => anniversary(anchor, year)).find((instant) => instant > now());
  const limiter = await (h.calendar ? h.calendar.connect() : h.connect(limits));
  const key = freshKey("calendar");
  const granted = await limiter.limit("yearly", { key, count: 4, grant: true });
  equal(granted.ok, true, "a grant of 4 of 10");
  equal((await limiter.limit("yearly", { key, count: 6 })).ok, true, "6 more: the quota spent");
  const refused = await limiter.limit("yearly", { key });
  equal(refused.ok, false, "the 11th is refused");
  near(now() + refused.retryAfter, end, slack, "the wait ends at the anniversary");
  settledOf(await granted.grant.settle(1), 3, 0, 0, eps, "the grant settled at 1 of 4");
  equal((await limiter.limit("yearly", { key, count: 3 })).ok, true, "the 3 given back are granted");
  equal((await limiter.limit("yearly", { key })).ok, false, "and then nothing");
  const { value, config } = await limiter.getValue("yearly", { key });
  near(value, 0, eps, "getValue: the quota spent");
  equal(JSON.stringify([config.period, config.start]), JSON.stringify(["year", anchor]), "getValue's config names the period and its anchor");
  if (h.clock) {
    h.clock.now = end;
    equal((await limiter.limit("yearly", { key, count: 10 })).ok, true, "at the anniversary the quota is whole again");
  }
}

/** Every scenario, by name, for hosts that register them in a loop. */
export const SCENARIOS = {
  "an LLM flow: estimates settled below and above (debt bounded by maxReserved), a cancel, and a second settle refused": llmFlow,
  "a grant's data through JSON settles in another limiter instance, a sharded one on its own shards": serialisedSettle,
  "concurrent settles of one grant on separate connections: exactly one refunds, the rest are GRANT_SETTLED": concurrentSettles,
  "a negative, NaN or infinite actual is INVALID_REQUEST and writes nothing": badActualWritesNothing,
  "a calendar quota (a year from an anchor): the quota, a wait to the anniversary, a settle's refund, getValue, the refill": calendarQuota,
};

// ---------------------------------------------------------------------------------------------
// The library's own records out of every caller's reach (issue 24 item 2). Each scenario runs the
// same flow twice: once with the hostile key, once with a harmless one in its place; the answers
// must be equal, number for number (within `epsilon` on a real clock).

/** Asserts two runs' numbers equal, one by one. */
function sameRuns(hostile, harmless, epsilon, what) {
  equal(hostile.length, harmless.length, `${what}: as many answers`);
  hostile.forEach((number, index) => near(number, harmless[index], epsilon, `${what}: answer ${index} (hostile ${JSON.stringify(hostile)}, harmless ${JSON.stringify(harmless)})`));
}

/** A grant's settle as numbers. */
const settledNumbers = (result) => [result.refunded, result.charged, result.unpaid];

/**
 * A victim's grants and refunds beside an intruder whose key is where the refund ledger once lived
 * (`ratebound:refunded:VICTIM`) and then where a grant's settled mark did
 * (`ratebound:settled:ID:VICTIM`): the intruder takes, grants and cancels on those keys, and
 * neither side's answers change from a run where the intruder's keys are harmless.
 * @returns the numbers compared.
 */
export async function callersNeverReachTheLedger(h) {
  const limits = settleLimits(h.kind, periodOf(h));
  const eps = epsilonOf(h);
  const flow = async (victim, ledgerKey, markKey) => {
    const limiter = await h.connect(limits);
    const seen = [];
    const first = (await limiter.limit("llm", { key: victim, count: 300, grant: true })).grant;
    seen.push(...settledNumbers(await first.settle(100)));
    const second = (await limiter.limit("llm", { key: victim, count: 300, grant: true })).grant;
    equal((await limiter.limit("llm", { key: ledgerKey(victim), count: 700 })).ok, true, "the intruder takes 700 of its own");
    const third = (await limiter.limit("llm", { key: ledgerKey(victim), count: 200, grant: true })).grant;
    seen.push(...settledNumbers(await third.cancel()));
    equal((await limiter.limit("llm", { key: markKey(second.data.id, victim), count: 1 })).ok, true, "the intruder takes a token where the settled mark was");
    seen.push(...settledNumbers(await second.cancel()));
    seen.push(await valueOf(limiter, "llm", victim), await valueOf(limiter, "llm", ledgerKey(victim)), await valueOf(limiter, "llm", markKey(second.data.id, victim)));
    return seen;
  };
  const hostile = await flow(freshKey("victim"), (victim) => `ratebound:refunded:${victim}`, (id, victim) => `ratebound:settled:${id}:${victim}`);
  const harmless = await flow(freshKey("victim"), (victim) => `intruder-${victim}`, (id, victim) => `mark-${victim}`);
  sameRuns(hostile, harmless, eps, "an intruder at the old ledger and mark keys");
  near(hostile[6], 300, eps, "the victim's second grant cancels in full");
  return hostile.length;
}

/**
 * Grants with no key (the limit's shared state) and grants with the key `""`, refunded in turn:
 * each refunds as it would beside a grant of any other key.
 * @returns the numbers compared.
 */
export async function keylessAndEmptyKeyApart(h) {
  const limits = settleLimits(h.kind, periodOf(h));
  const eps = epsilonOf(h);
  const name = "llm";
  const flow = async (other) => {
    const limiter = await h.connect(limits);
    // Hosts whose data outlives the test (one D1 for every run) start the shared states full.
    if (typeof limiter.reset === "function") for (const key of [undefined, other]) await limiter.reset(name, key === undefined ? {} : { key });
    const seen = [];
    const grant = async (key, count) => (await limiter.limit(name, { ...(key === undefined ? {} : { key }), count, grant: true })).grant;
    const a = await grant(undefined, 300);
    seen.push(...settledNumbers(await a.settle(0)));
    const b = await grant(other, 300);
    const c = await grant(undefined, 300);
    seen.push(...settledNumbers(await b.cancel()));
    seen.push(...settledNumbers(await c.cancel()));
    const d = await grant(other, 400);
    const e = await grant(undefined, 100);
    seen.push(...settledNumbers(await d.settle(100)));
    seen.push(...settledNumbers(await e.cancel()));
    seen.push(await valueOf(limiter, name, undefined), await valueOf(limiter, name, other));
    return seen;
  };
  // Both runs share the limit's keyless state; each gives back all it took, so each starts full.
  const hostile = await flow("");
  const harmless = await flow(freshKey("other"));
  sameRuns(hostile, harmless, eps, 'grants with no key beside grants with the key ""');
  return hostile.length;
}

/**
 * A grant whose charge rolled back (the host's transaction failed after `limit(…, { grant: true })`:
 * `h.rollBack(limits, name, options)` answers its data) refunds nothing on cancel, although an
 * earlier grant of the same key is still open; the earlier one still cancels in full.
 * @returns `undefined` when the host has no rollback to try.
 */
export async function rolledBackGrantRefundsNothing(h) {
  if (h.rollBack === undefined) return undefined;
  const limits = settleLimits(h.kind, periodOf(h));
  const eps = epsilonOf(h);
  const limiter = await h.connect(limits);
  const key = freshKey("rolled-back");
  const earlier = await limiter.limit("llm", { key, count: 300, grant: true });
  equal(earlier.ok, true, "an earlier grant of 300");
  near(await valueOf(limiter, "llm", key), 700, eps, "300 taken");
  const data = await h.rollBack(limits, "llm", { key, count: 200, grant: true });
  equal(typeof data?.id, "string", "the rolled-back charge answered a grant's data");
  near(await valueOf(limiter, "llm", key), 700, eps, "the rolled-back charge took nothing");
  settledOf(await limiter.settle(data, 0), 0, 0, 0, eps, "cancelling the rolled-back grant");
  near(await valueOf(limiter, "llm", key), 700, eps, "and gave nothing back");
  settledOf(await earlier.grant.cancel(), 300, 0, 0, eps, "the earlier grant still cancels in full");
  near(await valueOf(limiter, "llm", key), 1000, eps, "full again");
  return 1;
}

/** The records scenarios, by name. */
export const RECORD_SCENARIOS = {
  "a caller's key at the old ledger and settled-mark keys (ratebound:refunded:KEY, ratebound:settled:ID:KEY) neither spends nor feeds KEY's refunds": callersNeverReachTheLedger,
  'grants with no key and grants with the key "" never share or steal refunds': keylessAndEmptyKeyApart,
  "a grant whose charge rolled back refunds nothing on cancel, beside an open grant of the same key": rolledBackGrantRefundsNothing,
};
