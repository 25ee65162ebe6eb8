/**
 * The `onDecision` option: one event per decided call, for metrics and logs.
 * A limiter without the option never reaches this module's work: no event is
 * built and no clock is read (`RateLimiter` checks the hook once per call).
 * Loaded on a hooked call's first answer: an app without a hook never downloads it.
 * @module
 */
import type { Degraded } from "./store-call.js";
import type { RateLimitResult } from "./types.js";

/**
 * One decided call, as the `onDecision` hook receives it.
 *
 * @example
 * new RateLimiter(store, LIMITS, {
 *   onDecision: (event) => console.log(event.name, event.outcome, event.storeMs),
 * });
 */
export interface DecisionEvent {
  /** The limit's name. A `limitAll`/`checkAll` reports one event per request, each with its own name. */
  readonly name: string;
  /** The call's key; absent for the limit's shared state. */
  readonly key?: string;
  /**
   * `"allowed"`, `"refused"`, or `"error"` (the call rejected: the store failed under `"closed"`, or its state was corrupt).
   * What the caller got: a dry run's would-be refusal is `"allowed"`, with `dryRun: "refused"`.
   */
  readonly outcome: "allowed" | "refused" | "error";
  /** Set for a dry-run limit (its config's `dryRun`, or the call's): what enforcing it would have answered. */
  readonly dryRun?: "allowed" | "refused";
  /** The wait of a refusal (a dry run's would-be refusal too), or of an allowed reservation, in ms. */
  readonly retryAfter?: number;
  /**
   * Milliseconds from handing the call to the store until its answer (`performance.now()`),
   * including waiting for its batch's turn on a coalescing store and any fallback; `0` when
   * the answer was local (`fromCache`).
   */
  readonly storeMs: number;
  /** Set when the store failed and the call's policy answered: `"store-error"` or `"store-timeout"`. */
  readonly degraded?: Degraded["degraded"];
  /** With `degraded`: who answered, `"open"` (admitted undecided) or `"memory"` (the fallback decided). */
  readonly fallback?: "open" | "memory";
  /** `true` when the `refusalCache` repeated a refusal without asking the store. */
  readonly fromCache?: boolean;
  /**
   * How many calls were decided together with this one: the batch a coalescing store ran it in,
   * the group a store that decides next to its data sent it with (its `RemoteAnswer.batchSize`),
   * or a `limitAll`'s requests; `1` when alone.
   */
  readonly batchSize: number;
  /** `true` for `limit`/`limitAll` (tokens taken when allowed), `false` for `check`/`checkAll`. */
  readonly write: boolean;
  /** The error the call rejected with (`outcome: "error"`). */
  readonly error?: unknown;
}

/** The `onDecision` option: called once per decided call, after its answer is known, before the caller sees it. */
export type DecisionHook = (event: DecisionEvent) => void;

/** What a call's path records for its event, only when the limiter has a hook. */
export interface Probe {
  /** When the store was handed the call (`performance.now()`); `undefined` until then. */
  start: number | undefined;
  /** When its answer came back. */
  end: number | undefined;
  /** The answer, once decided (a refusal is recorded before `throws: true` turns it into an error). */
  result: (RateLimitResult & Partial<Degraded>) | undefined;
  fromCache: boolean;
  batchSize: number;
  /** The calls decided (one, or a batch's requests), once checked: a call that fails before is not reported. */
  calls: ReadonlyArray<{ readonly name: string; readonly key: string | undefined }>;
  /** The call's failure policy. */
  policy: unknown;
  /** Per call: whether it is a dry run (`undefined`: none is). */
  dryRun?: readonly boolean[];
  /** Per call, when a batch's calls were answered apart (dry-run and enforced limits mixed): each one's answer. */
  results?: ReadonlyArray<(RateLimitResult & Partial<Degraded>) | undefined>;
}


let warned = false;

/** Calls the hook; what it throws (or rejects with) is reported once as a process warning and never reaches the call. */
function deliver(hook: DecisionHook, event: DecisionEvent): void {
  try {
    const returned = (hook as (event: DecisionEvent) => unknown)(event);
    if (typeof returned === "object" && returned !== null && typeof (returned as PromiseLike<unknown>).then === "function") {
      (returned as PromiseLike<unknown>).then(undefined, hookFailed);
    }
  } catch (error) {
    hookFailed(error);
  }
}

function hookFailed(error: unknown): void {
  if (warned) return;
  warned = true;
  const emit = (globalThis as { process?: { emitWarning?: (warning: string, type: string) => void } }).process?.emitWarning;
  const why = error instanceof Error ? error.message : String(error);
  if (typeof emit === "function") emit(`ratebound: an onDecision hook threw (${why}); its calls were answered as if it had not (reported once)`, "RateboundWarning");
}

/** The event of one call (or of one request of a batch), from what its path recorded and how it settled. */
function eventOf(index: number, name: string, key: string | undefined, write: boolean, recorded: Probe, error: unknown, failed: boolean): DecisionEvent {
  const result = recorded.results === undefined ? recorded.result : recorded.results[index];
  const storeMs = recorded.fromCache || recorded.start === undefined || recorded.end === undefined ? 0 : recorded.end - recorded.start;
  const dryRun = recorded.dryRun?.[index] === true && result !== undefined;
  const event: { -readonly [K in keyof DecisionEvent]: DecisionEvent[K] } = {
    name,
    // The result recorded is the enforced one: a dry run answers its caller `ok: true` whatever it says.
    outcome: result === undefined ? "error" : result.ok || dryRun ? "allowed" : "refused",
    storeMs,
    batchSize: recorded.batchSize,
    write,
  };
  if (dryRun) event.dryRun = result.ok ? "allowed" : "refused";
  if (key !== undefined) event.key = key;
  if (result?.retryAfter !== undefined) event.retryAfter = result.retryAfter;
  if (result?.degraded !== undefined) {
    event.degraded = result.degraded;
    event.fallback = recorded.policy === "open" ? "open" : "memory";
  }
  if (recorded.fromCache) event.fromCache = true;
  if (result === undefined && failed) event.error = error;
  return event;
}

/**
 * Reports a settled call to `hook`: one event per call the probe recorded. A call that failed
 * before reaching the store (bad input) is not a decision and is not reported.
 */
export function report(hook: DecisionHook, write: boolean, recorded: Probe, error: unknown, failed: boolean): void {
  if (recorded.start === undefined && !recorded.fromCache) return;
  recorded.calls.forEach((call, index) => deliver(hook, eventOf(index, call.name, call.key, write, recorded, error, failed)));
}
