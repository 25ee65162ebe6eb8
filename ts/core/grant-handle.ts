/**
 * A grant's handle: settle it to what was really used, or cancel it. (The
 * charge and the settle themselves are in `grant.ts`, loaded on first use.)
 * @module
 */
import { grantSettled } from "./errors.js";
import type { DryRunReport, GrantData, RateLimitFigures, SettleResult } from "./types.js";

/** Settles a grant's data at `actual` tokens (the limiter's `settle`, bound to it). */
export type Settler = (data: GrantData, actual: number) => Promise<SettleResult>;

/**
 * The handle of tokens `limit` granted with `grant: true`. It settles (or
 * cancels) once; its {@link Grant.data} is the same grant in a form you can
 * store or send, to settle elsewhere with `limiter.settle(data, actual)`.
 *
 * @example
 * const { ok, grant } = await limiter.limit("llmTokens", { key: teamId, count: estimate, reserve: true, grant: true });
 * if (ok) {
 *   const reply = await callModel(prompt);
 *   await grant.settle(reply.usage.totalTokens);
 * }
 */
export class Grant {
  /** The grant's serialisable form: `{ name, key?, id, count, chargedAt, shards }`. */
  readonly data: GrantData;
  readonly #settler: Settler;
  /** "open", then "settling" while a settle is under way, then "settled". */
  #state: "open" | "settling" | "settled" = "open";

  /**
   * @param data The grant's data, as the core answered it.
   * @param settler The limiter's settle.
   */
  constructor(data: GrantData, settler: Settler) {
    this.data = data;
    this.#settler = settler;
  }

  /**
   * Settles at what was really used: gives back the unused tokens (within
   * the refund rule: never more than the charge could still hold) or takes
   * the extra, into debt no deeper than `maxReserved`.
   *
   * @param actual Tokens really used, a finite number `>= 0`.
   * @returns `{ refunded, charged, unpaid, retryAfter? }`.
   * @example
   * const { refunded } = await grant.settle(1200);
   */
  async settle(actual: number): Promise<SettleResult> {
    if (this.#state !== "open") throw grantSettled(this.data.name);
    this.#state = "settling";
    try {
      const settled = await this.#settler(this.data, actual);
      this.#state = "settled";
      return settled;
    } catch (error) {
      this.#state = "open";
      throw error;
    }
  }

  /**
   * Gives back all the tokens the grant took (within the refund rule).
   *
   * @returns As {@link Grant.settle}.
   * @example
   * await grant.cancel();
   */
  cancel(): Promise<SettleResult> {
    return this.settle(0);
  }
}

/**
 * What `limit` answers with `grant: true`: a grant carries its handle; with
 * `figures: true`, granted or refused, the limit's header figures at the charge
 * (the same the core answers a plain `limit`).
 */
export type GrantResult =
  // A dry run's would-be refusal (`dryRun.ok === false`) is answered ok without a grant: nothing was taken.
  | { ok: true; retryAfter?: number; grant: Grant; figures?: RateLimitFigures; dryRun?: DryRunReport }
  | { ok: false; retryAfter: number; grant?: undefined; figures?: RateLimitFigures };

