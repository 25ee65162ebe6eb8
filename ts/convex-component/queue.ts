/**
 * Asynchronous limits' queue, read the way the worker applies it: the stored
 * state of a limit with its pending updates folded in, in order, by ratebound's
 * core. The worker (./worker.ts) writes the fold; the queued decisions
 * (`checkQueuedRateLimit`, `queuedRateLimit` in ./lib.ts) decide on it.
 * @module
 */
import { calculateRateLimit } from "ratebound";
import { RateLimiter, type RateLimitStore } from "ratebound/convex";
import type { Doc } from "./_generated/dataModel.js";
import type { DatabaseReader } from "./_generated/server.js";
import { SINGLETON_SHARD, coreConfig, type PendingUpdate } from "./validators.js";

/** A state as the core reads it. */
export type State = { value: number; ts: number };

/**
 * One update applied to a limit's state: a reset forgets it; a consumption
 * takes `count` tokens at its `ts`, clamped so that time never runs backwards
 * past the state it lands on (nor past the stored state, after a reset).
 *
 * @param next The state so far (`null`: none, full).
 * @param stored The stored state the fold started from.
 * @param update The update to apply.
 * @returns The state after it.
 * @example
 * applyUpdate(null, null, { kind: "consume", name: "x", count: 1, ts: 0, config: { kind: "token bucket", rate: 1, period: 1000 } });
 * // { value: 0, ts: 0 }
 */
export function applyUpdate(next: State | null, stored: State | null, update: PendingUpdate): State | null {
  if (update.kind === "reset") return null;
  const now = Math.max(update.ts, next?.ts ?? update.ts, stored?.ts ?? update.ts);
  try {
    const { value, ts } = calculateRateLimit(next, coreConfig(update.config), now, update.count);
    return { value, ts };
  } catch (error) {
    throw namingTheLimit(error, update.name, update.key);
  }
}

/** The core's error about a corrupt state, naming the limit and key it belongs to (same `code`). */
function namingTheLimit(error: unknown, name: string, key: string | undefined): unknown {
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (code !== "CORRUPT_STATE" || typeof message !== "string") return error;
  const detail = message.slice(message.indexOf(" is corrupt: ") + " is corrupt: ".length);
  const which = `rate limit ${JSON.stringify(name)}${key === undefined ? "" : ` key ${JSON.stringify(key)}`}`;
  return Object.assign(new Error(`Stored state for ${which} shard ${SINGLETON_SHARD} is corrupt: ${detail}`), { code });
}

/**
 * A limit's stored singleton shard.
 *
 * @param db The database (a stale snapshot's, or the transaction's).
 * @param name The limit's name.
 * @param key Its key (`undefined`: the shared state).
 * @returns The row, or `null`.
 * @example
 * const stored = await storedState(ctx.db, "llmTokens", undefined);
 */
export async function storedState(db: DatabaseReader, name: string, key: string | undefined): Promise<Doc<"rateLimits"> | null> {
  return db
    .query("rateLimits")
    .withIndex("name", (q) => q.eq("name", name).eq("key", key).eq("shard", SINGLETON_SHARD))
    .unique();
}

/**
 * The state the worker will write once it has applied every update queued for
 * this limit: the stored state with the limit's pending updates folded in.
 * Reading it inside a mutation makes the mutation conflict with the worker and
 * with every concurrent enqueue for the same limit.
 *
 * @param db The database.
 * @param name The limit's name.
 * @param key Its key.
 * @returns The folded state (`null`: full).
 * @example
 * const state = await queuedState(ctx.db, "llmTokens", undefined);
 */
export async function queuedState(db: DatabaseReader, name: string, key: string | undefined): Promise<State | null> {
  const stored = await storedState(db, name, key);
  const start: State | null = stored && { value: stored.value, ts: stored.ts };
  const pending = await db
    .query("pendingUpdates")
    .withIndex("limit", (q) => q.eq("update.name", name).eq("update.key", key))
    .collect();
  // Commit order, as the worker applies them; this transaction's own updates (their commit
  // timestamp is not known yet, and can't be compared) come last, in the order they were written.
  const committed = pending.filter((doc) => typeof doc.updatedAt === "bigint");
  committed.sort((a, b) => (a.updatedAt < b.updatedAt ? -1 : a.updatedAt > b.updatedAt ? 1 : 0));
  const own = pending.filter((doc) => typeof doc.updatedAt !== "bigint");
  return [...committed, ...own].reduce<State | null>((state, { update }) => applyUpdate(state, start, update), start);
}

/**
 * A limiter that decides on one given state (the queued state) and never
 * writes: the core validates the request and decides, with the same errors and
 * `ConvexError`s as the component's other functions.
 *
 * @param state The state to decide on.
 * @returns A `RateLimiter` for `check` and `getValue`.
 * @example
 * await limiterOn(await queuedState(ctx.db, name, key)).check(name, { key, count, config });
 */
export function limiterOn(state: State | null): RateLimiter {
  const store: RateLimitStore = {
    read: (ref) => (ref.shard === SINGLETON_SHARD ? state : null),
    write: () => {
      throw new Error("ratebound: a queued decision never writes");
    },
  };
  return new RateLimiter(store, {}, { random: () => Math.random() });
}
