/**
 * Coalescing: a store that cannot decide next to its data but makes each
 * call a transaction (`transaction()` and no `decide()`: Deno KV, D1, Convex,
 * better-sqlite3) never races itself. Calls of one process on one limit and
 * key take turns in that key's lane: a `limit` or `check` that arrives while
 * a turn is in flight joins the next batch, and the batch is one transaction
 * whose calls the core decides in arrival order over shared states
 * (`plan(calls, false)` + `run`: the `Each` mode), so every answer is the
 * one the same calls would get one after another. Any other call (a grant,
 * a settle, a reset, a `limitAll`) takes a turn of its own in each lane it
 * touches, so it never races a batch either.
 *
 * Lanes belong to the store object: every `RateLimiter` over the same store
 * shares them. A call's `timeout` is its own, counted from its arrival, in its
 * lane and in its batch alike: a call whose limiter has none is never failed
 * because a batch-mate's has run out. A call whose time runs out during its
 * batch is answered `STORE_TIMEOUT` then, and writes nothing: the rest of the
 * batch's body is refused (its next read or write, or its end), so the
 * transaction rolls back, and the batch runs again without it (as a single
 * call's late body commits nothing). Only a deadline
 * that passes while the commit itself is in flight, after the body, leaves its
 * charge committed, as it does for a single call. A turn that times out frees
 * the lane at once (its late reads and writes are refused, as `StoreCall` does).
 * @module
 */
import { MAX_ITEMS, MAX_SLOTS } from "./boundary.js";
import { plan, run, type Call, type Decided } from "./driver.js";
import { RateboundError } from "./errors.js";
import { StoreCall, StoreTimeoutError, startTimer, type Degraded } from "./store-call.js";
import type { RateLimitResult, RateLimitStore } from "./types.js";

/**
 * The lane of a limit's name and key (every shard of it, and its records); the refusal cache keys
 * by it too. Distinct pairs never share one: the name comes first after its length, then `-` (no
 * key) or `+` and the key (a separator alone would let limit `"b\0c"` with key `"a"` meet limit `"c"`
 * with key `"a\0b"`).
 */
export function laneOf(name: string, key: string | undefined): string {
  return `${name.length}:${name}${key === undefined ? "-" : `+${key}`}`;
}

/** Why a store failed a call, as {@link StoreCall.degradation} says (`undefined`: not the store). */
type Why = Degraded["degraded"] | undefined;

/** One `limit` or `check` waiting for its batch. */
export interface Entry {
  /** The call, checked and planned alone already (bad input never gets here). */
  readonly call: Call;
  /** Whether its answer carries figures. */
  readonly figures: boolean;
  /** Its limiter's `timeout` (ms), counted from its arrival; `undefined`: none. */
  readonly timeoutMs: number | undefined;
  /** Where its limiter's `onDecision` hook learns the size of the batch it ran in; `undefined` without a hook. */
  readonly recorded: { batchSize: number } | undefined;
  /** Its answer when the store failed it: its own policy's (degraded, a fallback's), or the error thrown. */
  recover(error: unknown, why: Why): Promise<RateLimitResult>;
}

/** An entry in its batch: when it must be answered by, and how. */
interface Waiting {
  readonly entry: Entry;
  /** Its arrival plus its `timeout` (ms, `Date.now()`'s clock); `Infinity`: none. */
  readonly deadline: number;
  /** Its `timeout`'s timer, from its arrival until it is answered. */
  timer: ReturnType<typeof setTimeout> | undefined;
  /** Whether it has been answered (by its batch, or by its timeout): it is answered once. */
  answered: boolean;
  /** The store call of the batch it is in, once that has begun. */
  running: StoreCall | undefined;
  resolve(answer: Decided | RateLimitResult): void;
  reject(error: unknown): void;
}

/** A turn in a lane: a batch of calls (joinable until it starts), or one other call. */
interface Turn {
  /** The batch's calls; `undefined` for a turn of its own. */
  readonly batch: Waiting[] | undefined;
  start(): void;
}

/** One key's turns: the one in flight (`busy`), then the ones waiting, in arrival order. */
interface Lane {
  busy: boolean;
  readonly turns: Turn[];
}

/** The lanes of each coalescing store. */
const LANES = new WeakMap<object, Lanes>();

/** Whether calls on `store` are coalesced: it makes each call a transaction and does not decide next to its data. */
export function coalesces(store: RateLimitStore): boolean {
  try {
    return typeof store.transaction === "function" && typeof store.decide !== "function";
  } catch {
    return false; // a store whose fields throw: the limiter's own check of it says what is wrong
  }
}

/**
 * The lanes of one store: per limit and key, the turns its calls take.
 *
 * @example
 * const lanes = Lanes.of(store); // undefined unless the store coalesces
 * const release = await lanes.acquire([laneOf("post", "ada")]);
 * try { await store.transaction(body); } finally { release(); }
 */
export class Lanes {
  readonly #store: RateLimitStore;
  readonly #lanes = new Map<string, Lane>();

  private constructor(store: RateLimitStore) {
    this.#store = store;
  }

  /**
   * The lanes of `store`, shared by every limiter over it, or `undefined` when its calls are not coalesced.
   *
   * @param store The limiter's store.
   * @returns Its lanes.
   */
  static of(store: RateLimitStore): Lanes | undefined {
    if (!coalesces(store)) return undefined;
    let lanes = LANES.get(store);
    if (lanes === undefined) LANES.set(store, (lanes = new Lanes(store)));
    return lanes;
  }

  /** The most calls one batch decides: the core's batch holds `MAX_ITEMS`, and each call reads at most two states. */
  static get maxBatch(): number {
    return Math.max(1, Math.min(MAX_ITEMS, Math.floor(MAX_SLOTS / 2)));
  }

  /**
   * A `limit` or `check`: it joins the batch waiting in its lane (or starts one
   * at once when the lane is free), and answers with its own decision.
   *
   * @param lane Its lane ({@link laneOf}).
   * @param entry The call.
   * @returns Its decision, or its policy's answer when the store failed.
   */
  decide(lane: string, entry: Entry): Promise<Decided | RateLimitResult> {
    return new Promise((resolve, reject) => {
      const now = Date.now();
      const waiting: Waiting = { entry, deadline: entry.timeoutMs === undefined ? Infinity : now + entry.timeoutMs, timer: undefined, answered: false, running: undefined, resolve, reject };
      const queue = this.#lane(lane);
      const last = queue.turns.at(-1);
      let batch = last?.batch;
      if (batch === undefined || batch.length >= Lanes.maxBatch) {
        const turn: Turn = { batch: (batch = []), start: () => this.#runBatch(lane, queue, turn.batch!) };
        queue.turns.push(turn);
      }
      if (entry.timeoutMs !== undefined) {
        // Its timeout counts from now. Still waiting then: it leaves its batch before it starts. In
        // a batch's transaction: its batch runs again without it (see #attempt).
        const joined = batch;
        try {
          waiting.timer = startTimer(() => {
            waiting.timer = undefined;
            const at = joined.indexOf(waiting);
            if (at >= 0) joined.splice(at, 1);
            timedOut(waiting);
          }, entry.timeoutMs);
        } catch (error) {
          if (batch.length === 0) queue.turns.pop();
          reject(error);
          return;
        }
      }
      batch.push(waiting);
      if (!queue.busy) this.#next(lane, queue);
    });
  }

  /**
   * A turn of its own in each of `lanes` (taken in one order, so two callers never wait on each other).
   *
   * @param lanes The lanes the call touches.
   * @returns A release, called once the call is over (again: nothing).
   */
  async acquire(lanes: readonly string[]): Promise<() => void> {
    const releases: (() => void)[] = [];
    for (const lane of [...new Set(lanes)].sort()) releases.push(await this.#take(lane));
    let released = false;
    return () => {
      if (released) return;
      released = true;
      for (const release of releases.reverse()) release();
    };
  }

  #lane(id: string): Lane {
    let lane = this.#lanes.get(id);
    if (lane === undefined) this.#lanes.set(id, (lane = { busy: false, turns: [] }));
    return lane;
  }

  /** Waits for a turn of its own in one lane. */
  #take(id: string): Promise<() => void> {
    const lane = this.#lane(id);
    return new Promise((resolve) => {
      lane.turns.push({ batch: undefined, start: () => resolve(this.#releaser(id, lane)) });
      if (!lane.busy) this.#next(id, lane);
    });
  }

  /** Ends the turn in flight (once) and starts the next. */
  #releaser(id: string, lane: Lane): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#next(id, lane);
    };
  }

  /** Starts the lane's next turn, or frees the lane. */
  #next(id: string, lane: Lane): void {
    const turn = lane.turns.shift();
    if (turn === undefined) {
      lane.busy = false;
      this.#lanes.delete(id);
      return;
    }
    lane.busy = true;
    turn.start();
  }

  /** Runs a batch as one transaction: the core decides its calls in arrival order, each its own answer. */
  #runBatch(id: string, lane: Lane, batch: Waiting[]): void {
    const release = this.#releaser(id, lane);
    const now = Date.now();
    const members: Waiting[] = [];
    for (const waiting of batch.splice(0)) {
      if (waiting.answered) continue;
      // Its time ran out as its turn came (its timer not yet run): answered as a timeout, never run.
      if (waiting.deadline <= now) timedOut(waiting);
      else members.push(waiting);
    }
    this.#attempt(members, release);
  }

  /**
   * One transaction for the batch's calls not answered yet. Its own bound is the latest of their
   * deadlines (none when one of them has none): each call's own timer answers it at its own. When
   * one times out while the body runs, the body's later reads and writes and its end are refused
   * (the transaction rolls back: nothing of it is written) and the batch runs again without it.
   */
  #attempt(batch: readonly Waiting[], release: () => void): void {
    const members = batch.filter((waiting) => !waiting.answered);
    if (members.length === 0) return release();
    let planned;
    try {
      planned = plan(
        members.map((waiting) => waiting.entry.call),
        false,
        members.some((waiting) => waiting.entry.figures),
      );
    } catch (error) {
      release();
      for (const waiting of members) answer(waiting, () => Promise.reject(error));
      return;
    }
    const latest = Math.max(...members.map((waiting) => waiting.deadline));
    const storeCall = new StoreCall(latest === Infinity ? undefined : Math.max(1, latest - Date.now()));
    for (const waiting of members) waiting.running = storeCall;
    storeCall.run(this.#store, (tx) => run(tx, planned)).then(
      (decided) => {
        release();
        members.forEach((waiting, index) => {
          const each = decided.each[index]!;
          if (waiting.entry.recorded !== undefined) waiting.entry.recorded.batchSize = members.length;
          if (each instanceof RateboundError) answer(waiting, () => Promise.reject(each));
          else answer(waiting, () => (waiting.entry.figures || each.figures === undefined ? each : { result: each.result, figures: undefined }));
        });
      },
      (error: unknown) => {
        // A call timed out while the body ran: the body was refused, so nothing of it committed.
        if (storeCall.refused) return this.#attempt(members, release);
        release();
        const why = storeCall.degradation(error);
        for (const waiting of members) {
          // The batch's own bound ran out: each call left answers its own timeout.
          if (why === "store-timeout" && waiting.entry.timeoutMs !== undefined) timedOut(waiting);
          else answer(waiting, () => waiting.entry.recover(error, why));
        }
      },
    );
  }
}

/** Answers a call once with what `result` makes (not made at all when it was answered already) and stops its timer. */
function answer(waiting: Waiting, result: () => Decided | RateLimitResult | Promise<Decided | RateLimitResult>): void {
  if (waiting.answered) return;
  waiting.answered = true;
  if (waiting.timer !== undefined) clearTimeout(waiting.timer);
  waiting.timer = undefined;
  new Promise<Decided | RateLimitResult>((resolve) => resolve(result())).then(waiting.resolve, waiting.reject);
}

/**
 * Answers a call whose `timeout` ran out: its policy's answer to a `STORE_TIMEOUT` of its own
 * `timeout`. In a batch's transaction, the rest of the body is refused (see {@link StoreCall.refuse}).
 */
function timedOut(waiting: Waiting): void {
  if (waiting.answered) return;
  const timeout = new StoreTimeoutError(waiting.entry.timeoutMs!);
  waiting.running?.refuse(timeout);
  answer(waiting, () => waiting.entry.recover(timeout, "store-timeout"));
}
