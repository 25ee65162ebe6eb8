// The Deno KV host scenarios, run both in real Deno (Deno.openKv) and in Node (@deno/kv): each one
// drives ratebound/deno-kv and returns what happened, and each runtime's test asserts on it. Not a
// test file itself; it imports only its runtime-neutral sibling, so the same file runs in both runtimes.
import * as traffic from "./coalesce-traffic.mjs";

/** A ref's state as ratebound reads it (decoded from its 16 stored bytes), outside any other transaction. */
export const storedState = (kvLib, kv, ref) => kvLib.kvTransaction(kv, (tx) => tx.read(ref));

/** A clock that never moves, so every count is exact. */
export const NOW = 1_700_000_000_000;

/** The limits of the scenarios: `daily` holds 10 tokens and refills one a day. */
export const LIMITS = {
  daily: { kind: "token bucket", rate: 10, period: 86_400_000 },
  big: { kind: "token bucket", rate: 40, period: 86_400_000 },
  perUser: { kind: "token bucket", rate: 3, period: 86_400_000 },
  global: { kind: "fixed window", rate: 2, period: 86_400_000, start: 0 },
};

/**
 * `requests` transactions fired at once by `clients` separate KV handles on one database, each
 * taking one token of `limit` for key "ada". Returns how many were admitted, how many commits lost
 * the race, how many gave up, and the state left in the database.
 */
export async function concurrentClients({ ratebound, kvLib, open, clients, requests, limit }) {
  const handles = await Promise.all(Array.from({ length: clients }, () => open()));
  try {
    let conflicts = 0;
    const outcomes = await Promise.all(
      Array.from({ length: requests }, (_, index) =>
        kvLib
          .kvTransaction(handles[index % clients], (tx) => new ratebound.RateLimiter(tx, LIMITS, { now: () => NOW }).limit(limit, { key: "ada" }), {
            maxAttempts: 100,
            onConflict: () => conflicts++,
          })
          .catch((error) => ({ error })),
      ),
    );
    const stored = await storedState(kvLib, handles[0], { name: limit, key: "ada", shard: 0 });
    return {
      admitted: outcomes.filter((outcome) => outcome.ok === true).length,
      refused: outcomes.filter((outcome) => outcome.ok === false).length,
      failed: outcomes.filter((outcome) => outcome.error).map(({ error }) => String(error)),
      conflicts,
      stored,
    };
  } finally {
    for (const handle of handles) handle.close();
  }
}

/**
 * The same load through a deliberately non-transactional store: plain `get` and `set`, no
 * versionstamp checks. The harness must see it admit more than the bound.
 */
export async function withoutTransaction({ ratebound, open, clients, requests, limit }) {
  const handles = await Promise.all(Array.from({ length: clients }, () => open()));
  try {
    const outcomes = await Promise.all(
      Array.from({ length: requests }, (_, index) => {
        const kv = handles[index % clients];
        const key = (ref) => ["ratebound", ref.name, ref.key, ref.shard];
        const store = {
          read: async (ref) => (await kv.get(key(ref))).value,
          write: async (ref, state) => {
            await kv.set(key(ref), state);
          },
        };
        return new ratebound.RateLimiter(store, LIMITS, { now: () => NOW }).limit(limit, { key: "ada" });
      }),
    );
    return { admitted: outcomes.filter((outcome) => outcome.ok).length };
  } finally {
    for (const handle of handles) handle.close();
  }
}

/** A body that consumes a token and writes a post, then throws: nothing may be written. */
export async function rolledBack({ ratebound, kvLib, kv }) {
  const thrown = await kvLib
    .kvTransaction(kv, async (tx) => {
      await new ratebound.RateLimiter(tx, LIMITS, { now: () => NOW }).limit("daily", { key: "ada", count: 4 });
      tx.set(["posts", "ada", 1], "never");
      throw new Error("the app failed after the limit granted");
    })
    .catch((error) => error.message);
  return { thrown, state: await storedState(kvLib, kv, { name: "daily", key: "ada", shard: 0 }), post: (await kv.get(["posts", "ada", 1])).value };
}

/**
 * The app's own writes commit with the limit's: a granted send stores the post and bumps a
 * counter (`mutate` with `sum`); a refused one stores nothing.
 */
export async function withAppWrites({ ratebound, kvLib, kv }) {
  const send = (id) =>
    kvLib.kvTransaction(kv, async (tx) => {
      const status = await new ratebound.RateLimiter(tx, LIMITS, { now: () => NOW }).limit("perUser", { key: "ada" });
      if (status.ok) {
        tx.set(["posts", "ada", id], `post ${id}`);
        tx.mutate((atomic) => atomic.sum(["stats", "posts"], 1n));
      }
      return status.ok;
    });
  const sent = [];
  for (const id of [1, 2, 3, 4]) sent.push(await send(id));
  const posts = [];
  for (const id of [1, 2, 3, 4]) posts.push((await kv.get(["posts", "ada", id])).value);
  const count = (await kv.get(["stats", "posts"])).value;
  return { sent, posts, count: count === null ? null : Number(count.value) };
}

/** Several calls in one transaction see each other's writes: 6 + 6 of 10 tokens, then a batch that needs 5 of the 4 left. */
export async function readYourWrites({ ratebound, kvLib, kv }) {
  const answers = await kvLib.kvTransaction(kv, async (tx) => {
    const limiter = new ratebound.RateLimiter(tx, LIMITS, { now: () => NOW });
    const first = await limiter.limit("daily", { key: "ada", count: 6 });
    const second = await limiter.limit("daily", { key: "ada", count: 6 });
    const seen = await tx.read({ name: "daily", key: "ada", shard: 0 });
    // daily holds 4 now (this transaction's own write): a batch asking 5 of it is refused whole.
    const batch = await limiter.limitAll([{ name: "perUser", key: "ada", count: 3 }, { name: "daily", key: "ada", count: 5 }]);
    return { first, second, seen, batch };
  });
  return {
    ...answers,
    stored: await storedState(kvLib, kv, { name: "daily", key: "ada", shard: 0 }),
    perUser: await storedState(kvLib, kv, { name: "perUser", key: "ada", shard: 0 }),
    // What Deno KV holds: 16 raw bytes, which every client and V8 version reads alike.
    raw: (await kv.get(["ratebound", "daily", "ada", 0])).value,
  };
}

/**
 * Every attempt loses the race (another client writes the key the body read before it can
 * commit): after `maxAttempts` the transaction fails closed with KvConflictError and writes nothing.
 */
export async function losesEveryRace({ ratebound, kvLib, kv, rival }) {
  const conflicts = [];
  let attempts = 0;
  const error = await kvLib
    .kvTransaction(
      kv,
      async (tx) => {
        attempts++;
        await new ratebound.RateLimiter(tx, LIMITS, { now: () => NOW }).limit("daily", { key: "ada" });
        tx.set(["posts", "ada", "contended"], "never");
        await rival.set(["ratebound", "daily", "ada", 0], { value: 10, ts: NOW }); // the rival commits first
      },
      { maxAttempts: 3, baseDelayMs: 1, onConflict: (attempt) => conflicts.push(attempt) },
    )
    .catch((caught) => caught);
  return {
    isKvConflictError: error instanceof kvLib.KvConflictError,
    name: error.name,
    code: error.code,
    message: error.message,
    errorAttempts: error.attempts,
    attempts,
    conflicts,
    stored: await storedState(kvLib, kv, { name: "daily", key: "ada", shard: 0 }),
    post: (await kv.get(["posts", "ada", "contended"])).value,
  };
}

/**
 * Writes every ref's state in one transaction and reads each back; then takes the
 * one token of limits "a:b" (key "c") and "a" (key "b:c"), which must not share it.
 */
export async function keysNeverCollide({ ratebound, kvLib, kv, refs, stateFor }) {
  await kvLib.kvTransaction(kv, (tx) => refs.forEach((ref, index) => tx.write(ref, stateFor(index))));
  // One transaction per read: @deno/kv allows 10 checks per commit (Deno itself, 100).
  const states = await Promise.all(refs.map((ref) => storedState(kvLib, kv, ref)));
  const config = { kind: "token bucket", rate: 1, period: 86_400_000 };
  const taken = await kvLib.kvTransaction(kv, async (tx) => {
    const limiter = new ratebound.RateLimiter(tx, {}, { now: () => NOW });
    const take = async (name, key) => (await limiter.limit(name, { key, config })).ok;
    return [await take("a:b", "c"), await take("a", "b:c"), await take("a:b", "c")];
  });
  return { states, taken };
}

/**
 * A handle on `kv` that counts the commits sent (`commits`) and those whose checks failed
 * (`lost`): what this process's calls cost the database.
 */
export function countingKv(kv) {
  const seen = { commits: 0, lost: 0 };
  const counted = {
    get: (key, options) => kv.get(key, options),
    atomic() {
      const atomic = kv.atomic();
      const commit = atomic.commit.bind(atomic);
      atomic.commit = async () => {
        seen.commits++;
        const result = await commit();
        if (!result.ok) seen.lost++;
        return result;
      };
      return atomic;
    },
  };
  return { seen, kv: counted };
}

/**
 * `calls` (from ./coalesce-traffic.mjs) made at once on one key through one `kvStore` (coalesced),
 * or with `coalesce: false` through a `kvStore` of its own each (the same handle: nothing shares
 * their turns); then the same calls one at a time on a fresh key. Returns both runs' answers, what
 * the concurrent run cost (commits, commits lost, conflicts retried), and the state it left.
 */
export async function coalescedCalls({ ratebound, kvLib, kv, calls, coalesce = true }) {
  const { seen, kv: counted } = countingKv(kv);
  let conflicts = 0;
  const retry = { maxAttempts: 100, onConflict: () => conflicts++ };
  const now = traffic.steppingClock();
  const shared = new ratebound.RateLimiter(kvLib.kvStore(counted, retry), traffic.COALESCE_LIMITS, { now });
  const limiterFor = coalesce ? () => shared : () => new ratebound.RateLimiter(kvLib.kvStore(counted, retry), traffic.COALESCE_LIMITS, { now });
  const answers = await traffic.atOnce(limiterFor, calls);
  const cost = { commits: seen.commits, lost: seen.lost, conflicts };
  const serialLimiter = new ratebound.RateLimiter(kvLib.kvStore(kv), traffic.COALESCE_LIMITS, { now: traffic.steppingClock() });
  const serialKey = `${calls[0].options.key}-serial`;
  const serial = await traffic.oneAtATime(() => serialLimiter, traffic.withKey(calls, serialKey));
  const ref = { name: calls[0].name, key: calls[0].options.key, shard: 0 };
  return {
    answers,
    serial,
    ...cost,
    stored: await storedState(kvLib, kv, ref),
    serialStored: await storedState(kvLib, kv, { ...ref, key: serialKey }),
  };
}
