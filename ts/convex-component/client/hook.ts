/**
 * The client's side of the React hook: `hookAPI` makes a public query that
 * reports a limit's value to the browser (`getRateLimit`) and a mutation the
 * browser measures its clock's offset with (`getServerTime`).
 * @module
 */
import { mutationGeneric, queryGeneric, type GenericDataModel, type GenericQueryCtx } from "convex/server";
import { v } from "convex/values";
import type { ComponentApi } from "../_generated/component.js";
import { getValueArgs, getValueReturns, type GetValueReturns, type RateLimitConfig } from "../validators.js";

/** Options of `RateLimiter.hookAPI`: whose limit the browser may read. */
export type HookOpts<DataModel extends GenericDataModel> = {
  key?:
    | string
    | ((
        ctx: GenericQueryCtx<DataModel>,
        // The key the client sent, if any.
        keyFromClient?: string,
      ) => string | Promise<string>);
  sampleShards?: number;
};

/**
 * The query and the mutation of `RateLimiter.hookAPI`.
 *
 * @param client The client, whose `component` (the installed one) the query calls when it runs.
 * @param name The limit the query reports (a client may ask for another by name).
 * @param options The hook's options, as given (`key`, `sampleShards`, `config`).
 * @param configOf A limit's config, inline or defined (the client's `getConfig`).
 * @returns `{ getRateLimit, getServerTime }`.
 */
export function hookAPI<DataModel extends GenericDataModel>(
  client: { readonly component: ComponentApi },
  name: string,
  options: object | undefined,
  configOf: (name: string) => RateLimitConfig,
) {
  return {
    getRateLimit: queryGeneric({
      args: getValueArgs,
      returns: getValueReturns,
      handler: async (ctx, args): Promise<GetValueReturns> => {
        const finalName = args.name ?? name;
        const { key: keyOrFn, ...rest } = (options ?? {}) as HookOpts<DataModel> & { config?: RateLimitConfig };
        let key: string | undefined;
        if (args.key && !keyOrFn) {
          throw new Error("To allow client-provided key, provide a `key` function in the hook options.");
        }
        if (typeof keyOrFn === "function") {
          key = await keyOrFn(ctx as unknown as GenericQueryCtx<DataModel>, args.key);
        } else if (keyOrFn !== undefined) {
          key = keyOrFn;
        }
        return ctx.runQuery(client.component.lib.getValue, {
          ...rest,
          ...args,
          key,
          name: finalName,
          config: args.config ?? configOf(finalName),
        });
      },
    }),
    getServerTime: mutationGeneric({
      args: {},
      returns: v.number(),
      handler: async (): Promise<number> => Date.now(),
    }),
  };
}
