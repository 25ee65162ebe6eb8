// The Deno KV settle harnesses (not a test file itself), for tests/settle/scenarios.mjs in Node
// (@deno/kv) and in real Deno: `kvStore` (each call its own checked transaction) and
// `kvTransaction` (each call in a transaction the app opens; a grant's handle settles in a new
// one). Every limiter gets a handle of its own on the same database file. Imports nothing, so the
// same file runs in both runtimes.
import { bareStore } from "../settle/scenarios.mjs";

/**
 * The harnesses of one algorithm: `{ kvStore, kvTransaction }`, each with `close()` for the
 * handles it opened. `open()` opens a new handle on the test's database.
 */
export function kvHarnesses({ ratebound, kvLib, open, kind }) {
  const handles = [];
  const handle = async () => {
    const kv = await open();
    handles.push(kv);
    return kv;
  };
  const clock = { now: 1_700_000_000_000 };
  const options = { now: () => clock.now };
  const retry = { maxAttempts: 200, maxDelayMs: 20 };
  const close = () => handles.splice(0).forEach((kv) => kv.close());
  const bare = async (limits) => new ratebound.RateLimiter(bareStore(kvLib.kvStore(await handle())), limits, options);

  /** A limiter-like object whose every call is a kvTransaction the app opened. */
  const inTransactions = async (limits) => {
    const kv = await handle();
    const run = (call) => kvLib.kvTransaction(kv, (tx) => call(new ratebound.RateLimiter(tx, limits, options)), retry);
    const settle = (data, actual) => run((limiter) => limiter.settle(data, actual));
    return {
      settle,
      getValue: (name, given) => run((limiter) => limiter.getValue(name, given)),
      async limit(name, given) {
        const result = await run((limiter) => limiter.limit(name, given));
        // The handle answered inside the transaction settles in a transaction of its own.
        return result.ok && result.grant ? { ...result, grant: new ratebound.Grant(result.grant.data, settle) } : result;
      },
    };
  };
  /**
   * A grant taken inside a kvTransaction that then fails: `"body throws"` (the app's code after
   * the grant), or `"commit fails"` (Deno KV rejects the commit, as a lost connection makes it).
   * Answers the grant's data the body saw; nothing of it was committed.
   */
  const rollBackBy = (how) => async (limits, name, given) => {
    const kv = await handle();
    const failing = how === "commit fails" ? { get: (key, options) => kv.get(key, options), atomic: () => Object.assign(kv.atomic(), { commit: () => Promise.reject(new Error("connection reset")) }) } : kv;
    let data;
    const failed = await kvLib
      .kvTransaction(failing, async (tx) => {
        data = (await new ratebound.RateLimiter(tx, limits, options).limit(name, given)).grant?.data;
        if (how === "body throws") throw new Error("the app failed after the grant");
        tx.set(["app", "after the grant"], true);
      })
      .catch((error) => error);
    const expected = how === "body throws" ? failed?.message === "the app failed after the grant" : failed?.code === "KV_FAILED";
    if (!expected) throw failed ?? new Error("the transaction did not fail");
    return data;
  };
  return {
    kvStore: { kind, clock, close, bare, rollBackBy, rollBack: rollBackBy("body throws"), connect: async (limits) => new ratebound.RateLimiter(kvLib.kvStore(await handle(), retry), limits, options) },
    kvTransaction: { kind, clock, close, bare, rollBackBy, rollBack: rollBackBy("body throws"), connect: inTransactions },
  };
}
