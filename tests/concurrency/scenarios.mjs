// Concurrency limits with leases, host-neutral (Node, Deno, workerd: no imports, its own
// assertions): each scenario takes a harness { clock?, connect(limits), bare(limits) } (connect: a
// limiter over the host with its transaction; bare: the same data through a store without one,
// whose reads wait). With a `clock` ({ now, read }, which the limiters read), time is moved by
// hand; without one, real time.

/** JSON with each object's fields in name order, so that deep equality ignores their order. */
const shown = (value) =>
  JSON.stringify(value, (_, inner) => (inner && typeof inner === "object" && !Array.isArray(inner) ? Object.fromEntries(Object.entries(inner).sort(([a], [b]) => (a < b ? -1 : 1))) : inner));
/** The few assertions the scenarios make, as node:assert words them. */
const assert = {
  ok(value, what = "expected a truthy value") {
    if (!value) throw new Error(what);
  },
  equal(actual, expected, what = "") {
    if (!Object.is(actual, expected)) throw new Error(`${what}: got ${shown(actual)}, expected ${shown(expected)}`);
  },
  deepEqual(actual, expected, what = "") {
    if (shown(actual) !== shown(expected)) throw new Error(`${what}: got ${shown(actual)}, expected ${shown(expected)}`);
  },
  throws(fn, code) {
    try {
      fn();
    } catch (error) {
      if (error?.code === code) return;
      throw new Error(`threw ${error?.code} ${error?.message}, expected ${code}`);
    }
    throw new Error(`did not throw ${code}`);
  },
  notDeepEqual(actual, expected, what = "") {
    if (shown(actual) === shown(expected)) throw new Error(`${what}: both ${shown(actual)}`);
  },
  async rejects(promiseOrFn, check, what = "") {
    let error;
    try {
      await (typeof promiseOrFn === "function" ? promiseOrFn() : promiseOrFn);
    } catch (caught) {
      error = caught;
    }
    if (error === undefined) throw new Error(`${what}: did not reject`);
    if (!check(error)) throw new Error(`${what}: rejected with ${error?.code ?? ""} ${error?.field ?? ""} ${error?.message ?? error}`);
  },
};

let keys = 0;
/** A key no other scenario uses (hosts keep their data between scenarios). */
export const freshKey = (what) => `${what}-${crypto.randomUUID()}-${keys++}`;

const limitsOf = (max, lease) => ({ jobs: { kind: "concurrency", max, lease } });

async function rejectsWith(promise, code, what) {
  await assert.rejects(promise, (error) => error.code === code, what);
}

/** Two slots: two leases, a third refused until one is released; a second release gives back nothing. */
export async function takeReleaseAndReleaseTwice(h) {
  const limiter = await h.connect(limitsOf(2, 60_000));
  const key = freshKey("take");
  const first = await limiter.limit("jobs", { key });
  const second = await limiter.limit("jobs", { key });
  assert.equal(first.ok && second.ok, true);
  assert.notDeepEqual(first.lease.slots, second.lease.slots, "two leases, two slots");
  const third = await limiter.limit("jobs", { key });
  assert.equal(third.ok, false);
  assert.ok(third.retryAfter > 0 && third.retryAfter <= 60_000, `retryAfter ${third.retryAfter}`);
  assert.deepEqual(await first.lease.release(), { released: 1 });
  assert.deepEqual(await first.lease.release(), { released: 0 }, "a second release gives back nothing");
  const again = await limiter.limit("jobs", { key });
  assert.equal(again.ok, true);
  assert.equal((await limiter.limit("jobs", { key })).ok, false, "the second release did not free the slot the new lease holds");
  await rejectsWith(limiter.limit("jobs", { key, throws: true }), "RATE_LIMITED", "throws: true");
}

/** A holder that never releases (a crash): its slot comes back when the lease expires; the stale lease then releases nothing and cannot extend. */
export async function anExpiredLeaseFreesItsSlot(h) {
  const lease = h.clock ? 1_000 : 300;
  const limiter = await h.connect(limitsOf(1, lease));
  const key = freshKey("crash");
  const crashed = await limiter.limit("jobs", { key });
  assert.equal(crashed.ok, true);
  const refused = await limiter.limit("jobs", { key });
  assert.equal(refused.ok, false);
  if (h.clock) {
    assert.equal(refused.retryAfter, lease, "the earliest instant the held lease expires");
    h.clock.now += lease;
  } else await new Promise((resolve) => setTimeout(resolve, lease + 50));
  const next = await limiter.limit("jobs", { key });
  assert.equal(next.ok, true, "the expired lease's slot is free");
  assert.deepEqual(await crashed.lease.release(), { released: 0 }, "the expired lease gives back nothing");
  await rejectsWith(crashed.lease.extend(10_000), "LEASE_LOST", "an expired lease cannot extend");
  assert.equal((await limiter.limit("jobs", { key })).ok, false, "the new holder still holds its slot");
}

/** Extending moves the expiry, and so the refusal's retryAfter; it never shortens. */
export async function extendingMovesRetryAfter(h) {
  if (!h.clock) return;
  const limiter = await h.connect(limitsOf(1, 1_000));
  const key = freshKey("extend");
  const held = await limiter.limit("jobs", { key });
  const start = h.clock.now;
  h.clock.now += 500;
  assert.deepEqual(await held.lease.extend(5_000), { expiresAt: start + 5_500 });
  assert.equal(held.lease.expiresAt, start + 5_500);
  assert.deepEqual(await held.lease.extend(10), { expiresAt: start + 5_500 }, "never shortens");
  const refused = await limiter.limit("jobs", { key });
  assert.equal(refused.retryAfter, 5_000);
  h.clock.now = start + 5_499;
  assert.equal((await limiter.limit("jobs", { key })).ok, false);
  h.clock.now = start + 5_500;
  assert.equal((await limiter.limit("jobs", { key })).ok, true);
}

/** `count` takes several slots at once; more than max, a bad count or a bad config are coded errors. */
export async function countsAndBadInput(h) {
  const limiter = await h.connect(limitsOf(3, 60_000));
  const key = freshKey("count");
  const two = await limiter.limit("jobs", { key, count: 2 });
  assert.equal(two.lease.slots.length, 2);
  assert.equal((await limiter.limit("jobs", { key, count: 2 })).ok, false);
  await rejectsWith(limiter.limit("jobs", { key, count: 4 }), "COUNT_EXCEEDS_MAX", "count 4 of 3");
  await rejectsWith(limiter.limit("jobs", { key, count: 1.5 }), "INVALID_REQUEST", "count 1.5");
  await rejectsWith(limiter.limit("jobs", { key, bogus: 1 }), "INVALID_REQUEST", "an unknown option");
  assert.deepEqual(await two.lease.release(), { released: 2 });
  assert.equal((await limiter.limit("jobs", { key, count: 3 })).ok, true);
}

/** A bad config is INVALID_CONFIG naming its field, when the limiter is made. */
export async function badConfigsAreInvalidConfig(h) {
  for (const [config, field] of [
    [{ kind: "concurrency", max: 65, lease: 1 }, "max"],
    [{ kind: "concurrency", max: 2 }, "lease"],
    [{ kind: "concurrency", max: 2, lease: 1, rate: 3 }, "rate"],
  ]) {
    await assert.rejects(async () => h.connect({ jobs: config }), (error) => error.code === "INVALID_CONFIG" && error.field === field, field);
  }
}

/** `acquire` waits for a slot: a release elsewhere lets it in; past maxWait it is WAIT_TOO_LONG, aborted it is ABORTED. */
export async function acquireWaitsForASlot(h) {
  const limiter = await h.connect(limitsOf(1, 60_000));
  const other = await h.connect(limitsOf(1, 60_000));
  const key = freshKey("acquire");
  const held = await limiter.acquire("jobs", { key });
  assert.equal(held.lease.slots.length, 1);
  let got;
  const waiting = other.acquire("jobs", { key }).then((answer) => (got = answer));
  await new Promise((resolve) => setTimeout(resolve, 60));
  assert.equal(got, undefined, "no slot while the lease is held");
  assert.deepEqual(await held.lease.release(), { released: 1 });
  const acquired = await waiting;
  assert.deepEqual(acquired.lease.slots, [0]);
  await rejectsWith(limiter.acquire("jobs", { key, maxWait: 0 }), "WAIT_TOO_LONG", "maxWait 0 while held");
  const controller = new AbortController();
  setTimeout(() => controller.abort(new Error("shutdown")), 40);
  await rejectsWith(limiter.acquire("jobs", { key, signal: controller.signal }), "ABORTED", "aborted while waiting");
  assert.deepEqual(await acquired.lease.release(), { released: 1 }, "the waiters took nothing");
}

/** A lease's data through JSON, on another limiter: it releases and extends as the original; a forged id gives back nothing. */
export async function leaseDataOnAnotherLimiter(h) {
  const limiter = await h.connect(limitsOf(2, 60_000));
  const other = await h.connect(limitsOf(2, 60_000));
  const key = freshKey("data");
  const taken = await limiter.limit("jobs", { key, count: 2 });
  const data = JSON.parse(JSON.stringify(taken.lease));
  assert.deepEqual(data, { name: "jobs", key, id: taken.lease.id, slots: [0, 1] });
  const forged = other.lease({ ...data, id: data.id === 1 ? 2 : data.id - 1 });
  assert.deepEqual(await forged.release(), { released: 0 }, "a forged id gives back nothing");
  await rejectsWith(forged.extend(1_000), "LEASE_LOST", "a forged id cannot extend");
  await rejectsWith(Promise.resolve().then(() => other.lease({ ...data, slots: [0, 2] }).release()), "INVALID_REQUEST", "a slot the limit does not have");
  assert.equal((await limiter.limit("jobs", { key })).ok, false, "still held");
  const handle = other.lease(data);
  if (h.clock) assert.deepEqual(await handle.extend(120_000), { expiresAt: h.clock.now + 120_000 });
  assert.deepEqual(await handle.release(), { released: 2 });
  assert.deepEqual(await taken.lease.release(), { released: 0 }, "released once, through either handle");
  // A name that is none of the limiter's concurrency limits (a client of a remote object checks nothing here).
  if (!h.remote) assert.throws(() => other.lease({ ...data, name: "nope" }), "INVALID_ARGUMENT");
}

/** The largest limit, 64 slots: all taken by one lease, then one at a time after its release. */
export async function sixtyFourSlots(h) {
  const limiter = await h.connect(limitsOf(64, 60_000));
  const key = freshKey("sixty-four");
  const all = await limiter.limit("jobs", { key, count: 64 });
  assert.equal(all.ok && all.lease.slots.length, 64);
  assert.equal((await limiter.limit("jobs", { key })).ok, false);
  assert.deepEqual(await all.lease.release(), { released: 64 });
  const one = await limiter.limit("jobs", { key });
  assert.deepEqual(one.lease.slots, [0]);
  assert.deepEqual((await limiter.limit("jobs", { key, count: 63 })).ok, true);
}

/** `n` limiters on one key take leases at once: how many were granted. */
async function race(limiters, key) {
  const answers = await Promise.all(limiters.map((limiter) => limiter.limit("jobs", { key })));
  return answers.filter((answer) => answer.ok).length;
}

/** Many calls at once through the host's transaction grant exactly max. */
export async function exactUnderConcurrentCalls(h, n = 12, max = 3) {
  const limiters = await Promise.all(Array.from({ length: n }, () => h.connect(limitsOf(max, 60_000))));
  const granted = await race(limiters, freshKey("race"));
  assert.equal(granted, max, `${granted} of ${n} granted on ${max} slots`);
}

/**
 * On 64 slots, `ones` takes of one slot and takes of each of `bigger` at once, each through a
 * limiter of its own: the leases granted hold each slot once, and exactly 64 in all (`ones` is
 * more than 64: a refused take of one slot saw every slot held, and nothing is released).
 */
export async function exactOnSixtyFourSlots(h, ones, bigger) {
  const counts = [...bigger, ...Array.from({ length: ones }, () => 1)];
  const limiters = await Promise.all(counts.map(() => h.connect(limitsOf(64, 60_000))));
  const key = freshKey("sixty-four-race");
  const answers = await Promise.all(limiters.map((limiter, index) => limiter.limit("jobs", { key, count: counts[index] })));
  const held = answers.filter((answer) => answer.ok).flatMap((answer) => answer.lease.slots);
  assert.equal(new Set(held).size, held.length, `a slot held twice: ${held.sort((a, b) => a - b)}`);
  assert.equal(held.length, 64, `${held.length} slots held of 64`);
  assert.equal((await limiters[0].limit("jobs", { key })).ok, false, "a 65th slot");
}

/**
 * `check` says whether `count` slots are free now and takes none; `getValue` counts the slots held
 * (an expired one is not); `reset` deletes the key's slots (every lease there holds nothing
 * after, and another key keeps its own).
 */
export async function checkAndReset(h) {
  const limiter = await h.connect(limitsOf(3, 60_000));
  const key = freshKey("check-reset");
  const other = freshKey("check-reset-other");
  assert.deepEqual(await limiter.check("jobs", { key, count: 3 }), { ok: true }, "three free");
  const at = h.clock.now;
  assert.deepEqual(await limiter.getValue("jobs", { key }), { held: 0, max: 3, ts: at }, "none held");
  const two = await limiter.limit("jobs", { key, count: 2 });
  assert.equal(two.ok, true);
  assert.deepEqual(await limiter.getValue("jobs", { key }), { held: 2, max: 3, ts: at }, "two held");
  assert.deepEqual(await limiter.check("jobs", { key }), { ok: true }, "one free");
  assert.deepEqual(await limiter.check("jobs", { key, count: 2 }), { ok: false, retryAfter: 60_000 }, "two are not");
  assert.deepEqual(await limiter.check("jobs", { key }), { ok: true }, "check took nothing");
  await rejectsWith(limiter.check("jobs", { key, count: 2, throws: true }), "RATE_LIMITED", "check throws when asked");
  await rejectsWith(limiter.check("jobs", { key, count: 4 }), "COUNT_EXCEEDS_MAX", "more than max");
  assert.equal((await limiter.limit("jobs", { key: other, count: 3 })).ok, true);
  await limiter.reset("jobs", { key });
  assert.deepEqual(await limiter.check("jobs", { key, count: 3 }), { ok: true }, "all free after reset");
  assert.equal((await limiter.getValue("jobs", { key })).held, 0, "none held after reset");
  assert.deepEqual(await two.lease.release(), { released: 0 }, "a lease from before the reset holds nothing");
  await rejectsWith(two.lease.extend(1_000), "LEASE_LOST", "nor can it be extended");
  assert.equal((await limiter.check("jobs", { key: other })).ok, false, "another key keeps its slots");
  await rejectsWith(limiter.reset("jobs", { key, count: 1 }), "INVALID_REQUEST", "reset takes a key only");
  // Expiry: a lease's slots stop counting once it is over.
  const short = await h.connect(limitsOf(2, 1_000));
  const later = freshKey("check-reset-expiry");
  assert.equal((await short.limit("jobs", { key: later })).ok, true);
  assert.equal((await short.getValue("jobs", { key: later })).held, 1);
  h.clock.now += 1_000;
  assert.equal((await short.getValue("jobs", { key: later })).held, 0, "expired at its ts");
}

/** The same traffic through the bare store (no transaction, reads that wait) grants more than max: the control. */
export async function overAdmitsWithoutTransaction(h, n = 12, max = 3) {
  const limiters = await Promise.all(Array.from({ length: n }, () => h.bare(limitsOf(max, 60_000))));
  const granted = await race(limiters, freshKey("bare"));
  assert.ok(granted > max, `without the transaction ${granted} of ${n} granted on ${max} slots (expected more than ${max})`);
  return granted;
}

export const SCENARIOS = { takeReleaseAndReleaseTwice, anExpiredLeaseFreesItsSlot, extendingMovesRetryAfter, countsAndBadInput, badConfigsAreInvalidConfig, acquireWaitsForASlot, leaseDataOnAnotherLimiter, sixtyFourSlots, exactUnderConcurrentCalls };
