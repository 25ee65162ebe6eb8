/**
 * `acquire` on a concurrency limit: waits for a slot and answers its lease.
 * A refusal's `retryAfter` is when a held lease expires at the latest, but a
 * holder may release sooner, in another process, and nothing signals it: so
 * the wait asks again after a short delay that doubles (25 ms, then up to
 * 1 s), never later than the refusal's `retryAfter`. Time is all that is
 * counted here; every slot is the core's.
 * @module
 */
import { aborted, invalidRequest, mustBe, waitTooLong, wrongArgument } from "./errors.js";
import { checkedOptions, own } from "./options.js";
import type { Lease, LeaseResult } from "./leasing.js";

const LEASE_ACQUIRE_OPTIONS = ["key", "count", "maxWait", "signal"];
/** The first delay before asking again, and the longest, in ms. */
const FIRST_POLL_MS = 25;
const LONGEST_POLL_MS = 1_000;

/**
 * The limiter as this module uses it: its own `limit` on a concurrency limit, answering a lease
 * that can be released (a {@link Lease}, or a remote limiter's handle on one).
 */
export interface Leasing<Held extends { release(): Promise<unknown> } = Lease> {
  limit(name: string, options: object): Promise<{ ok: true; lease: Held } | Exclude<LeaseResult, { ok: true }>>;
}

/** Sleeps `ms`, or rejects with `ABORTED` when `signal` aborts first. */
function sleep(ms: number, signal: AbortSignal | undefined, limit: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(aborted(limit, signal!.reason));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, Math.max(0, Math.ceil(ms)));
    if (signal?.aborted) return onAbort();
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Waits for `count` slots of a concurrency limit (see `RateLimiter.acquire`).
 *
 * @param limiter The limiter (its `limit`), or a remote one's (`rateLimiterClient`'s, whose leases are handles on data).
 * @param clock The limiter's clock, ms.
 * @param name The limit.
 * @param options `key`, `count`, `maxWait` (ms from the call: `WAIT_TOO_LONG` when no slot came by then), `signal` (`ABORTED`).
 * @returns `{ waited, lease }` once the slots are held.
 * @example
 * // fragment: a remote limiter's limit answers { ok: true, lease } with a handle that releases
 * const { waited, lease } = await acquireLease({ limit: (name, options) => client.limit(name, options) }, Date.now, "exports", { key: teamId, maxWait: 10_000 });
 */
export async function acquireLease<Held extends { release(): Promise<unknown> } = Lease>(
  limiter: Leasing<Held>,
  clock: () => number,
  name: string,
  options: object | undefined,
): Promise<{ waited: number; lease: Held }> {
  const given = checkedOptions(name, options, LEASE_ACQUIRE_OPTIONS);
  const maxWait = own(given, "maxWait");
  if (maxWait !== undefined && (typeof maxWait !== "number" || !(maxWait >= 0))) throw invalidRequest(name, "maxWait", mustBe("maxWait", "a number of ms >= 0", maxWait));
  const signal = own(given, "signal") as AbortSignal | undefined;
  if (signal !== undefined && (typeof signal !== "object" || signal === null || typeof signal.addEventListener !== "function")) {
    throw wrongArgument("acquire", "signal", mustBe("signal", "an AbortSignal", signal));
  }
  const request: Record<string, unknown> = {};
  for (const field of ["key", "count"]) if (own(given, field) !== undefined) request[field] = own(given, field);
  const started = clock();
  const deadline = maxWait === undefined ? Number.POSITIVE_INFINITY : started + (maxWait as number);
  let poll = FIRST_POLL_MS;
  for (;;) {
    if (signal?.aborted) throw aborted(name, signal.reason);
    const answer = await limiter.limit(name, request);
    if (answer.ok) {
      // Aborted while the slot was being taken: it goes back at once.
      if (signal?.aborted) {
        await answer.lease.release();
        throw aborted(name, signal.reason);
      }
      return { waited: clock() - started, lease: answer.lease };
    }
    const now = clock();
    if (now >= deadline) throw waitTooLong(name, now - started + answer.retryAfter, maxWait as number);
    await sleep(Math.min(poll, answer.retryAfter, deadline - now), signal, name);
    poll = Math.min(poll * 2, LONGEST_POLL_MS);
  }
}
