// The Worker of the D1 suite (tests/sql/d1.test.mjs): ratebound/sqlite over the D1 binding DB,
// driven with JSON POSTs. Every call runs as the app would run it, inside the Worker; errors come
// back as data ({ error: { name, code, message } }).
import { RateLimiter } from "ratebound";
import { createTable, d1Store, d1Transaction, pruneStates } from "ratebound/sqlite";
import * as traffic from "../../hosts/coalesce-traffic.mjs";

const NOW = 1_700_000_000_000;
const LIMITS = {
  daily: { kind: "token bucket", rate: 10, period: 86_400_000 },
  perUser: { kind: "token bucket", rate: 3, period: 86_400_000 },
  global: { kind: "fixed window", rate: 2, period: 86_400_000, start: 0 },
  sliding: { kind: "sliding window", rate: 10, period: 86_400_000 },
};
const limiterOn = (store) => new RateLimiter(store, LIMITS, { now: () => NOW });
const asData = (error) => ({ error: { name: error.name, code: error.code, message: error.message, attempts: error.attempts } });

/** Runs `work`; its result or its error as data. */
async function answer(work) {
  try {
    return { result: (await work()) ?? null };
  } catch (error) {
    return asData(error);
  }
}

const routes = {
  /** ratebound's table (twice: it is idempotent) and the app's posts. */
  setup: async (env) => {
    await createTable(env.DB);
    await createTable(env.DB);
    await env.DB.prepare("CREATE TABLE IF NOT EXISTS posts (id INTEGER PRIMARY KEY, author TEXT NOT NULL, body TEXT)").run();
  },
  /** pruneStates at `now`. */
  prune: (env, { now }) => pruneStates(env.DB, { now }),
  /** Any SQL, for the test's own checks. */
  sql: async (env, { sql, params = [] }) => (await env.DB.prepare(sql).bind(...params).all()).results,
  /** One limit in a d1Transaction with the app's post; `fail` throws after the limit granted. */
  post: (env, { key, body, count = 1, name = "perUser", fail = false }) =>
    d1Transaction(env.DB, async (tx) => {
      const status = await limiterOn(tx).limit(name, { key, count });
      if (status.ok) tx.add(env.DB.prepare("INSERT INTO posts (author, body) VALUES (?, ?)").bind(key, body));
      if (fail) throw new Error("the app failed after the limit granted");
      return status.ok;
    }),
  /** A call of its own through d1Store. */
  call: (env, { op, name, options, requests }) => {
    const limiter = limiterOn(d1Store(env.DB));
    return op === "limitAll" ? limiter.limitAll(requests) : limiter[op](name, options);
  },
  /** A call of its own through d1Store on a limiter that reads stored limits (a new instance each request). */
  stored: (env, { op, name, config, options }) => {
    const limiter = new RateLimiter(d1Store(env.DB), LIMITS, { now: () => NOW, storedLimits: true });
    return op === "setLimit" ? limiter.setLimit(name, config, options) : limiter[op](name, options);
  },
  /** Writes each ref's state in one transaction, then reads each back. */
  collide: async (env, { refs, states }) => {
    const store = d1Store(env.DB);
    await store.transaction(async (tx) => refs.forEach((ref, index) => tx.write(ref, states[index])));
    return store.transaction(async (tx) => Promise.all(refs.map((ref) => tx.read(ref))));
  },
  /** `n` calls at once inside the Worker; `bare`: through the store's read and write, with no batch re-check. */
  burst: async (env, { n, key, bare = false, name = "daily" }) => {
    const store = d1Store(env.DB, { maxAttempts: 100 });
    const racy = {
      read: async (ref) => {
        const state = await store.read(ref);
        await new Promise((resolve) => setTimeout(resolve, 1)); // other requests run meanwhile
        return state;
      },
      write: (ref, state, info) => store.write(ref, state, info),
    };
    const outcomes = await Promise.all(Array.from({ length: n }, () => limiterOn(bare ? racy : store).limit(name, { key }).catch(asData)));
    return { admitted: outcomes.filter((outcome) => outcome.ok === true).length, errors: outcomes.filter((outcome) => outcome.error) };
  },
  /**
   * The coalescing traffic (tests/hosts/coalesce-traffic.mjs) made at once on `key` through one
   * d1Store (or, with `coalesce: false`, a d1Store of its own per call), then one at a time on a
   * fresh key: both runs' answers, the batches the concurrent run sent, and its conflicts.
   */
  coalesce: async (env, { n, key, mixed = false, name = "hot", coalesce = true }) => {
    let batches = 0;
    let conflicts = 0;
    const counted = { prepare: (sql) => env.DB.prepare(sql), batch: (statements) => (batches++, env.DB.batch(statements)) };
    const retry = { maxAttempts: 100, onConflict: () => conflicts++ };
    const now = traffic.steppingClock();
    const calls = mixed ? traffic.mixedCalls(n, key, name) : traffic.plainCalls(n, key, name);
    const shared = new RateLimiter(d1Store(counted, retry), traffic.COALESCE_LIMITS, { now });
    const limiterFor = coalesce ? () => shared : () => new RateLimiter(d1Store(counted, retry), traffic.COALESCE_LIMITS, { now });
    const answers = await traffic.atOnce(limiterFor, calls);
    const cost = { batches, conflicts };
    const serialLimiter = new RateLimiter(d1Store(env.DB), traffic.COALESCE_LIMITS, { now: traffic.steppingClock() });
    const serial = await traffic.oneAtATime(() => serialLimiter, traffic.withKey(calls, `${key}-serial`));
    return { answers, serial, ...cost };
  },
  /** Every attempt loses the race: a rival changes the state read before the batch commits. */
  contended: (env, { key }) =>
    d1Transaction(
      env.DB,
      async (tx) => {
        await limiterOn(tx).limit("daily", { key });
        tx.add(env.DB.prepare("INSERT INTO posts (author, body) VALUES (?, 'contended')").bind(key));
        await env.DB.prepare("UPDATE ratebound SET value = value - 0.5 WHERE name = 'daily' AND key = ?").bind(key).run();
      },
      { maxAttempts: 3 },
    ),
};

export default {
  async fetch(request, env) {
    const route = routes[new URL(request.url).pathname.slice(1)];
    if (route === undefined) return new Response("not found", { status: 404 });
    const input = await request.json();
    return Response.json(await answer(() => route(env, input)));
  },
};
