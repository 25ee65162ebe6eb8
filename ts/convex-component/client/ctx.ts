/**
 * What the client's methods are given (a query's, a mutation's or an action's
 * ctx), and the one way they run a query without recording a read.
 * @module
 */
import type { FunctionArgs, FunctionReference, FunctionReturnType, GenericActionCtx, GenericDataModel, GenericMutationCtx, GenericQueryCtx } from "convex/server";

/** A ctx that can run queries: a query's, a mutation's or an action's (`meta` tells a mutation apart). */
export type RunQueryCtx = Pick<GenericQueryCtx<GenericDataModel>, "runQuery" | "meta">;
/** A ctx that can run mutations too: a mutation's or an action's. */
export type RunMutationCtx = Pick<GenericMutationCtx<GenericDataModel>, "runQuery" | "runMutation" | "meta">;
/** The reference's name for a ctx that can run queries. */
export type QueryCtx = RunQueryCtx;
/** The reference's name for a mutation's ctx. */
export type MutationCtx = RunMutationCtx;
/** The reference's name for an action's ctx. */
export type ActionCtx = Pick<GenericActionCtx<GenericDataModel>, "runQuery" | "runMutation" | "runAction" | "meta">;

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
