/**
 * Dry runs: a limit (its config's `dryRun: true`) or a call (`dryRun: true`)
 * that is decided and reported but never refuses. The decision is the core's,
 * exactly as when enforcing: a granted call is charged as usual (so the state
 * measured is the real one), a would-be refusal charges nothing (as a refusal
 * writes nothing). Only the answer changes: `ok: true`, and `dryRun` holds what
 * enforcing would have answered. No token arithmetic here: a choice of answers.
 * @module
 */
import { invalidConfig, mustBe } from "./errors.js";
import { LimitFields } from "./options.js";
import type { DryRunReport, RateLimitResult } from "./types.js";

/** The config field, beside `onStoreError`, that the driver reads and the core never sees. */
export const DRY_RUN = "dryRun";

/**
 * A config's `dryRun`, checked.
 *
 * @param limit The limit's name, for messages.
 * @param flag What the config gave.
 * @returns The flag (`undefined` when absent).
 * @throws `INVALID_CONFIG` naming the limit and `dryRun` when it is not a boolean.
 * @example
 * dryRunFlag("api", true); // true
 */
export function dryRunFlag(limit: string, flag: unknown): boolean | undefined {
  if (flag === undefined || typeof flag === "boolean") return flag;
  throw invalidConfig(limit, DRY_RUN, mustBe(DRY_RUN, "a boolean", flag));
}

/**
 * What enforcing answered, as a dry run's report.
 *
 * @param result The enforced answer.
 * @returns `{ ok, retryAfter? }`.
 */
export function reportOf(result: RateLimitResult): DryRunReport {
  return result.retryAfter === undefined ? { ok: result.ok } : { ok: result.ok, retryAfter: result.retryAfter };
}

/**
 * The answer of a dry run: `ok: true`, whatever enforcing answered, with that
 * answer in `dryRun`. A granted reservation keeps its `retryAfter` (it was
 * charged, so its wait is real); a would-be refusal's wait is only in
 * `dryRun.retryAfter` (a caller that waits for `retryAfter` does not wait for it).
 * Other fields (`figures`, `degraded`, `cause`, `grant`) are kept as they are.
 *
 * @param result The enforced answer.
 * @returns The dry run's answer.
 * @example
 * asDryRun({ ok: false, retryAfter: 1500 }); // { ok: true, dryRun: { ok: false, retryAfter: 1500 } }
 */
export function asDryRun<T extends RateLimitResult>(result: T): T {
  const dryRun = reportOf(result);
  if (result.ok) return { ...result, dryRun };
  const { retryAfter: _wait, ...rest } = result as RateLimitResult & Record<string, unknown>;
  void _wait;
  return { ...rest, ok: true, dryRun } as unknown as T;
}

/**
 * A dry run's call as the enforcing path takes it: the same fields, but never `throws` (the
 * enforced answer is turned into the dry run's by {@link asDryRun}, never thrown).
 *
 * @param given The call's fields.
 * @returns A copy without `throws`.
 */
export function enforcing(given: LimitFields): LimitFields {
  return Object.assign(new LimitFields(), given, { throws: undefined });
}
