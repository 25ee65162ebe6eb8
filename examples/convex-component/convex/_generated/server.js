/* Written by hand, as `npx convex codegen` writes it (codegen needs a deployment): function builders. */
export {
  actionGeneric as action,
  httpActionGeneric as httpAction,
  internalActionGeneric as internalAction,
  internalMutationGeneric as internalMutation,
  internalQueryGeneric as internalQuery,
  mutationGeneric as mutation,
  queryGeneric as query,
} from "convex/server";
