/**
 * The worker that applies asynchronous limits' queued updates, as
 * `@convex-dev/rate-limiter` 0.4's does: `getBatch` reads `pendingUpdates` in
 * commit order within a share of the transaction's read limit, and
 * `processBatch` folds each limit's updates, in order, through ratebound's core
 * (`calculateRateLimit`, in ./queue.ts), writing each limit once and deleting the updates it
 * applied, in one transaction. `@convex-dev/batch-worker` runs the loop.
 * @module
 */
import { defineBatchWorkerValidators, ping } from "@convex-dev/batch-worker";
import { v } from "convex/values";
import { components, getBatchReference, processBatchReference } from "./references.js";
import type { Doc } from "./_generated/dataModel.js";
import { internalMutation, internalQuery, type DatabaseReader, type MutationCtx } from "./_generated/server.js";
import { applyUpdate, storedState } from "./queue.js";
import { SINGLETON_SHARD, vPendingUpdate } from "./validators.js";

/** The worker's name in `@convex-dev/batch-worker` (and its `getBatch`'s `name` argument). */
export const WORKER_NAME = "rateLimiter";
/** The most updates one batch holds. */
export const BATCH_SIZE = 1024;
/** The share of the transaction's read limit `getBatch` may use, leaving the rest to `processBatch`. */
export const READ_BUDGET_FRACTION = 0.25;

const worker = { name: WORKER_NAME, workQuery: getBatchReference, workerMutation: processBatchReference };

/**
 * Wakes the worker so that it drains what was just enqueued (cheap while it is already running).
 *
 * @param ctx The enqueuing mutation's ctx.
 * @returns When the worker has been pinged.
 * @example
 * await ctx.db.insert("pendingUpdates", { update, updatedAt: ctx.db.vars.commitTs });
 * await pingWorker(ctx);
 */
export async function pingWorker(ctx: MutationCtx): Promise<void> {
  await ping(ctx, components.batchWorker, worker);
}

const { vQueryArgs, vQueryReturns, vMutationArgs, vMutationReturns } = defineBatchWorkerValidators({
  batch: { updates: v.array(v.object({ id: v.id("pendingUpdates"), update: vPendingUpdate })) },
});

/**
 * The next batch: pending updates from `cursor` on, in commit order, at most
 * {@link BATCH_SIZE} and ending with the first that crosses
 * {@link READ_BUDGET_FRACTION} of the read limit; `{ kind: "idle" }` when none.
 */
export const getBatch = internalQuery({
  args: vQueryArgs,
  returns: vQueryReturns,
  handler: async (ctx, { cursor }) => {
    const { used, remaining } = (await ctx.meta.getTransactionMetrics()).bytesRead;
    const readBudget = (used + remaining) * READ_BUDGET_FRACTION;
    const docs: Doc<"pendingUpdates">[] = [];
    const pending = ctx.db.query("pendingUpdates").withIndex("updatedAt", (q) => q.gte("updatedAt", cursor ?? 0n));
    for await (const doc of pending) {
      docs.push(doc);
      if (docs.length >= BATCH_SIZE) break;
      if ((await ctx.meta.getTransactionMetrics()).bytesRead.used >= readBudget) break;
    }
    const last = docs[docs.length - 1];
    if (last === undefined) return { kind: "idle" as const };
    return {
      kind: "work" as const,
      batch: { updates: docs.map((doc) => ({ id: doc._id, update: doc.update })) },
      cursor: last.updatedAt,
    };
  },
});

/** One limit's state while a batch is folded: the stored row, and the state to write (null: delete). */
type Folding = { name: string; key: string | undefined; stored: Doc<"rateLimits"> | null; next: { value: number; ts: number } | null };

/**
 * Applies a batch: for each limit, its updates in order (a reset forgets the
 * state; a consumption takes `count` tokens at its `ts`, never earlier than the
 * state it applies to), then one write per limit and the batch's deletion.
 */
export const processBatch = internalMutation({
  args: vMutationArgs,
  returns: vMutationReturns,
  handler: async (ctx, { updates }) => {
    const limits = new Map<string, Folding>();
    for (const { update } of updates) {
      const limit = await folding(ctx.db, limits, update.name, update.key);
      limit.next = applyUpdate(limit.next, limit.stored, update);
    }
    await Promise.all([
      ...Array.from(limits.values(), (limit) => write(ctx, limit)),
      ...updates.map(({ id }) => ctx.db.delete("pendingUpdates", id)),
    ]);
    return null;
  },
});

/** The limit's folding state, read once per batch. */
async function folding(db: DatabaseReader, limits: Map<string, Folding>, name: string, key: string | undefined): Promise<Folding> {
  const id = JSON.stringify([name, key ?? null]);
  const known = limits.get(id);
  if (known) return known;
  const stored = await storedState(db, name, key);
  const limit: Folding = { name, key, stored, next: stored ? { value: stored.value, ts: stored.ts } : null };
  limits.set(id, limit);
  return limit;
}

/** Writes a folded limit: delete, patch or insert its singleton shard. */
async function write(ctx: MutationCtx, { name, key, stored, next }: Folding): Promise<void> {
  if (next === null) {
    if (stored) await ctx.db.delete("rateLimits", stored._id);
  } else if (stored) {
    await ctx.db.patch("rateLimits", stored._id, next);
  } else {
    await ctx.db.insert("rateLimits", { name, key, shard: SINGLETON_SHARD, ...next });
  }
}
