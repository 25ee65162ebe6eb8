/* Written by hand, as `npx convex codegen` would write it: the component's API as an app sees it
   (`components.rateLimiter`). `@convex-dev/rate-limiter` 0.4's ComponentApi, plus ratebound's batch, queued-limit and grant functions. */
import type { FunctionReference } from "convex/server";
import type { GrantData, SettleResult } from "ratebound";

type ApplyUpdates = "transactionally" | "asynchronously";
type Config =
  | { kind: "token bucket"; rate: number; period: number; capacity?: number; maxReserved?: number; shards?: number; applyUpdates?: ApplyUpdates; start?: null }
  | { kind: "fixed window"; rate: number; period: number; capacity?: number; maxReserved?: number; shards?: number; applyUpdates?: ApplyUpdates; start?: number };
type PendingUpdate =
  | { kind: "consume"; name: string; key?: string; count: number; config: Config; ts: number }
  | { kind: "reset"; name: string; key?: string };
type Returns = { ok: true; retryAfter?: number } | { ok: false; retryAfter: number };
type ConcurrencyConfig = { kind: "concurrency"; max: number; lease: number };
type LeaseData = { name: string; key?: string; id: number; slots: Array<number> };
type LimitArgs = { config: Config; count?: number; key?: string; name: string; reserve?: boolean; throws?: boolean };
type BatchArgs = {
  requests: Array<{ config: Config; count?: number; key?: string; name: string; reserve?: boolean }>;
  throws?: boolean;
};

/**
 * The component's functions, as `components.rateLimiter` in an app.
 *
 * @example
 * async function limited(ctx: MutationCtx, component: ComponentApi) {
 *   return ctx.runMutation(component.lib.rateLimit, { name: "x", config: { kind: "token bucket", rate: 1, period: 1000 } });
 * }
 */
export type ComponentApi<Name extends string | undefined = string | undefined> = {
  grants: {
    rateLimitWithGrant: FunctionReference<
      "mutation",
      "internal",
      LimitArgs,
      { ok: true; retryAfter?: number; grant: GrantData } | { ok: false; retryAfter: number },
      Name
    >;
    settle: FunctionReference<
      "mutation",
      "internal",
      { grant: GrantData; actual: number; config: Config },
      SettleResult,
      Name
    >;
  };
  leases: {
    take: FunctionReference<
      "mutation",
      "internal",
      { name: string; key?: string; count?: number; throws?: boolean; config: ConcurrencyConfig },
      { ok: true; lease: LeaseData; expiresAt: number } | { ok: false; retryAfter: number },
      Name
    >;
    release: FunctionReference<"mutation", "internal", { lease: LeaseData; config: ConcurrencyConfig }, { released: number }, Name>;
    extend: FunctionReference<"mutation", "internal", { lease: LeaseData; ms: number; config: ConcurrencyConfig }, { expiresAt: number }, Name>;
  };
  lib: {
    checkRateLimit: FunctionReference<"query", "internal", LimitArgs, Returns, Name>;
    checkRateLimitAll: FunctionReference<"query", "internal", BatchArgs, Returns, Name>;
    clearAll: FunctionReference<"mutation", "internal", { before?: number }, null, Name>;
    enqueueUpdates: FunctionReference<"mutation", "internal", { updates: Array<PendingUpdate> }, null, Name>;
    checkQueuedRateLimit: FunctionReference<"query", "internal", LimitArgs, Returns, Name>;
    queuedRateLimit: FunctionReference<"mutation", "internal", LimitArgs, Returns, Name>;
    getServerTime: FunctionReference<"mutation", "internal", {}, number, Name>;
    getValue: FunctionReference<
      "query",
      "internal",
      { config: Config; key?: string; name: string; sampleShards?: number },
      { config: Config; shard: number; ts: number; value: number },
      Name
    >;
    rateLimit: FunctionReference<"mutation", "internal", LimitArgs, Returns, Name>;
    rateLimitAll: FunctionReference<"mutation", "internal", BatchArgs, Returns, Name>;
    resetRateLimit: FunctionReference<"mutation", "internal", { key?: string; name: string }, null, Name>;
  };
  time: {
    getServerTime: FunctionReference<"mutation", "internal", {}, number, Name>;
  };
};
