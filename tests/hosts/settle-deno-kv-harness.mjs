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
  return {
    kvStore: { kind, clock, close, bare, connect: async (limits) => new ratebound.RateLimiter(kvLib.kvStore(await handle(), retry), limits, options) },
    kvTransaction: { kind, clock, close, bare, connect: inTransactions },
  };
}
