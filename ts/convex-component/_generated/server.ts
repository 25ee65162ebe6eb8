/* Written by hand, as `npx convex codegen` would write it: function builders typed by ./dataModel. */
import {
  actionGeneric,
  internalActionGeneric,
  internalMutationGeneric,
  internalQueryGeneric,
  mutationGeneric,
  queryGeneric,
  type ActionBuilder,
  type GenericActionCtx,
  type GenericDatabaseReader,
  type GenericDatabaseWriter,
  type GenericMutationCtx,
  type GenericQueryCtx,
  type MutationBuilder,
  type QueryBuilder,
} from "convex/server";
import type { DataModel } from "./dataModel.js";

/** A public query of the component. */
export const query: QueryBuilder<DataModel, "public"> = queryGeneric;
/** An internal query of the component. */
export const internalQuery: QueryBuilder<DataModel, "internal"> = internalQueryGeneric;
/** A public mutation of the component. */
export const mutation: MutationBuilder<DataModel, "public"> = mutationGeneric;
/** An internal mutation of the component. */
export const internalMutation: MutationBuilder<DataModel, "internal"> = internalMutationGeneric;
/** A public action of the component. */
export const action: ActionBuilder<DataModel, "public"> = actionGeneric;
/** An internal action of the component. */
export const internalAction: ActionBuilder<DataModel, "internal"> = internalActionGeneric;

export type QueryCtx = GenericQueryCtx<DataModel>;
export type MutationCtx = GenericMutationCtx<DataModel>;
export type ActionCtx = GenericActionCtx<DataModel>;
export type DatabaseReader = GenericDatabaseReader<DataModel>;
export type DatabaseWriter = GenericDatabaseWriter<DataModel>;
