// The Deno KV harnesses of the concurrency scenarios (tests/concurrency/scenarios.mjs; not a test
// file itself), for Node (@deno/kv) and real Deno (Deno.openKv): `kvStore` (each take, release and
// extend a checked atomic commit of its own) and `kvTransaction` (each take in a transaction the
// app opens, as an app commits its own writes with the lease; the lease's release and extend,
// once that transaction is over, through `limiter.lease(data)` in a transaction of their own).
// Every limiter gets a handle of its own on the test's database. Imports nothing runtime-specific,
// so the same file runs in both runtimes.
import { bareStore } from "../settle/scenarios.mjs";

/**
 * The harnesses: `{ kvStore, kvTransaction }`, each with `close()` for the handles it opened.
 * `open()` opens a new handle on the test's database.
 */
export function kvHarnesses({ ratebound, kvLib, open }) {
  const handles = [];
  const handle = async () => {
    const kv = await open();
    handles.push(kv);
    return kv;
  };
  const clock = { now: 1_700_000_000_000, read: () => clock.now };
  const options = { now: clock.read };
  const retry = { maxAttempts: 200, maxDelayMs: 20 };
  const close = () => handles.splice(0).forEach((kv) => kv.close());
  const bare = async (limits) => new ratebound.RateLimiter(bareStore(kvLib.kvStore(await handle())), limits, options);

  /** A limiter-like object whose every call is a kvTransaction the app opened on a handle of its own. */
  const inTransactions = async (limits) => {
    const kv = await handle();
    // Made once, on a store of its own: the config is checked when the harness connects, and a
    // lease's data when it is handed to `lease` (a name that is not a concurrency limit throws).
    const outside = new ratebound.RateLimiter(kvLib.kvStore(kv, retry), limits, options);
    const run = (call) => kvLib.kvTransaction(kv, (tx) => call(new ratebound.RateLimiter(tx, limits, options)), retry);
    /** A handle on a lease's data whose release and extend each run in a kvTransaction of their own. */
    const handleOf = (data, expiresAt) => {
      const lease = {
        id: data.id,
        slots: data.slots,
        expiresAt,
        release: () => run((limiter) => limiter.lease(data).release()),
        extend: async (ms) => {
          const extended = await run((limiter) => limiter.lease(data).extend(ms));
          lease.expiresAt = extended.expiresAt;
          return extended;
        },
        toJSON: () => data,
      };
      return lease;
    };
    return {
      async limit(name, given) {
        const answer = await run((limiter) => limiter.limit(name, given));
        // The handle answered inside the transaction is bound to it: after the commit, its data.
        return answer.ok ? { ok: true, lease: handleOf(answer.lease.toJSON(), answer.lease.expiresAt) } : answer;
      },
      lease: (data) => handleOf(outside.lease(data).toJSON(), Number.NaN),
    };
  };
  return {
    kvStore: { clock, close, bare, connect: async (limits) => new ratebound.RateLimiter(kvLib.kvStore(await handle(), retry), limits, options) },
    kvTransaction: { clock, close, bare, connect: inTransactions },
  };
}

/**
 * The scenarios each harness runs: every scenario but `sixtyFourSlots` where an atomic commit takes
 * at most 10 checks (`@deno/kv` in Node; real Deno 2 takes 64: `manyChecks`), and, in
 * kvTransaction, but `acquireWaitsForASlot` (waiting belongs outside the app's transaction:
 * `acquire` on a limiter over kvStore), plus the control.
 */
export function scenariosOf(SCENARIOS, overAdmitsWithoutTransaction, flavour, { manyChecks = false } = {}) {
  const { sixtyFourSlots, acquireWaitsForASlot, ...rest } = SCENARIOS;
  return {
    ...rest,
    ...(manyChecks ? { sixtyFourSlots } : {}),
    ...(flavour === "kvStore" ? { acquireWaitsForASlot } : {}),
    "the same concurrent calls through kvStore's bare read and write over-admit": overAdmitsWithoutTransaction,
  };
}

/**
 * A lease in the app's kvTransaction beside the app's own writes: a body that throws after the take
 * commits nothing (every slot still free, its data releases nothing); a committed one is kept in
 * the app's entry and released later through `limiter.lease(data)` over kvStore. Throws on a
 * difference; `open()` opens a handle on the test's database.
 */
export async function leaseInTheAppsTransaction({ ratebound, kvLib, open }) {
  const kv = await open();
  try {
    const limits = { jobs: { kind: "concurrency", max: 2, lease: 60_000 } };
    const key = `app-${crypto.randomUUID()}`;
    const take = (then) => kvLib.kvTransaction(kv, async (tx) => then(tx, await new ratebound.RateLimiter(tx, limits).limit("jobs", { key, count: 2 })));
    let rolledBack;
    const thrown = await take((tx, answer) => {
      rolledBack = answer.lease.toJSON();
      tx.set(["jobs", key], rolledBack);
      throw new Error("the app failed after the take");
    }).catch((error) => error.message);
    const expect = (actual, expected, what) => {
      if (JSON.stringify(actual) !== JSON.stringify(expected)) throw new Error(`${what}: got ${JSON.stringify(actual)}, expected ${JSON.stringify(expected)}`);
    };
    expect(thrown, "the app failed after the take", "the body's error");
    expect((await kv.get(["jobs", key])).value, null, "the app's entry rolled back");
    const later = new ratebound.RateLimiter(kvLib.kvStore(kv), limits);
    expect(await later.lease(rolledBack).release(), { released: 0 }, "a rolled-back lease gives back nothing");
    const committed = await take((tx, answer) => {
      tx.set(["jobs", key], answer.lease.toJSON());
      return answer.lease.toJSON();
    });
    expect(committed.slots, [0, 1], "the rolled-back take held no slot");
    const stored = (await kv.get(["jobs", key])).value;
    expect(stored, committed, "the lease's data committed with the app's entry");
    expect((await later.limit("jobs", { key })).ok, false, "the committed lease holds both slots");
    expect(await later.lease(stored).release(), { released: 2 }, "released later, on a store of its own");
    expect((await later.limit("jobs", { key, count: 2 })).ok, true, "both free again");
  } finally {
    kv.close();
  }
}
