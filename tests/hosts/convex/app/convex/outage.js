// Convex functions of the outage suite (tests/outage/convex/outage.spec.mjs): ratebound/convex over
// the function's ctx.db whose reads of the rateLimits table throw or hang, or whose writes throw
// (what a Convex function meets when it exceeds its read or write limits). Each call's answer or
// error comes back as data, so the mutation commits whatever the limiter wrote: "nothing written"
// is then the limiter's doing, not the rollback's.
import { v } from "convex/values";
import { RateLimiter, convexStore } from "ratebound/convex";
import { RateLimiter as CoreRateLimiter } from "ratebound";
import { mutation, query } from "./_generated/server.js";

const NOW = 1_700_000_000_000;
const API = { kind: "token bucket", rate: 5, period: 60_000 };
const LIMITS = { api: API, loose: { ...API, onStoreError: "open" }, guarded: { ...API, onStoreError: { fallback: "memory" } } };

/** `ctx.db` whose reads and writes fail as `faults` says (`"up"`, `"throws"`, `"hangs"`). */
function faultyDb(db, faults) {
  const fail = (mode) => (mode === "throws" ? Promise.reject(new Error("Too many reads in a single function execution (limit: 4096)")) : new Promise(() => {}));
  const failing = { withIndex: () => failing, unique: () => fail(faults.read), first: () => fail(faults.read), collect: () => fail(faults.read) };
  return {
    query: (table) => (faults.read === "up" ? db.query(table) : failing),
    get: (id) => (faults.read === "up" ? db.get(id) : fail(faults.read)),
    insert: (table, value) => (faults.write === "up" ? db.insert(table, value) : fail(faults.write)),
    patch: (id, value) => (faults.write === "up" ? db.patch(id, value) : fail(faults.write)),
    replace: (id, value) => (faults.write === "up" ? db.replace(id, value) : fail(faults.write)),
    delete: (id) => (faults.write === "up" ? db.delete(id) : fail(faults.write)),
  };
}

const asData = (error) => ({ error: { name: error?.name, code: error?.code, message: String(error?.message ?? error), cause: error?.cause === undefined ? undefined : String(error.cause?.message ?? error.cause) } });

/**
 * Makes `calls` (`{ op, name, options }`, or `{ op: "limitAll", requests }`) one after another over
 * a ctx.db that fails as `read` and `write` say (then, with `heal`, one more `limit` of "api" once it
 * answers again); each answer or error as data.
 */
export const calls = mutation({
  args: { read: v.string(), write: v.string(), options: v.any(), calls: v.any(), heal: v.optional(v.string()) },
  handler: async (ctx, { read, write, options, calls, heal }) => {
    const faults = { read, write };
    const limiter = new RateLimiter(convexStore(faultyDb(ctx.db, faults)), LIMITS, { now: () => NOW, ...options });
    const answers = [];
    for (const call of calls) {
      try {
        answers.push({ result: JSON.parse(JSON.stringify(call.op === "limitAll" ? await limiter.limitAll(call.requests) : await limiter[call.op](call.name, call.options))) });
      } catch (error) {
        answers.push(asData(error));
      }
    }
    if (heal !== undefined) {
      faults.read = faults.write = "up";
      answers.push({ result: await limiter.limit("api", { key: heal }) });
    }
    return answers;
  },
});

/** A limit of "api" whose write throws, not caught: the mutation fails with the store's error. */
export const uncaught = mutation({
  args: { key: v.string() },
  handler: async (ctx, { key }) => {
    await new RateLimiter(convexStore(faultyDb(ctx.db, { read: "up", write: "throws" })), LIMITS, { now: () => NOW }).limit("api", { key });
  },
});

/** The core RateLimiter over a query's ctx.db, under "open": its write is the wrong store, never an admission. */
export const limitInQueryOpen = query({
  args: {},
  handler: (ctx) => new CoreRateLimiter(convexStore(ctx.db), LIMITS, { now: () => NOW, onStoreError: "open" }).limit("api", { key: "ada" }),
});
