/**
 * The driver's road for one call on a store that decides nothing itself:
 * plan, read its one or two states, decide, write, synchronously when the
 * store answers synchronously.
 * @module
 */
import { PLAN_FIRST, PLAN_READS, PLAN_SECOND } from "./boundary.js";
import { core, io, itemsOwner, layout, ownItems } from "./engine.js";
import { coreError } from "./errors.js";
import { refOf } from "./call.js";
import { answerOf, isThenable, plan, putItem, putState, run, writeSlot, type BatchAnswer, type Call, type Decided } from "./driver.js";
import type { RateLimitStore, StateRef } from "./types.js";

/**
 * One call, decided where its states are read (no `decide` of the store's
 * own): the common case, with nothing allocated beyond the refs, the states
 * and the answer. A synchronous store is read, decided and written with
 * nothing run in between.
 *
 * @param store Where the states live (inside its transaction when it has one).
 * @param call The call, checked.
 * @param figures Whether the answer carries its figures.
 * @returns The decision, or a Promise of it.
 */
export function runOne(store: RateLimitStore, call: Call, figures: boolean): Decided | Promise<Decided> {
  // A call that reads stored limits reads their records with its states, as a batch of one.
  if (call.records !== undefined) {
    const answer = run(store, plan([call], true, figures));
    return isThenable(answer) ? answer.then(onlyDecided) : onlyDecided(answer);
  }
  const { ITEMS, PLAN, OUT } = layout;
  putItem(io, ITEMS, call, figures);
  ownItems(call);
  if (core.rb_plan(1) < 0) throw coreError(io, OUT, call.name);
  const reads = io[PLAN + PLAN_READS]!;
  const info = { now: call.now };
  const first = refOf(call.name, call.key, io[PLAN + PLAN_FIRST]!);
  const second = reads === 2 ? refOf(call.name, call.key, io[PLAN + PLAN_SECOND]!) : undefined;
  const readFirst = store.read(first, info);
  let readSecond: unknown;
  if (second !== undefined) {
    try {
      readSecond = store.read(second, info);
    } catch (error) {
      if (isThenable(readFirst)) readFirst.then(undefined, () => {});
      throw error;
    }
  }
  if (isThenable(readFirst) || isThenable(readSecond)) {
    return Promise.all([readFirst, readSecond]).then(([stateFirst, stateSecond]) => decideOne(store, call, figures, first, second, stateFirst, stateSecond));
  }
  return decideOne(store, call, figures, first, second, readFirst, readSecond);
}

/** The one call's decision of a batch of one (its error thrown). */
function onlyDecided(answer: BatchAnswer): Decided {
  const decided = answer.each[0]!;
  if (decided instanceof Error) throw decided;
  return decided;
}

/** {@link runOne}'s decision on the states read, and its writes; the item is in the buffer. */
function decideOne(
  store: RateLimitStore,
  call: Call,
  figures: boolean,
  first: StateRef,
  second: StateRef | undefined,
  stateFirst: unknown,
  stateSecond: unknown,
): Decided | Promise<Decided> {
  const { ITEMS, OUT, SLOTS, SLOT } = layout;
  // Other calls may have used the buffer while the store answered (even a synchronous
  // store's read may call a limiter): then write the item again. Every writer of the items
  // owns them (`ownItems`), and each call is its own owner.
  if (itemsOwner !== call) {
    putItem(io, ITEMS, call, figures);
    ownItems(call);
  }
  putState(SLOTS, stateFirst, first);
  if (second !== undefined) putState(SLOTS + SLOT, stateSecond, second);
  if (core.rb_decide_one() < 0) throw coreError(io, OUT, call.name);
  const decided = answerOf(0, figures);
  let chain = writeSlot(store, SLOTS, first, call.now, undefined);
  if (second !== undefined) chain = writeSlot(store, SLOTS + SLOT, second, call.now, chain);
  return chain === undefined ? decided : chain.then(() => decided);
}
