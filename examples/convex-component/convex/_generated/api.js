/* Written by hand, as `npx convex codegen` writes it (codegen needs a deployment): function references. */
import { anyApi, componentsGeneric } from "convex/server";

export const api = anyApi;
export const internal = anyApi;
export const components = componentsGeneric();
