/**
 * The driver: every read and write of a store happens here, between the
 * core's two halves. A batch of decisions is planned (bad input fails
 * before any store is touched), the states it names are read in one batch,
 * the core decides synchronously, and the writes go back in one batch — or,
 * for a store that decides next to its data, the plan is sent instead and
 * the core replays the answer. A synchronous store is driven synchronously:
 * no Promise until the caller's. A store that decides next to its data is
 * driven by `./remote.ts`, one call alone by `./run-one.ts`.
 * @module
 */
import {
  BATCH_WAIT,
  CONFIG_KIND,
  CONFIG_LEN,
  ITEM_COUNT,
  ITEM_DRAWS,
  ITEM_FIGURES,
  ITEM_NOW,
  ITEM_RESERVE,
  ITEM_WRITE,
  OUT_FIGURES,
  OUT_RETRY_AFTER,
  OUT_STATUS,
  PLAN_FIRST,
  PLAN_READS,
  PLAN_STATUS,
  SLOT_FULL_AT,
  SLOT_PENDING,
  STATE_TS,
  STATE_VALUE,
} from "./boundary.js";
import { core, figuresAt, io, itemsOwner, layout, ownItems, ownPlan } from "./engine.js";
import { coreError, corruptState, mustBe, RateboundError, wrongArgument, type Place } from "./errors.js";
import { refId, refOf } from "./call.js";
import type { Compiled } from "./config.js";
import { applyLimits, planStoredAgain } from "./stored-limits.js";
import type { RateLimitFigures, RateLimitResult, RateLimitState, RateLimitStore, RemoteAnswer, StateRef } from "./types.js";

/** One decision: a limit's call, checked, with its random numbers drawn. */
export interface Call {
  /** The limit's name. */
  readonly name: string;
  /** The key, or `undefined` for the shared state. */
  readonly key: string | undefined;
  /** The limit's compiled config. */
  readonly limit: Compiled;
  /** Tokens asked. */
  readonly count: number;
  /** Whether it reserves. */
  readonly reserve: boolean;
  /** `limit` (true) or `check`. */
  readonly write: boolean;
  /** The call's clock, ms. */
  readonly now: number;
  /** Its random numbers (`limit.draws` of them). */
  readonly draws: readonly number[];
  /**
   * The records of its stored limits, read with its states (`./stored-limits.ts`): on a limiter
   * with `storedLimits: true`, for a named limit without an inline config.
   */
  readonly records?: readonly StateRef[];
}

/** What one decision answers: a result and, when the batch asked for them, its figures. */
export interface Decided {
  readonly result: RateLimitResult;
  readonly figures: RateLimitFigures | undefined;
}

/** A planned batch: its calls, the distinct states they read, and which slot each read uses. */
export interface Planned {
  readonly calls: readonly Call[];
  readonly all: boolean;
  /** The states read, each once; then the records of stored limits, from `states` on. */
  readonly refs: StateRef[];
  /** How many of `refs` are states (the core's slots). */
  readonly states: number;
  /** Per call: the index in `refs` of its first record (-1: it reads none). */
  readonly records: number[];
  /** Per call: how many shards it reads, and the slot of each. */
  readonly reads: number[];
  readonly slots: number[];
  /** Per call: its error when planning failed (`each` mode only). */
  readonly errors: (RateboundError | undefined)[];
  /** Whether the answers carry figures. */
  readonly figures: boolean;
}

const ALLOWED: RateLimitResult = Object.freeze({ ok: true }) as RateLimitResult;

/** Writes the calls into the buffer's items. */
function putItems(calls: readonly Call[], figures: boolean): void {
  const { ITEMS, ITEM } = layout;
  for (let index = 0; index < calls.length; index++) putItem(io, ITEMS + index * ITEM, calls[index]!, figures);
}

/**
 * Writes one call as the item at `at` of `target` (a buffer's `ITEMS`
 * region): its config's numbers, count, reserve, write, now, draws, and
 * whether to answer figures.
 */
export function putItem(target: Float64Array, at: number, call: Call, figures: boolean): void {
  const numbers = call.limit.numbers;
  for (let field = 0; field < CONFIG_LEN; field++) target[at + CONFIG_KIND + field] = numbers[field]!;
  target[at + ITEM_COUNT] = call.count;
  target[at + ITEM_RESERVE] = call.reserve ? 1 : 0;
  target[at + ITEM_WRITE] = call.write ? 1 : 0;
  target[at + ITEM_NOW] = call.now;
  const draws = call.draws;
  for (let draw = 0; draw < ITEM_FIGURES - ITEM_DRAWS; draw++) target[at + ITEM_DRAWS + draw] = draws[draw] ?? 0;
  target[at + ITEM_FIGURES] = figures ? 1 : 0;
}

/** Writes each call's slots into the buffer's map. */
function putMap(planned: Planned): void {
  const { MAP } = layout;
  const { slots } = planned;
  for (let index = 0; index < slots.length; index++) io[MAP + index] = slots[index]!;
}

/** Writes the calls into the buffer and has the core plan them; the core's status. */
export function planInBuffer(calls: readonly Call[], figures: boolean): number {
  putItems(calls, figures);
  // Until a plan succeeds, the items are no batch's: one waiting on its reads must write its own again.
  ownItems(undefined);
  return core.rb_plan(calls.length);
}

/**
 * Plans `planned`'s calls again in the buffer, each on the stored limit its
 * records hold in `stored` (per ref; a store that decides next to its data is
 * sent the plan made on the records it last read).
 *
 * @returns Per call, the error its records gave, or `undefined`.
 */
export function planWithLimits(planned: Planned, stored: readonly unknown[]): (RateboundError | undefined)[] {
  putItems(planned.calls, planned.figures);
  ownItems(undefined);
  const errors = applyLimits(planned, stored);
  core.rb_plan(planned.calls.length);
  return errors;
}

/**
 * Plans `calls`: the core checks each (bad input fails here, before any
 * store is touched) and names the shards it reads; the states are
 * de-duplicated into slots. All or nothing (`all`): the first error throws.
 * Each call its own (`each`): an error is that call's.
 *
 * @param calls The decisions.
 * @param all Whether they are one `limitAll`.
 * @param figures Whether the answers carry the figures headers show.
 * @returns The plan.
 */
export function plan(calls: readonly Call[], all: boolean, figures = false): Planned {
  const { PLAN, PLAN_STRIDE, OUT, OUT_STRIDE, MAX_ITEMS, MAX_SLOTS } = layout;
  if (calls.length > MAX_ITEMS) {
    throw wrongArgument("limitAll", "requests", `requests must be at most ${MAX_ITEMS} limits (got ${calls.length})`);
  }
  let status = planInBuffer(calls, figures);
  if (status < 0) status = planStoredAgain(calls);
  const refs: StateRef[] = [];
  const reads: number[] = [];
  const slots: number[] = [];
  const errors: (RateboundError | undefined)[] = [];
  const ids = calls.length > 1 ? new Map<string, number>() : undefined;
  for (let index = 0; index < calls.length; index++) {
    const call = calls[index]!;
    const at = PLAN + index * PLAN_STRIDE;
    if (status < 0 && io[at + PLAN_STATUS]! < 0) {
      const error = coreError(io, OUT + index * OUT_STRIDE, call.name);
      if (all) throw error;
      errors.push(error);
      reads.push(0);
      slots.push(0, 0);
      continue;
    }
    errors.push(undefined);
    const count = io[at + PLAN_READS]!;
    reads.push(count);
    for (let read = 0; read < 2; read++) {
      if (read >= count) {
        slots.push(0);
        continue;
      }
      const shard = io[at + PLAN_FIRST + read]!;
      if (ids === undefined) {
        slots.push(refs.length);
        refs.push(refOf(call.name, call.key, shard));
        continue;
      }
      const id = refId(call.name, call.key, shard);
      let slot = ids.get(id);
      if (slot === undefined) {
        ids.set(id, (slot = refs.length));
        refs.push(refOf(call.name, call.key, shard));
      }
      slots.push(slot);
    }
  }
  if (refs.length > MAX_SLOTS) {
    throw wrongArgument("limitAll", "requests", `requests must read at most ${MAX_SLOTS} states (got ${refs.length})`);
  }
  const states = refs.length;
  const records: number[] = [];
  for (const call of calls) {
    records.push(call.records === undefined ? -1 : refs.length);
    if (call.records !== undefined) refs.push(...call.records);
  }
  const planned: Planned = { calls, all, refs, states, records, reads, slots, errors, figures };
  ownPlan(planned);
  return planned;
}

/** Whether a value is a Promise or another thenable. */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (typeof value === "object" || typeof value === "function") && value !== null && typeof (value as { then?: unknown }).then === "function";
}

/** Reads `refs` in one batch at the call's clock `now`: `readMany` when the store has it, else every `read` at once. */
export function readAll(store: RateLimitStore, refs: StateRef[], now: number): unknown[] | Promise<unknown[]> {
  const info = { now };
  if (typeof store.readMany === "function") return store.readMany(refs, info);
  let pending = false;
  const answers: unknown[] = new Array(refs.length);
  for (let index = 0; index < refs.length; index++) {
    let answer: unknown;
    try {
      answer = store.read(refs[index]!, info);
    } catch (error) {
      // The reads already under way are abandoned: their failures are not unhandled.
      for (const earlier of answers.slice(0, index)) if (isThenable(earlier)) earlier.then(undefined, () => {});
      throw error;
    }
    if (isThenable(answer)) pending = true;
    answers[index] = answer;
  }
  return pending ? Promise.all(answers) : answers;
}

/**
 * A store's answer for `ref` as the core takes it (value, ts; NaN value:
 * none): `null` or `undefined` for none, else an object whose `value` and
 * `ts` are finite numbers. Anything else is CORRUPT_STATE naming the ref.
 */
export function putState(at: number, answer: unknown, place: Place, target: Float64Array = io): void {
  if (answer === null || answer === undefined) {
    target[at + STATE_VALUE] = Number.NaN;
    target[at + STATE_TS] = Number.NaN;
    return;
  }
  if (typeof answer !== "object") throw corruptState(place, mustBe("state", "{ value, ts } or null", answer));
  let value: unknown;
  let ts: unknown;
  try {
    value = (answer as RateLimitState).value;
    ts = (answer as RateLimitState).ts;
  } catch {
    throw corruptState(place, "state must be { value, ts } or null (got an object)");
  }
  if (typeof value !== "number" || !Number.isFinite(value)) throw corruptState(place, mustBe("value", "a finite number", value));
  if (typeof ts !== "number" || !Number.isFinite(ts)) throw corruptState(place, mustBe("ts", "a finite number", ts));
  target[at + STATE_VALUE] = value;
  target[at + STATE_TS] = ts;
}

/** The answer of call `index`, from the buffer. */
export function answerOf(index: number, withFigures: boolean): Decided {
  const { OUT, OUT_STRIDE } = layout;
  const out = OUT + index * OUT_STRIDE;
  const ok = io[out + OUT_STATUS] === 1;
  const wait = io[out + OUT_RETRY_AFTER]!;
  const result: RateLimitResult = ok ? (Number.isNaN(wait) ? ALLOWED : { ok: true, retryAfter: wait }) : { ok: false, retryAfter: wait };
  return { result, figures: withFigures ? figuresAt(out + OUT_FIGURES) : undefined };
}

/** What a decided batch answers: per call, its decision or its error; and the batch's own result. */
export interface BatchAnswer {
  readonly each: (Decided | RateboundError)[];
  readonly batch: RateLimitResult;
  /** How many calls the store decided together with these (its `RemoteAnswer.batchSize`), when it says. */
  readonly batchSize?: number;
}

/**
 * Decides a planned batch on the states read (`stored`, per ref), in the
 * buffer. Returns the answers; the states to write stay in the buffer's
 * slots (pending) for {@link writeAll}.
 */
export function decideOn(planned: Planned, stored: unknown[]): BatchAnswer {
  const { SLOTS, SLOT, OUT, OUT_STRIDE, EXTRA } = layout;
  // The buffer may have served other calls since the plan (or its items took stored limits): write this batch again.
  if (itemsOwner !== planned || planned.states < planned.refs.length) {
    putItems(planned.calls, planned.figures);
    ownItems(planned);
  }
  const limitErrors = planned.states < planned.refs.length ? applyLimits(planned, stored) : undefined;
  putMap(planned);
  for (let slot = 0; slot < planned.states; slot++) putState(SLOTS + slot * SLOT, stored[slot], planned.refs[slot]!);
  const status = core.rb_decide(planned.calls.length, planned.states, planned.all ? 1 : 0);
  const each: (Decided | RateboundError)[] = [];
  for (let index = 0; index < planned.calls.length; index++) {
    const out = OUT + index * OUT_STRIDE;
    const error = planned.errors[index] ?? limitErrors?.[index];
    if (error !== undefined) each.push(error);
    else if (io[out + OUT_STATUS]! < 0) each.push(coreError(io, out, planned.calls[index]!.name));
    else each.push(answerOf(index, planned.figures));
  }
  if (status < 0 || (planned.all && limitErrors?.some((error) => error !== undefined))) {
    const first = each.find((entry): entry is RateboundError => entry instanceof RateboundError);
    throw first ?? new RateboundError("INVALID_REQUEST", "the batch failed");
  }
  const wait = io[EXTRA + BATCH_WAIT]!;
  const batch: RateLimitResult = status === 1 ? (Number.isNaN(wait) ? ALLOWED : { ok: true, retryAfter: wait }) : { ok: false, retryAfter: wait };
  return { each, batch };
}

/**
 * Writes the state the decision left pending in the buffer's slot at `at`
 * (none when its value is NaN) to `ref` through `store`, after `chain` when
 * an earlier write is still pending. Reads the buffer at once, so a later
 * call cannot change what is written.
 *
 * @returns The chain of pending writes, or `undefined` when every write so far was synchronous.
 */
export function writeSlot(store: RateLimitStore, at: number, ref: StateRef, now: number, chain: Promise<void> | undefined): Promise<void> | undefined {
  const value = io[at + SLOT_PENDING + STATE_VALUE]!;
  if (Number.isNaN(value)) return chain;
  const state = { value, ts: io[at + SLOT_PENDING + STATE_TS]! };
  const info = { now, fullAt: io[at + SLOT_FULL_AT]! };
  if (chain !== undefined) return chain.then(() => store.write(ref, state, info) as void);
  const done = store.write(ref, state, info);
  return isThenable(done) ? (Promise.resolve(done) as Promise<void>) : undefined;
}

/**
 * Writes what the decision left pending in the buffer's slots through
 * `store`, in slot order; a Promise when the store answers with one.
 */
function writeAll(store: RateLimitStore, planned: Planned): void | Promise<void> {
  const { SLOTS, SLOT } = layout;
  let chain: Promise<void> | undefined;
  for (let slot = 0; slot < planned.states; slot++) chain = writeSlot(store, SLOTS + slot * SLOT, planned.refs[slot]!, latestNow(planned, slot), chain);
  return chain;
}

/** The `now` of the last call of the batch that read `slot` (its write is that call's). */
function latestNow(planned: Planned, slot: number): number {
  const calls = planned.calls;
  if (calls.length === 1) return calls[0]!.now;
  let now = calls[0]!.now;
  for (let index = 0; index < calls.length; index++) {
    const reads = planned.reads[index]!;
    if ((reads > 0 && planned.slots[2 * index] === slot) || (reads > 1 && planned.slots[2 * index + 1] === slot)) now = calls[index]!.now;
  }
  return now;
}

/**
 * Runs a planned batch against `store` (already inside its transaction when
 * it has one): reads, decides, writes; synchronously when the store answers
 * synchronously.
 *
 * @param store Where the states live.
 * @param planned The batch, from {@link plan}.
 * @returns The answers, or a Promise of them.
 */
export function run(store: RateLimitStore, planned: Planned): BatchAnswer | Promise<BatchAnswer> {
  if (planned.refs.length === 0) return decideOn(planned, []);
  // The records of stored limits are read with the states, in the same batch.
  const stored = readAll(store, planned.refs, planned.calls.length === 1 ? planned.calls[0]!.now : Math.max(...planned.calls.map((call) => call.now)));
  const finish = (states: unknown[]): BatchAnswer | Promise<BatchAnswer> => {
    if (!Array.isArray(states) || states.length !== planned.refs.length) {
      throw wrongArgument("RateLimiter", "store", `store.readMany must answer one state per ref (got ${Array.isArray(states) ? states.length : typeof states})`);
    }
    const answer = decideOn(planned, states);
    const done = writeAll(store, planned);
    return isThenable(done) ? done.then(() => answer) : answer;
  };
  return isThenable(stored) ? Promise.resolve(stored).then(finish) : finish(stored);
}
