// The Worker of the D1 outage suite (tests/outage/d1.test.mjs): ratebound/sqlite over the D1
// binding DB, with reads (`first`) or commits (`batch`) made to throw, as a lost connection does, or
// to hang; or over a table that does not exist (a real D1 error). Every answer and error comes
// back as data, with the row the test's key holds.
import { RateLimiter } from "ratebound";
import { createTable, d1Store, d1Transaction } from "ratebound/sqlite";

const NOW = 1_700_000_000_000;
const API = { kind: "token bucket", rate: 5, period: 60_000 };
const LIMITS = {
  api: API,
  loose: { ...API, onStoreError: "open" },
  guarded: { ...API, onStoreError: { fallback: "memory" } },
};

/** `env.DB` with its reads and batches failing as `faults` says (`"up"`, `"throws"`, `"hangs"`). */
function faultyDb(db, faults) {
  const fail = (mode) => (mode === "throws" ? Promise.reject(new Error("D1_ERROR: Network connection lost.")) : new Promise(() => {}));
  return {
    prepare(sql) {
      const statement = db.prepare(sql);
      const bind = statement.bind.bind(statement);
      return {
        bind(...values) {
          const bound = bind(...values);
          const first = bound.first.bind(bound);
          bound.first = (...args) => (faults.read === "up" ? first(...args) : fail(faults.read));
          return bound;
        },
        first: (...args) => (faults.read === "up" ? statement.first(...args) : fail(faults.read)),
        run: () => statement.run(),
      };
    },
    batch(statements) {
      faults.batches++;
      return faults.batch === "up" ? db.batch(statements) : fail(faults.batch);
    },
  };
}

/** Runs `work`; its result or its error as data. */
async function answer(work) {
  try {
    return { result: JSON.parse(JSON.stringify((await work()) ?? null)) };
  } catch (error) {
    return { error: { name: error?.name, code: error?.code, message: String(error?.message ?? error), cause: error?.cause === undefined ? undefined : String(error.cause?.message ?? error.cause) } };
  }
}

const rowOf = async (env, key) => (await env.DB.prepare("SELECT value, ts FROM ratebound WHERE name = 'api' AND key = ?").bind(key).first()) ?? null;

const routes = {
  setup: async (env) => {
    await createTable(env.DB);
    await env.DB.prepare("CREATE TABLE IF NOT EXISTS posts (id INTEGER PRIMARY KEY, author TEXT NOT NULL)").run();
  },
  /**
   * Takes 2 tokens of `api` for `key` through a healthy store, then makes `calls` (each
   * `{ op, name, options }`, or `{ op: "limitAll", requests }`) one after another on a limiter
   * whose D1 fails as `failure` says; answers each call's result or error, and the row after.
   */
  calls: async (env, { key, failure, options = {}, calls }) => {
    await new RateLimiter(d1Store(env.DB), LIMITS, { now: () => NOW }).limit("api", { key, count: 2 });
    const faults = { read: "up", batch: "up", batches: 0 };
    if (failure === "reads throw") faults.read = "throws";
    if (failure === "batches throw") faults.batch = "throws";
    const store = failure === "the table is missing" ? d1Store(env.DB, { table: "no_such_table" }) : d1Store(faultyDb(env.DB, faults));
    const limiter = new RateLimiter(store, LIMITS, { now: () => NOW, ...options });
    const answers = [];
    for (const call of calls) {
      answers.push(await answer(() => (call.op === "limitAll" ? limiter.limitAll(call.requests) : limiter[call.op](call.name, call.options))));
    }
    return { answers, row: await rowOf(env, key), batches: faults.batches };
  },
  /**
   * Reads or batches hang (`hang`: "read" or "batch"): a call per policy under a timeout of 60 ms,
   * then D1 answers again and one more call goes through; answers each, and the row after.
   */
  hang: async (env, { key, hang }) => {
    await new RateLimiter(d1Store(env.DB), LIMITS, { now: () => NOW }).limit("api", { key, count: 2 });
    const faults = { read: "up", batch: "up", batches: 0 };
    faults[hang] = "hangs";
    const limiter = new RateLimiter(d1Store(faultyDb(env.DB, faults)), LIMITS, { now: () => NOW, timeout: 60 });
    const answers = [];
    for (const name of ["api", "loose", "guarded"]) answers.push(await answer(() => limiter.limit(name, { key })));
    const untouched = await rowOf(env, key);
    faults[hang] = "up";
    answers.push(await answer(() => limiter.limit("api", { key })));
    return { answers, untouched, row: await rowOf(env, key) };
  },
  /** The app's own d1Transaction whose batch throws: its statement must not run. */
  appTransaction: async (env, { key }) => {
    await new RateLimiter(d1Store(env.DB), LIMITS, { now: () => NOW }).limit("api", { key, count: 2 });
    const faults = { read: "up", batch: "throws", batches: 0 };
    const db = faultyDb(env.DB, faults);
    const outcome = await answer(() =>
      d1Transaction(db, async (tx) => {
        await new RateLimiter(tx, LIMITS, { now: () => NOW }).limit("api", { key });
        tx.add(env.DB.prepare("INSERT INTO posts (author) VALUES (?)").bind(key));
      }),
    );
    const posts = (await env.DB.prepare("SELECT COUNT(*) AS n FROM posts WHERE author = ?").bind(key).first()).n;
    return { outcome, posts, batches: faults.batches, row: await rowOf(env, key) };
  },
};

export default {
  async fetch(request, env) {
    const route = routes[new URL(request.url).pathname.slice(1)];
    if (route === undefined) return new Response("not found", { status: 404 });
    return Response.json(await answer(async () => route(env, await request.json())));
  },
};
