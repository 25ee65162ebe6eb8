/**
 * ratebound/preview: what the server would answer, computed in the browser.
 *
 * A {@link RateLimitPreview} holds a `getValue` snapshot and answers, in client
 * time, whether a request would be allowed and when it will be. Every token is
 * counted by the core's `calculateRateLimit`, the function the server decides
 * with, so for an unsharded limit the preview and the server cannot disagree.
 * This module imports the core by the package's own name: it shares the one
 * WebAssembly instance the app already loaded.
 * @module
 */
import {
  calculateRateLimit,
  decideRateLimit,
  invalidArgument,
  ownOptions,
  wrongArgument,
  type RateLimitConfig,
  type RateLimitState,
  type RateLimitValue,
} from "ratebound";

/**
 * A preview's answer, in client time (ms since the epoch by the client's clock).
 *
 * - `ok`: a request of that `count` would be allowed at that instant.
 * - `value`: tokens available at that instant, before the request (negative: reserved debt).
 * - `retryAt`: when refused, the first instant at which the same request would be allowed.
 */
export type PreviewStatus =
  | { ok: true; value: number; retryAt?: undefined }
  | { ok: false; value: number; retryAt: number };

/** The snapshot a preview starts from: what `RateLimiter.getValue` returned on the server. */
export type PreviewSnapshot = RateLimitValue;

/** Options of the {@link RateLimitPreview} constructor. */
export interface RateLimitPreviewOptions {
  /**
   * Milliseconds to add to the client clock to get the server's:
   * `clientTime + serverTimeOffset = serverTime`. Default 0. See {@link estimateServerTimeOffset}.
   */
  serverTimeOffset?: number;
  /** The client clock, ms since the epoch; default `Date.now`. */
  now?: () => number;
  /** The limit's name, for error messages; default `"preview"`. */
  name?: string;
}

/** Options of {@link RateLimitPreview.status} and {@link RateLimitPreview.consume}. */
export interface PreviewRequest {
  /** Tokens the request would take, a finite number `>= 0`; default 1. */
  count?: number;
  /** The client instant to answer for, ms since the epoch; default the client clock's now. */
  at?: number;
}

/** Options of {@link RateLimitPreview.subscribe}. */
export interface PreviewSubscribeOptions {
  /** Tokens of the request whose status to follow; default 1. */
  count?: number;
}

/** Called with the new status of a subscribed request. */
export type PreviewListener = (status: PreviewStatus) => void;

/** The largest delay `setTimeout` accepts (about 24.8 days); longer waits re-arm. */
const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

interface Subscription {
  readonly listener: PreviewListener;
  readonly count: number | undefined;
  last: PreviewStatus | undefined;
  timer: ReturnType<typeof setTimeout> | undefined;
}


function sameStatus(a: PreviewStatus | undefined, b: PreviewStatus): boolean {
  return a !== undefined && a.ok === b.ok && a.value === b.value && a.retryAt === b.retryAt;
}

/**
 * A client-side copy of one rate limit: previews decisions before a request
 * is sent, and throttles requests the server would refuse.
 *
 * It starts from a server `getValue` snapshot and the offset between the two
 * clocks. {@link RateLimitPreview.status} projects the snapshot to a client
 * instant; {@link RateLimitPreview.consume} takes tokens locally, optimistically,
 * so rapid clicks are stopped before any request leaves;
 * {@link RateLimitPreview.update} replaces the local state with a fresh server
 * snapshot; {@link RateLimitPreview.subscribe} reports changes, with one timer
 * for `retryAt` and no polling.
 *
 * For an unsharded limit (`shards` 1) the answers are the server's, bit for
 * bit, given the same state and instant. For a sharded limit the snapshot
 * describes the whole limit while the server decides on one or two shards,
 * so the preview is an estimate: the server may still refuse a request the
 * preview allows when the shards are uneven. A preview never reserves: it
 * answers for plain requests (`reserve: false`), and it follows the debt a
 * server reservation left in the snapshot. A fixed window configured without
 * `start` gets its random start when the server first writes its state; a
 * snapshot taken before then carries a start the server will not use, so call
 * `update` with the snapshot of the first response before relying on windows.
 *
 * @example
 * const snapshot = await (await fetch("/api/limit")).json(); // getValue on the server
 * const preview = new RateLimitPreview(snapshot, { serverTimeOffset: 250 });
 * const { ok, retryAt } = preview.status();
 * button.disabled = !ok;
 * if (!ok) label.textContent = `Try again at ${new Date(retryAt).toLocaleTimeString()}`;
 */
export class RateLimitPreview {
  #state: RateLimitState;
  #config: RateLimitConfig;
  #serverTimeOffset: number;
  readonly #now: () => number;
  readonly #name: string;
  readonly #subscriptions = new Set<Subscription>();

  /**
   * @param snapshot `{ value, ts, shard, config }` as `getValue` returned it (config with its defaults filled in).
   * @param options `serverTimeOffset` (ms, `clientTime + offset = serverTime`), `now`, `name`.
   */
  constructor(snapshot: PreviewSnapshot, options: RateLimitPreviewOptions = {}) {
    // Own fields only, each checked; the snapshot's numbers and the name are the core's to check.
    const [serverTimeOffset, now, name] = ownOptions("RateLimitPreview", options, ["serverTimeOffset", "now", "name"]);
    this.#state = stateOf(snapshot);
    this.#config = configOf(snapshot);
    this.#serverTimeOffset = serverTimeOffset === undefined ? 0 : checkedOffset(serverTimeOffset);
    if (now !== undefined && typeof now !== "function") throw invalidArgument("RateLimitPreview", "now", "a function", now);
    this.#now = (now as (() => number) | undefined) ?? Date.now;
    this.#name = name as string;
  }

  /**
   * The offset in use, as given to the constructor or the last `update`.
   *
   * @returns Milliseconds to add to the client clock to get the server's.
   * @example
   * const serverNow = Date.now() + preview.serverTimeOffset;
   */
  get serverTimeOffset(): number {
    return this.#serverTimeOffset;
  }

  /**
   * Whether a request would be allowed at a client instant, and if not, when it will be.
   * Changes nothing.
   *
   * @param request `count` (default 1) and `at`, a client instant (default now).
   * @returns `{ ok: true, value }` or `{ ok: false, value, retryAt }`, `retryAt` in client time.
   * @throws An `Error` with `code: "COUNT_EXCEEDS_MAX"` when `count` exceeds the capacity (no wait helps),
   *   and the core's `INVALID_REQUEST` error for a negative or non-finite `count`.
   * @example
   * // rate 3 per 10 s, capacity 3, empty at server time 60_000; the client clock is 5 s behind.
   * const preview = new RateLimitPreview(
   *   { value: 0, ts: 60_000, shard: 0, config: { kind: "token bucket", rate: 3, period: 10_000, capacity: 3, shards: 1 } },
   *   { serverTimeOffset: 5_000 },
   * );
   * preview.status({ at: 55_000 }); // => { ok: false, value: 0, retryAt: 58_334 }
   */
  status(request: PreviewRequest = {}): PreviewStatus {
    return this.#decide(request).status;
  }

  /**
   * Decides a request locally: when allowed, takes its tokens from the local
   * state at once (optimistically, before the server has answered), so the
   * next click sees them gone. A refusal changes nothing. Subscribers hear of
   * the change.
   *
   * @param request `count` (default 1) and `at`, a client instant (default now).
   * @returns The request's status as {@link RateLimitPreview.status} would have answered it.
   * @throws As {@link RateLimitPreview.status}.
   * @example
   * button.onclick = () => {
   *   if (!preview.consume().ok) return; // throttled in the browser: nothing is sent
   *   void sendMessage().then((snapshot) => preview.update(snapshot));
   * };
   */
  consume(request: PreviewRequest = {}): PreviewStatus {
    const { status, next } = this.#decide(request);
    if (status.ok) {
      this.#state = { value: next.value, ts: next.ts };
      this.#notify();
    }
    return status;
  }

  /**
   * Reconciles with a fresh server snapshot: the local state (and any
   * optimistic consumption) is replaced by the server's. Subscribers hear of
   * the change.
   *
   * @param snapshot `{ value, ts, shard, config }` from `getValue`, taken after the server's last decision.
   * @param options A new `serverTimeOffset`, when it was measured again.
   * @example
   * const { snapshot, serverTime } = await post("/api/send");
   * preview.update(snapshot, { serverTimeOffset: estimateServerTimeOffset(sentAt, serverTime, Date.now()) });
   */
  update(snapshot: PreviewSnapshot, options: { serverTimeOffset?: number } = {}): void {
    const [serverTimeOffset] = ownOptions("update", options, ["serverTimeOffset"]);
    const state = stateOf(snapshot);
    const config = configOf(snapshot);
    if (serverTimeOffset !== undefined) this.#serverTimeOffset = checkedOffset(serverTimeOffset);
    this.#state = state;
    this.#config = config;
    this.#notify();
  }

  /**
   * Calls `listener` whenever the status of a request of `count` tokens
   * changes: after `consume` and `update`, and when `retryAt` passes. While
   * refused, the subscription keeps one timer, set for `retryAt`; while
   * allowed, none. It does not call `listener` at once: read
   * {@link RateLimitPreview.status} for the current status.
   *
   * @param listener Receives the new status.
   * @param options `count`, default 1.
   * @returns Unsubscribes and clears the timer.
   * @example
   * const unsubscribe = preview.subscribe(({ ok }) => { button.disabled = !ok; });
   */
  subscribe(listener: PreviewListener, options: PreviewSubscribeOptions = {}): () => void {
    const [count] = ownOptions("subscribe", options, ["count"]);
    if (typeof listener !== "function") throw invalidArgument("subscribe", "listener", "a function", listener);
    const subscription: Subscription = { listener, count: count as number | undefined, last: undefined, timer: undefined };
    this.#subscriptions.add(subscription);
    this.#refresh(subscription, false);
    return () => {
      clearTimeout(subscription.timer);
      subscription.timer = undefined;
      this.#subscriptions.delete(subscription);
    };
  }

  /** The status of a request, and the state it would leave: both from the core. */
  #decide(request: PreviewRequest): { status: PreviewStatus; next: RateLimitState } {
    const [count, given] = ownOptions("status", request, ["count", "at"]);
    // Only an absent `at` means now; anything but a finite number is refused before any arithmetic.
    const at = given === undefined ? this.#now() : given;
    if (typeof at !== "number" || !Number.isFinite(at)) throw invalidArgument("status", "at", "a finite number of ms", at);
    const serverAt = at + this.#serverTimeOffset;
    // The server's own validation (a count no wait can satisfy is its error)
    // and decision rule, with the wait it would give.
    // An absent count or name is the core's default (1, "preview"); anything else it checks.
    const decision = decideRateLimit(this.#state, this.#config, serverAt, { count: count as number | undefined, name: this.#name });
    const available = calculateRateLimit(this.#state, this.#config, serverAt, 0);
    const status: PreviewStatus = decision.ok
      ? { ok: true, value: available.value }
      : { ok: false, value: available.value, retryAt: at + decision.retryAfter };
    return { status, next: { value: decision.value, ts: decision.ts } };
  }

  #notify(): void {
    for (const subscription of this.#subscriptions) this.#refresh(subscription, true);
  }

  /** Recomputes a subscription's status now, tells its listener if it changed, and re-arms its one timer. */
  #refresh(subscription: Subscription, tell: boolean): void {
    clearTimeout(subscription.timer);
    subscription.timer = undefined;
    const now = this.#now();
    const status = this.#decide(subscription.count === undefined ? { at: now } : { count: subscription.count, at: now }).status;
    const changed = !sameStatus(subscription.last, status);
    subscription.last = status;
    if (!status.ok) {
      // Whole milliseconds, rounded up, so the timer never fires before retryAt;
      // at least 1 ms, so a retryAt that rounds to now cannot spin.
      const delay = Math.min(MAX_TIMER_DELAY_MS, Math.max(1, Math.ceil(status.retryAt - now)));
      subscription.timer = setTimeout(() => {
        if (this.#subscriptions.has(subscription)) this.#refresh(subscription, true);
      }, delay);
    }
    if (tell && changed) subscription.listener(status);
  }
}

function checkedOffset(serverTimeOffset: unknown): number {
  if (typeof serverTimeOffset !== "number" || !Number.isFinite(serverTimeOffset)) {
    throw invalidArgument("RateLimitPreview", "serverTimeOffset", "a finite number of milliseconds", serverTimeOffset);
  }
  return serverTimeOffset;
}

/** The snapshot's state, own fields only: the core checks the numbers when it decides. */
function stateOf(snapshot: PreviewSnapshot): RateLimitState {
  const [value, ts] = ownOptions("RateLimitPreview", pick(snapshot, ["value", "ts"]), ["value", "ts"]);
  return { value, ts } as RateLimitState;
}

/** The snapshot's config (own field); the core validates it on first use. */
function configOf(snapshot: PreviewSnapshot): RateLimitConfig {
  const [config] = ownOptions("RateLimitPreview", pick(snapshot, ["config"]), ["config"]);
  return config as RateLimitConfig;
}

/** The own fields `fields` of a snapshot (it carries others, such as `shard`), or a coded error for a non-object. */
function pick(snapshot: unknown, fields: readonly string[]): Record<string, unknown> {
  if (typeof snapshot !== "object" || snapshot === null) throw invalidArgument("RateLimitPreview", "snapshot", "a getValue report { value, ts, config }", snapshot);
  const picked: Record<string, unknown> = {};
  for (const field of fields) if (Object.hasOwn(snapshot, field)) picked[field] = (snapshot as Record<string, unknown>)[field];
  return picked;
}

/**
 * The offset between the client's clock and the server's, from one round
 * trip: the server read `serverTime` halfway between `sentAt` and
 * `receivedAt` (the round trip is halved). The answer follows
 * `clientTime + serverTimeOffset = serverTime`; its error is at most half
 * the round trip.
 *
 * @param sentAt Client clock when the request left, ms since the epoch.
 * @param serverTime Server clock when it answered, ms since the epoch.
 * @param receivedAt Client clock when the answer arrived, ms since the epoch.
 * @returns Milliseconds to add to the client clock to get the server's.
 * @throws {RateboundTypeError} `INVALID_ARGUMENT` when a time is not finite or `receivedAt < sentAt`.
 * @example
 * estimateServerTimeOffset(1_000, 6_100, 1_200); // => 5_000: the server is 5 s ahead
 */
export function estimateServerTimeOffset(sentAt: number, serverTime: number, receivedAt: number): number {
  for (const [name, time] of [["sentAt", sentAt], ["serverTime", serverTime], ["receivedAt", receivedAt]] as const) {
    if (!Number.isFinite(time)) throw invalidArgument("estimateServerTimeOffset", name, "a finite number of milliseconds", time);
  }
  if (receivedAt < sentAt) throw wrongArgument("estimateServerTimeOffset", "receivedAt", `receivedAt (${receivedAt}) is before sentAt (${sentAt})`);
  const roundTripMs = receivedAt - sentAt;
  return serverTime - (sentAt + roundTripMs / 2);
}
