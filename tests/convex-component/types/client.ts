// The client's names, signatures and types are @convex-dev/rate-limiter's; the component's functions
// take and return what the ComponentApi an app sees says. Every `@ts-expect-error` must be an error.
import { RateLimiter as ReferenceRateLimiter } from "@convex-dev/rate-limiter";
import type { ComponentApi as ReferenceComponentApi } from "rate-limiter-040/_generated/component.js";
import { useRateLimit as referenceUseRateLimit } from "rate-limiter-040/react";
import referenceTest from "rate-limiter-040/test";
import { useRateLimit } from "ratebound/convex-component/react";
import rateLimiterTest from "ratebound/convex-component/test";
import type { ApiFromModules, FunctionArgs, FunctionReturnType } from "convex/server";
import { MINUTE, RateLimiter, isRateLimitError, type ComponentApi, type LeaseData, type LeaseReturns, type RateLimitReturns, type RunMutationCtx } from "ratebound/convex-component";
import type * as leases from "../../../pkg/convex-component/leases.js";
import type * as lib from "../../../pkg/convex-component/lib.js";
import type * as time from "../../../pkg/convex-component/time.js";
import { components } from "../../../examples/convex-component/convex/_generated/api";
import { rateLimiter } from "../../../examples/convex-component/convex/rateLimits";

declare const ctx: RunMutationCtx;

// Limit names are type-checked; other names need an inline config.
await rateLimiter.limit(ctx, "sendMessage", { key: "ada", count: 1, reserve: false, throws: true });
await rateLimiter.check(ctx, "allMessages");
await rateLimiter.getValue(ctx, "allMessages", { sampleShards: 2 });
await rateLimiter.reset(ctx, "sendMessage", { key: "ada" });
await rateLimiter.limit(ctx, "oneOff", { config: { kind: "fixed window", rate: 1, period: MINUTE } });
// @ts-expect-error a misspelt name without a config
await rateLimiter.limit(ctx, "sendMesage");
// @ts-expect-error count is a number
await rateLimiter.limit(ctx, "sendMessage", { count: "1" });
await rateLimiter.limitAll(ctx, [{ name: "sendMessage", key: "ada" }, { name: "allMessages" }]);
// @ts-expect-error a misspelt name in a batch
await rateLimiter.limitAll(ctx, [{ name: "allMesages" }]);

const status = await rateLimiter.check(ctx, "sendMessage", { key: "ada" });
if (!status.ok) {
  const wait: number = status.retryAfter;
  void wait;
}
const error: unknown = new Error();
if (isRateLimitError(error)) {
  const retryAfter: number = error.data.retryAfter;
  void retryAfter;
}

// The same limits through the reference's client: an app switches by changing imports only.
const limits = { sendMessage: { kind: "token bucket", rate: 10, period: MINUTE, capacity: 3 } } as const;
const ours = new RateLimiter(components.rateLimiter, limits);
const theirs = new ReferenceRateLimiter(components.rateLimiter, limits); // ratebound's component is a superset of the reference's API
type SameResult = Awaited<ReturnType<typeof ours.limit<"sendMessage">>> extends Awaited<ReturnType<typeof theirs.limit<"sendMessage">>> ? true : false;
const sameResult: SameResult = true;
void sameResult;

// The component's functions take and return what its ComponentApi (and the reference's) declares.
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Own = ApiFromModules<{ lib: typeof lib; time: typeof time }>;
// `Reference` is 0.4.0's ComponentApi.
type Declared = ComponentApi["lib"];
type Reference = ReferenceComponentApi["lib"];
const checks: [
  Equal<FunctionArgs<Own["lib"]["rateLimit"]>, FunctionArgs<Declared["rateLimit"]>>,
  Equal<FunctionReturnType<Own["lib"]["rateLimit"]>, FunctionReturnType<Declared["rateLimit"]>>,
  Equal<FunctionArgs<Own["lib"]["getValue"]>, FunctionArgs<Reference["getValue"]>>,
  Equal<FunctionReturnType<Own["lib"]["getValue"]>, FunctionReturnType<Reference["getValue"]>>,
  Equal<FunctionArgs<Own["lib"]["checkRateLimit"]>, FunctionArgs<Reference["checkRateLimit"]>>,
  Equal<FunctionArgs<Own["lib"]["resetRateLimit"]>, FunctionArgs<Reference["resetRateLimit"]>>,
  Equal<FunctionArgs<Own["lib"]["clearAll"]>, FunctionArgs<Reference["clearAll"]>>,
  Equal<FunctionArgs<Own["lib"]["rateLimitAll"]>, FunctionArgs<Declared["rateLimitAll"]>>,
  Equal<FunctionReturnType<Own["time"]["getServerTime"]>, number>,
  Equal<FunctionArgs<Own["lib"]["enqueueUpdates"]>, FunctionArgs<Reference["enqueueUpdates"]>>,
  Equal<FunctionArgs<Own["lib"]["enqueueUpdates"]>, FunctionArgs<Declared["enqueueUpdates"]>>,
  Equal<FunctionArgs<Own["lib"]["queuedRateLimit"]>, FunctionArgs<Declared["queuedRateLimit"]>>,
  Equal<FunctionArgs<Own["lib"]["checkQueuedRateLimit"]>, FunctionArgs<Declared["checkQueuedRateLimit"]>>,
  Equal<Parameters<typeof useRateLimit>, Parameters<typeof referenceUseRateLimit>>,
  Equal<Parameters<typeof rateLimiterTest.register>, Parameters<typeof referenceTest.register>>,
] = [true, true, true, true, true, true, true, true, true, true, true, true, true, true, true];

// 0.4's asynchronous limits: an asynchronous limit can't be sharded (as in the reference's types).
new RateLimiter(components.rateLimiter, {
  queued: { kind: "token bucket", rate: 10, period: MINUTE, applyUpdates: "asynchronously" },
  exact: { kind: "token bucket", rate: 10, period: MINUTE, shards: 4, applyUpdates: "transactionally" },
});
new RateLimiter(components.rateLimiter, {
  // @ts-expect-error an asynchronous limit can't be sharded
  bad: { kind: "token bucket", rate: 10, period: MINUTE, applyUpdates: "asynchronously", shards: 4 },
});
// ratebound's headroom: per limit, in tokens.
new RateLimiter(components.rateLimiter, { queued: { kind: "fixed window", rate: 10, period: MINUTE, applyUpdates: "asynchronously" } }, { headroom: { queued: 2 } });
// @ts-expect-error headroom is a number of tokens
new RateLimiter(components.rateLimiter, limits, { headroom: { sendMessage: "2" } });
const typedStatus: { ok: true; retryAt: undefined } | { ok: false; retryAt: number } | undefined = useRateLimit({} as never).status;
void typedStatus;
void checks;

// Concurrency limits: `limit` on one answers a lease's data, which `release` and `extend` take.
const mixed = new RateLimiter(components.rateLimiter, {
  exports: { kind: "concurrency", max: 4, lease: 30_000 },
  sendMessage: { kind: "token bucket", rate: 10, period: MINUTE },
});
const taken = await mixed.limit(ctx, "exports", { key: "team", count: 2, throws: false });
const leaseAnswer: LeaseReturns = taken;
const rateAnswer: RateLimitReturns = await mixed.limit(ctx, "sendMessage", { key: "ada" });
if (taken.ok) {
  const data: LeaseData = taken.lease;
  const expiresAt: number = taken.expiresAt;
  const { released }: { released: number } = await mixed.release(ctx, data);
  const extended: { expiresAt: number } = await mixed.extend(ctx, data, 30_000);
  // @ts-expect-error extend takes a number of ms
  await mixed.extend(ctx, data, "30s");
  void [expiresAt, released, extended];
}
// @ts-expect-error max is a number
new RateLimiter(components.rateLimiter, { exports: { kind: "concurrency", max: "4", lease: 30_000 } });
type OwnLeases = ApiFromModules<{ leases: typeof leases }>["leases"];
const leaseChecks: [
  Equal<FunctionArgs<OwnLeases["take"]>, FunctionArgs<ComponentApi["leases"]["take"]>>,
  Equal<FunctionReturnType<OwnLeases["take"]>, FunctionReturnType<ComponentApi["leases"]["take"]>>,
  Equal<FunctionArgs<OwnLeases["release"]>, FunctionArgs<ComponentApi["leases"]["release"]>>,
  Equal<FunctionArgs<OwnLeases["extend"]>, FunctionArgs<ComponentApi["leases"]["extend"]>>,
] = [true, true, true, true];
void [leaseAnswer, rateAnswer, leaseChecks];
