/**
 * Waiting for a turn: `acquire` and `acquireAll` reserve with `limit` /
 * `limitAll` and then sleep the wait the core answered, so the wait before a
 * call is one decision, never a polling loop. A limit refuses a reservation
 * past its `maxReserved` (or takes none at all with `maxReserved: 0`): then
 * nothing was charged, and the call is decided again when the core says it
 * can pass. Everything counted here is time; every token is the core's.
 * Loaded on the first `acquire`: an app that only limits never downloads it.
 * @module
 */
import type { Grant } from "./grant-handle.js";
import type { LimitConfig } from "./failure-policy.js";
import type { RateLimitResult } from "./types.js";
import { aborted, invalidRequest, mustBe, unknownField, waitTooLong, wrongArgument } from "./errors.js";
import { checkFlag } from "./call.js";
import { checkedOptions, own } from "./options.js";

/**
 * The options of `acquire`.
 *
 * @example
 * const options: AcquireOptions = { key: "api.example.com", count: 1, maxWait: 10_000, signal: AbortSignal.timeout(15_000) };
 */
export interface AcquireOptions {
  /** Whose limit: a user, a host, an API key. Omit for the limit's one shared state. */
  key?: string;
  /** Tokens the call takes, a finite number `>= 0`; default 1. */
  count?: number;
  /**
   * The longest wait accepted, in ms from the call: a turn that would come later rejects with
   * `WAIT_TOO_LONG` and charges nothing. Default: no bound.
   */
  maxWait?: number;
  /** Aborts the wait: rejects with `ABORTED` and gives the reservation back. */
  signal?: AbortSignal;
  /** Answer a {@link Grant} to settle to what the call really used (an LLM reply's tokens). */
  grant?: boolean;
  /** An inline limit, for a name that is not one of the limiter's. */
  config?: LimitConfig;
}

/**
 * One limit of `acquireAll`.
 *
 * @example
 * const request: AcquireRequest = { name: "tokens", key: "team-1", count: 1_500 };
 */
export interface AcquireRequest<Name extends string = string> {
  /** The limit's name. */
  name: Name;
  /** Whose limit; omit for the shared state. */
  key?: string;
  /** Tokens the call takes; default 1. */
  count?: number;
  /** An inline limit, for a name that is not one of the limiter's. */
  config?: LimitConfig;
}

/**
 * The options of `acquireAll`: as {@link AcquireOptions}, for the whole batch.
 *
 * @example
 * const options: AcquireAllOptions = { maxWait: 30_000, grant: true };
 */
export interface AcquireAllOptions {
  /** The longest wait accepted for the batch, in ms from the call (`WAIT_TOO_LONG` past it; nothing charged). */
  maxWait?: number;
  /** Aborts the wait: rejects with `ABORTED` and gives every reservation back. */
  signal?: AbortSignal;
  /** Answer a {@link Grant} per limit, in the order asked. */
  grant?: boolean;
}

/**
 * What `acquire` resolves to once the call may go ahead: how long it waited (ms, by the
 * limiter's clock), and with `grant: true` the grant to settle.
 */
export type AcquireAnswer<Options> = Options extends { grant: true } ? { waited: number; grant: Grant } : { waited: number };

/** What `acquireAll` resolves to: how long it waited, and with `grant: true` one grant per limit, in the order asked. */
export type AcquireAllAnswer<Options> = Options extends { grant: true } ? { waited: number; grants: Grant[] } : { waited: number };

/** The limiter as this module uses it: its own `limit` and `limitAll` (so a subclass's hooks see every reservation). */
export interface Reserving {
  limit(name: string, options: object): Promise<RateLimitResult & { grant?: Grant }>;
  limitAll(requests: readonly object[], options?: object): Promise<RateLimitResult>;
}

const ACQUIRE_OPTIONS = ["key", "count", "maxWait", "signal", "grant", "config"];
const ALL_OPTIONS = ["maxWait", "signal", "grant"];
const REQUEST_FIELDS = ["name", "key", "count", "config"];
/** The longest delay a timer takes (2^31 − 1 ms); longer waits sleep in several steps. */
const LONGEST_TIMER_MS = 2 ** 31 - 1;

/** `maxWait`, `signal` and `grant`, checked, and whether what is taken may have to be given back (then it is taken as grants). */
function waitOptions(limit: string, fn: string, options: object): { maxWait: number | undefined; signal: AbortSignal | undefined; grant: boolean; returnable: boolean } {
  const maxWait = own(options, "maxWait");
  if (maxWait !== undefined && (typeof maxWait !== "number" || !(maxWait >= 0))) {
    throw invalidRequest(limit, "maxWait", mustBe("maxWait", "a number of ms >= 0", maxWait));
  }
  const signal = own(options, "signal");
  if (signal !== undefined && !isSignal(signal)) throw wrongArgument(fn, "signal", mustBe("signal", "an AbortSignal", signal));
  const grant = checkFlag(limit, "grant", own(options, "grant"));
  // A reservation that may have to be given back (past maxWait, or aborted) is taken as a grant.
  return { maxWait: maxWait as number | undefined, signal: signal as AbortSignal | undefined, grant, returnable: grant || maxWait !== undefined || signal !== undefined };
}

/** Whether `value` can be listened to as an AbortSignal. */
function isSignal(value: unknown): value is AbortSignal {
  return typeof value === "object" && value !== null && typeof (value as AbortSignal).aborted === "boolean" && typeof (value as AbortSignal).addEventListener === "function";
}

/**
 * Resolves once `clock()` reaches `due`: never early by that clock (a timer that fires before it
 * sleeps the rest), rejects with `ABORTED` when `signal` aborts first.
 */
function sleepUntil(clock: () => number, due: number, signal: AbortSignal | undefined, limit: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const onAbort = () => {
      clearTimeout(timer);
      reject(aborted(limit, signal!.reason));
    };
    const tick = () => {
      const left = due - clock();
      if (!(left > 0)) {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      } else timer = setTimeout(tick, Math.min(Math.ceil(left), LONGEST_TIMER_MS));
    };
    if (signal?.aborted) return onAbort();
    signal?.addEventListener("abort", onAbort, { once: true });
    tick();
  });
}

/** Gives back what the grants took (a grant's refund: all of it at once, never more than was charged), latest first. */
async function giveBack(grants: readonly (Grant | undefined)[]): Promise<void> {
  for (const grant of [...grants].reverse()) await grant?.cancel();
}

/**
 * Sleeps until the turn that comes at `due`, unless it comes past `maxWait` after `started`
 * (`WAIT_TOO_LONG`) or `signal` aborts (`ABORTED`): then what `held` took is given back first.
 */
async function waitTurn(
  clock: () => number,
  started: number,
  due: number,
  { maxWait, signal }: { maxWait: number | undefined; signal: AbortSignal | undefined },
  label: string,
  held: readonly (Grant | undefined)[],
): Promise<void> {
  try {
    if (signal?.aborted) throw aborted(label, signal.reason);
    if (maxWait !== undefined && due - started > maxWait) throw waitTooLong(label, due - started, maxWait);
    await sleepUntil(clock, due, signal, label);
  } catch (error) {
    await giveBack(held);
    throw error;
  }
}

/**
 * Waits for the call's turn on one limit (see `RateLimiter.acquire`).
 *
 * @param limiter The limiter (its `limit`).
 * @param clock The limiter's clock, ms.
 * @param name The limit.
 * @param options {@link AcquireOptions}.
 * @returns `{ waited, grant? }` once the call may go ahead.
 */
export async function acquire(limiter: Reserving, clock: () => number, name: string, options: AcquireOptions | undefined): Promise<{ waited: number; grant?: Grant }> {
  const label = typeof name === "string" ? name : "";
  const given = checkedOptions(name, options, ACQUIRE_OPTIONS);
  const wait = waitOptions(label, "acquire", given);
  const { signal, grant } = wait;
  const request: Record<string, unknown> = { reserve: true };
  for (const field of ["key", "count", "config"]) if (own(given, field) !== undefined) request[field] = own(given, field);
  if (wait.returnable) request.grant = true;
  const started = clock();
  for (;;) {
    if (signal?.aborted) throw aborted(label, signal.reason);
    const answer = await limiter.limit(name, request);
    const decided = clock();
    const taken = answer.ok ? answer.grant : undefined;
    // The decision's clock is read before the store answers: counting from after it is never early.
    await waitTurn(clock, started, decided + (answer.retryAfter ?? 0), wait, label, [taken]);
    // Refused (past maxReserved, or a limit without reservations): nothing was charged; ask again now.
    if (!answer.ok) continue;
    const waited = clock() - started;
    return grant ? { waited, grant: taken! } : { waited };
  }
}

/** The items of `acquireAll`, checked for shape (their values are `limitAll`'s to check). */
function acquireRequests(requests: unknown): Record<string, unknown>[] {
  let isArray = false;
  try {
    isArray = Array.isArray(requests);
  } catch {
    isArray = false;
  }
  if (!isArray) throw wrongArgument("acquireAll", "requests", mustBe("requests", "an array of limits", requests));
  return (requests as unknown[]).map((request) => {
    if (typeof request !== "object" || request === null) throw wrongArgument("acquireAll", "requests", mustBe("requests", "an array of objects", request));
    const item: Record<string, unknown> = { reserve: true };
    for (const field of Object.keys(request)) {
      if (!REQUEST_FIELDS.includes(field)) throw invalidRequest("acquireAll", field, unknownField(field, REQUEST_FIELDS, "field", " of an acquireAll item"));
      item[field] = (request as Record<string, unknown>)[field];
    }
    return item;
  });
}

/**
 * Waits for the call's turn on several limits, all or none (see `RateLimiter.acquireAll`).
 * Without `grant`, `maxWait` and `signal` it is one `limitAll` of reservations (one decision
 * for the batch); with any of them, one grant per limit in the order asked, every one given
 * back when another refuses, the wait is too long or the signal aborts.
 *
 * @param limiter The limiter (its `limit` and `limitAll`).
 * @param clock The limiter's clock, ms.
 * @param requests The limits.
 * @param options {@link AcquireAllOptions}.
 * @returns `{ waited, grants? }` once the call may go ahead.
 */
export async function acquireAll(
  limiter: Reserving,
  clock: () => number,
  requests: readonly AcquireRequest[],
  options: AcquireAllOptions | undefined,
): Promise<{ waited: number; grants?: Grant[] }> {
  const items = acquireRequests(requests);
  const label = items.map((item) => (typeof item.name === "string" ? item.name : "")).join(", ");
  const given = checkedOptions("acquireAll", options, ALL_OPTIONS);
  const turn = waitOptions(label, "acquireAll", given);
  const { signal, grant, returnable } = turn;
  const started = clock();
  for (;;) {
    if (signal?.aborted) throw aborted(label, signal.reason);
    let ok = true;
    let wait = 0;
    const taken: Grant[] = [];
    if (!returnable) {
      const answer = await limiter.limitAll(items);
      ok = answer.ok;
      wait = answer.retryAfter ?? 0;
    } else {
      try {
        for (const item of items) {
          const { name, ...fields } = item;
          const answer = await limiter.limit(name as string, { ...fields, grant: true });
          wait = Math.max(wait, answer.retryAfter ?? 0);
          if (!answer.ok) {
            ok = false;
            break;
          }
          taken.push(answer.grant!);
        }
      } catch (error) {
        await giveBack(taken);
        throw error;
      }
      // One limit refused: the others are given back before waiting, so nothing is held meanwhile.
      if (!ok) await giveBack(taken.splice(0));
    }
    await waitTurn(clock, started, clock() + wait, turn, label, taken);
    if (!ok) continue;
    const waited = clock() - started;
    return grant ? { waited, grants: taken } : { waited };
  }
}
