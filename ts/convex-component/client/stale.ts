/**
 * The client's helpers for asynchronous limits: a queued consumption, and a
 * query on a stale snapshot.
 * @module
 */
import type { FunctionArgs, FunctionReference, FunctionReturnType } from "convex/server";
import type { PendingUpdate, RateLimitArgs } from "../validators.js";
import type { RunMutationCtx, RunQueryCtx } from "./index.js";

/** The queued consumption of a granted asynchronous call, at the caller's clock. */
export function consumption({ name, key, count, config }: RateLimitArgs): PendingUpdate {
  return { kind: "consume", name, key, count: count ?? 1, config, ts: Date.now() };
}

/**
 * Runs a query; inside a mutation, on a stale snapshot, so that the mutation
 * records no read of the limit and never conflicts with its other callers.
 */
export async function runStaleQuery<Query extends FunctionReference<"query", "internal">>(
  ctx: RunQueryCtx,
  query: Query,
  args: FunctionArgs<Query>,
): Promise<FunctionReturnType<Query>> {
  const { type } = await ctx.meta.getFunctionMetadata();
  return type === "mutation" ? (ctx as RunMutationCtx).runQuery(query, args, { useStaleSnapshot: true }) : ctx.runQuery(query, args);
}
