/**
 * `ratebound/convex-component/react`: the reference's `useRateLimit` hook
 * (`@convex-dev/rate-limiter/react`), with the projection made by ratebound's
 * core (`calculateRateLimit`) instead of JavaScript arithmetic. The file name
 * has two dots so that Convex's bundler, which bundles every module of the
 * component's directory, skips this browser-only module.
 * @module
 */
import { useQuery, useConvex } from "convex/react";
import type { FunctionReference } from "convex/server";
import { calculateRateLimit } from "ratebound";
import { useCallback, useEffect, useMemo, useReducer, useState } from "react";
import { coreConfig, type GetValueArgs, type GetValueReturns, type RateLimitConfig } from "./validators.js";

/** What the hook reads, and for how many tokens `status` is computed. */
export type UseRateLimitOptions = {
  /** The limit's name, when the query serves several. */
  name?: string;
  /** The key, when the query's `key` function accepts one from the client. */
  key?: string;
  /** Tokens `status` asks for (default 1). */
  count?: number;
  /** Shards to sample, for a sharded limit. */
  sampleShards?: number;
  /** The `getServerTime` mutation from `hookAPI`, to correct for the browser's clock. */
  getServerTimeMutation?: GetServerTimeMutation;
  /** An inline config, when the query allows one. */
  config?: RateLimitConfig;
};

/** The `getRateLimit` query that `RateLimiter.hookAPI` returns, as the browser references it. */
export type GetRateLimitValueQuery = FunctionReference<"query", "public", GetValueArgs, GetValueReturns>;

/** The `getServerTime` mutation that `RateLimiter.hookAPI` returns. */
export type GetServerTimeMutation = FunctionReference<"mutation", "public", Record<string, never>, number>;

/** What `check(ts, count)` answers, in the browser's clock: the limit's value at `ts` after taking `count`. */
export type RateLimitCheck = {
  value: number;
  ts: number;
  config: GetValueReturns["config"];
  shard: number;
  ok: boolean;
  retryAt: number | undefined;
};

/**
 * A limit's status in a React component, kept current: whether `count` tokens
 * could be taken now, and if not, when (`retryAt`, the browser's clock). It
 * re-renders when `retryAt` passes. With `getServerTimeMutation`, one call
 * measures the offset between the browser's clock and the server's.
 *
 * @param getRateLimitValueQuery `api.yourModule.getRateLimit` (from `rateLimiter.hookAPI`).
 * @param opts `name`, `key`, `count`, `sampleShards`, `config`, `getServerTimeMutation`.
 * @returns `{ status, check }`: `status` is `undefined` while loading, else `{ ok: true }` or
 *   `{ ok: false, retryAt }`; `check(ts?, count?)` projects the limit to any time.
 * @example
 * const { status } = useRateLimit(api.rateLimits.getRateLimit, { getServerTimeMutation: api.rateLimits.getServerTime });
 * return <button disabled={!status?.ok}>Send</button>;
 */
export function useRateLimit(getRateLimitValueQuery: GetRateLimitValueQuery, opts?: UseRateLimitOptions) {
  // clientTime + timeOffset = serverTime
  const [timeOffset, setTimeOffset] = useState<number>(0);
  const refresh = useForceUpdate();
  const convex = useConvex();
  const { getServerTimeMutation, count, ...args } = opts ?? {};

  useEffect(() => {
    if (!getServerTimeMutation) return;
    const clientTime = Date.now();
    void convex.mutation(getServerTimeMutation, {}).then((serverTime: number) => {
      const latency = Date.now() - clientTime;
      setTimeOffset(serverTime - clientTime - latency / 2);
    });
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [convex, !!getServerTimeMutation]);

  const rateLimitData = useQuery(getRateLimitValueQuery, {
    name: args.name,
    key: args.key,
    sampleShards: args.sampleShards,
    config: args.config,
  });

  const check = useCallback(
    (ts?: number, count?: number): RateLimitCheck | undefined => {
      if (!rateLimitData) return undefined;
      const serverTime = (ts ?? Date.now()) + timeOffset;
      const { value: stored, ts: storedTs, config, shard } = rateLimitData;
      const projected = calculateRateLimit({ value: stored, ts: storedTs }, coreConfig(config), serverTime, count);
      return {
        value: projected.value,
        ts: projected.ts - timeOffset,
        config,
        shard,
        ok: projected.retryAfter === undefined,
        retryAt: projected.retryAfter === undefined ? undefined : serverTime + projected.retryAfter - timeOffset,
      };
    },
    [rateLimitData, timeOffset],
  );

  const current = check(Date.now(), count ?? 1);
  const ret = useMemo(() => {
    if (!current) return { status: undefined, check };
    if (!current.ok) return { status: { ok: false as const, retryAt: current.retryAt! }, check };
    return { status: { ok: true as const, retryAt: undefined }, check };
  }, [current, check]);

  useEffect(() => {
    if (ret.status?.ok !== false) return;
    const timer = setTimeout(refresh, ret.status.retryAt - Date.now());
    return () => clearTimeout(timer);
  }, [ret.status?.ok, ret.status?.retryAt, refresh]);

  return ret;
}

/** A function that re-renders the component. */
function useForceUpdate(): () => void {
  return useReducer((renders: number) => renders + 1, 0)[1];
}
