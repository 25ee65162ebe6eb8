/**
 * The client's side of concurrency limits: `limit` on a `{ kind: "concurrency" }`
 * limit runs the component's `leases.take` and answers the lease's data;
 * `release` and `extend` run `leases.release` and `leases.extend` on that data,
 * in this mutation or any later one.
 * @module
 */
import type { GenericDataModel, GenericMutationCtx } from "convex/server";
import type { ComponentApi } from "../_generated/component.js";

type RunMutationCtx = Pick<GenericMutationCtx<GenericDataModel>, "runMutation">;

/** A concurrency limit: at most `max` leases held at once (1 to 64), each for `lease` ms unless released or extended first. */
export type ConcurrencyConfig = { kind: "concurrency"; max: number; lease: number };

/** A lease's data: what `limit` answers on a concurrency limit, and all `release` and `extend` need (store it, pass it to a scheduled function). */
export type LeaseData = { name: string; key?: string; id: number; slots: number[] };

/** What `limit` answers on a concurrency limit: the lease's data and its expiry (ms), or the wait until enough slots can be free. */
export type LeaseReturns = { ok: true; lease: LeaseData; expiresAt: number } | { ok: false; retryAfter: number };

/** What `limit` on a concurrency limit is asked. */
export type LeaseArgs = { name: string; key?: string; count?: number; throws?: boolean; config: ConcurrencyConfig };

/** Whether a limit's config is a concurrency limit's. */
export function isConcurrencyConfig(config: { kind: string }): config is ConcurrencyConfig {
  return config.kind === "concurrency";
}

/**
 * Runs `leases.take` with `limit`'s options: `key`, `count` and `throws` (and the inline `config`,
 * already read); any other option (`reserve`, `grant`) is an error naming it, and takes nothing.
 */
export function takeLease(ctx: RunMutationCtx, component: ComponentApi, name: string, options: object | undefined, config: ConcurrencyConfig): Promise<LeaseReturns> {
  const { key, count, throws, config: _inline, ...rest } = (options ?? {}) as Omit<LeaseArgs, "name" | "config"> & { config?: unknown };
  const unknown = Object.keys(rest);
  if (unknown.length > 0) return Promise.reject(new Error(`Rate limit ${name} is a concurrency limit: it takes key, count and throws (got ${unknown.join(", ")})`));
  // Convex values hold no `undefined`: an absent option is left out.
  const given = Object.fromEntries(Object.entries({ key, count, throws }).filter(([, value]) => value !== undefined));
  return ctx.runMutation(component.leases.take, { ...given, name, config });
}

/** Runs `leases.release` on a lease's data. */
export function releaseLease(ctx: RunMutationCtx, component: ComponentApi, lease: LeaseData, config: ConcurrencyConfig): Promise<{ released: number }> {
  return ctx.runMutation(component.leases.release, { lease, config });
}

/** Runs `leases.extend` on a lease's data. */
export function extendLease(ctx: RunMutationCtx, component: ComponentApi, lease: LeaseData, ms: number, config: ConcurrencyConfig): Promise<{ expiresAt: number }> {
  return ctx.runMutation(component.leases.extend, { lease, ms, config });
}
