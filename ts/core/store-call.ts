/**
 * One store call under a failure policy: the store handed to the core records
 * what the store threw (so a store error is told from the core's own errors
 * by where it came from, never by its message), and the call's timeout
 * refuses every later read and write, so a late transaction commits nothing.
 * @module
 */
import type { RateLimitState, RateLimitStore, RemoteBatch, StateRef, WriteInfo } from "./types.js";
import { RateboundTypeError } from "./errors.js";

/**
 * `setTimeout(run, ms)`, or, where the runtime refuses timers (Convex queries and mutations), an
 * `INVALID_ARGUMENT` error naming the `timeout` option: the call fails before the store is touched,
 * whatever its policy.
 */
export function startTimer(run: () => void, ms: number): ReturnType<typeof setTimeout> {
  try {
    return setTimeout(run, ms);
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    throw new RateboundTypeError(
      `RateLimiter: timeout needs setTimeout, which this runtime refuses (${why}); drop the option here (Convex bounds each function's time itself)`,
      "timeout",
    );
  }
}

/** What a result decided without the store carries: why, and the store's error. */
export type Degraded = {
  /** `"store-error"` (the store threw or rejected) or `"store-timeout"` (it took longer than `timeout`). */
  degraded: "store-error" | "store-timeout";
  /** The store's error (a {@link StoreTimeoutError} for a timeout), to log or alert on. */
  cause: unknown;
};

/**
 * A store call that did not settle within the limiter's `timeout`: a store
 * error with `code: "STORE_TIMEOUT"`. The call's later reads and writes are
 * refused, so a transaction still running rolls back.
 *
 * @example
 * catch (error) { if ((error as { code?: string }).code === "STORE_TIMEOUT") respond(503); }
 * @see {@link https://github.com/ratebound/ratebound/blob/main/docs/errors.md#store_timeout | docs/errors.md}: every code, what it means, what to do.
 */
export class StoreTimeoutError extends Error {
  /** `"STORE_TIMEOUT"`. */
  readonly code = "STORE_TIMEOUT";
  /** The limiter's `timeout`, in milliseconds. */
  readonly timeoutMs: number;

  /** @param timeoutMs The limiter's `timeout`, in milliseconds. */
  constructor(timeoutMs: number) {
    super(`ratebound: the store did not answer within ${timeoutMs} ms; the call's later reads and writes are refused`);
    this.name = "StoreTimeoutError";
    this.timeoutMs = timeoutMs;
  }
}

/**
 * Codes that are never a store error, wherever they come from: the core's
 * errors for bad input and for a corrupt stored state (an adapter that finds a
 * corrupt row itself reports `CORRUPT_STATE` too, or hands the value to the core).
 */
const NEVER_STORE_ERRORS = new Set([
  "INVALID_CONFIG",
  "INVALID_REQUEST",
  "INVALID_ARGUMENT",
  "COUNT_EXCEEDS_MAX",
  "WAIT_UNBOUNDED",
  "UNKNOWN_LIMIT",
  "CORRUPT_STATE",
  "INVALID_RANDOM",
  "RANDOM_UNAVAILABLE",
]);

/** `[has, value]` of an own field; `undefined` when asking throws (a hostile Proxy: the core will say what is wrong). */
export function ownField(object: unknown, field: string): [boolean, unknown] | undefined {
  if (typeof object !== "object" || object === null) return [false, undefined];
  try {
    return Object.hasOwn(object, field) ? [true, (object as Record<string, unknown>)[field]] : [false, undefined];
  } catch {
    return undefined;
  }
}

/**
 * A call on the store as the limiter always made it: inside `store.transaction`
 * when the host has one (unless `direct`: a store that decides next to its data).
 */
export function plainCall<T>(store: RateLimitStore, work: (store: RateLimitStore) => T | Promise<T>, direct = false): Promise<T> {
  if (!direct && typeof store.transaction === "function") return store.transaction(async (tx) => await work(tx));
  try {
    return Promise.resolve(work(store));
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * One call on the store under a policy: the store it is handed records what
 * the store threw (so a store error is told from the core's own errors by
 * where it came from, never by its message), and refuses every read and
 * write once the call has timed out.
 */
export class StoreCall {
  readonly #timeoutMs: number | undefined;
  #timeout: StoreTimeoutError | undefined;
  /** Why {@link StoreCall.refuse} refused the rest of the call. */
  #refusal: Error | undefined;
  /** What the store's `read` and `write` threw or rejected with. */
  readonly #storeErrors: unknown[] = [];
  /** What the transaction's body threw or rejected with (the core's errors among them). */
  readonly #bodyErrors: unknown[] = [];
  #viaTransaction = false;

  constructor(timeoutMs: number | undefined) {
    this.#timeoutMs = timeoutMs;
  }

  /**
   * Runs `work`, rejecting with a {@link StoreTimeoutError} when it has not settled within the timeout.
   * With `acquire` (a turn in a coalescing store's lanes, see `coalesce.ts`), the timeout covers the
   * wait for the turn too, and the turn ends when the call does: answered, failed or timed out.
   */
  run<T>(store: RateLimitStore, work: (store: RateLimitStore) => T | Promise<T>, direct = false, acquire?: () => Promise<() => void>): Promise<T> {
    if (acquire === undefined) return this.#timed(() => this.#attempt(store, work, direct));
    let release: (() => void) | undefined;
    const timed = this.#timed(() => acquire().then((granted) => {
      release = granted;
      // Timed out while it waited: the turn passes on, and the store is never asked.
      if (this.#timeout !== undefined) {
        granted();
        throw this.#timeout;
      }
      return this.#attempt(store, work, direct);
    }));
    timed.then(
      () => release?.(),
      () => release?.(),
    );
    return timed;
  }

  /**
   * The attempt `start` begins, or a {@link StoreTimeoutError} when it has not settled within the
   * timeout. The timer is set first: where it cannot be, the attempt never begins.
   */
  #timed<T>(start: () => Promise<T>): Promise<T> {
    const timeoutMs = this.#timeoutMs;
    if (timeoutMs === undefined) return start();
    let resolve!: (value: T) => void;
    let reject!: (error: unknown) => void;
    const timed = new Promise<T>((onValue, onError) => {
      resolve = onValue;
      reject = onError;
    });
    let timer: ReturnType<typeof setTimeout>;
    try {
      timer = startTimer(() => {
        this.#timeout = new StoreTimeoutError(timeoutMs);
        reject(this.#timeout);
      }, timeoutMs);
    } catch (error) {
      return Promise.reject(error);
    }
    start().then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
    return timed;
  }

  #attempt<T>(store: RateLimitStore, work: (store: RateLimitStore) => T | Promise<T>, direct: boolean): Promise<T> {
    if (!direct && typeof store.transaction === "function") {
      this.#viaTransaction = true;
      try {
        return Promise.resolve(store.transaction((tx) => this.#body(tx, work)));
      } catch (error) {
        return Promise.reject(error);
      }
    }
    try {
      return Promise.resolve(work(this.#guard(store)));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** One attempt of the transaction's body: refused once timed out, also at its end, so a late body commits nothing. */
  async #body<T>(tx: RateLimitStore, work: (store: RateLimitStore) => T | Promise<T>): Promise<T> {
    try {
      this.#refuseIfLate();
      const result = await work(this.#guard(tx));
      this.#refuseIfLate();
      return result;
    } catch (error) {
      this.#bodyErrors.push(error);
      throw error;
    }
  }

  #refuseIfLate(): void {
    if (this.#timeout !== undefined) throw this.#timeout;
    if (this.#refusal !== undefined) throw this.#refusal;
  }

  /**
   * Refuses the call's later reads and writes, and its body's end, with `error`, as its own timeout
   * does, without ending the call: a coalesced batch whose call ran out of time (`coalesce.ts`)
   * rolls back, to run again without it.
   *
   * @param error What the refused body throws (the first one given).
   */
  refuse(error: Error): void {
    this.#refusal ??= error;
  }

  /** Whether the transaction's body failed because {@link StoreCall.refuse} refused it (so it committed nothing). */
  get refused(): boolean {
    return this.#refusal !== undefined && this.#bodyErrors.includes(this.#refusal);
  }

  /** `store`, recording what its methods throw, and refusing every call once the call timed out. */
  #guard(store: RateLimitStore): RateLimitStore {
    const guarded: RateLimitStore = {
      read: (ref: StateRef, info?: { now: number }) => this.#watch(() => store.read(ref, info)),
      write: (ref: StateRef, state: RateLimitState | null, info?: WriteInfo) =>
        this.#watch(() => (info === undefined ? store.write(ref, state) : store.write(ref, state, info))),
    };
    if (typeof store.readMany === "function") guarded.readMany = (refs: StateRef[], info?: { now: number }) => this.#watch(() => store.readMany!(refs, info));
    if (typeof store.decide === "function") guarded.decide = (batch: RemoteBatch) => this.#watch(() => store.decide!(batch));
    return guarded;
  }

  #watch<T>(operation: () => T): T {
    this.#refuseIfLate();
    const failed = (error: unknown): never => {
      this.#storeErrors.push(error);
      throw error;
    };
    try {
      const answer = operation();
      if (answer instanceof Promise) return answer.then(undefined, failed) as T;
      if ((typeof answer === "object" && answer !== null) || typeof answer === "function") {
        const then = (answer as { then?: unknown }).then;
        if (typeof then === "function") return Promise.resolve(answer).then(undefined, failed) as T;
      }
      return answer;
    } catch (error) {
      return failed(error);
    }
  }

  /**
   * Whether `error`, which the call rejected with, is the store's failure:
   * `"store-timeout"`, `"store-error"`, or `undefined` for the core's own
   * errors (bad input, a corrupt state), which throw whatever the policy.
   */
  degradation(error: unknown): Degraded["degraded"] | undefined {
    if (this.#timeout !== undefined && error === this.#timeout) return "store-timeout";
    const code = ownField(error, "code");
    if (code !== undefined && typeof code[1] === "string" && NEVER_STORE_ERRORS.has(code[1])) return undefined;
    if (this.#storeErrors.includes(error)) return "store-error";
    // The transaction itself failed (a commit, a connection, a conflict it could not resolve), not its body.
    if (this.#viaTransaction && !this.#bodyErrors.includes(error)) return "store-error";
    return undefined;
  }
}
