/**
 * The driver's road for a store that decides next to its data
 * (`docs/internals.md`): the plan is sent instead of reading, and the core
 * replays the store's answer, so messages, figures and errors come from the
 * one reference.
 * @module
 */
import {
  CONFIG_KIND, CONFIG_SHARDS, CONFIG_START, PLAN_CAPACITY, PLAN_FRESH, PLAN_MAX_RESERVED, PLAN_PERIOD, PLAN_RATE, PLAN_WINDOW_END, PLAN_WINDOW_LONGEST,
  PLAN_WINDOW_START, STATE_TS, STATE_VALUE,
} from "./boundary.js";
import { io, layout, ownPlan, planOwner } from "./engine.js";
import { RateboundError } from "./errors.js";
import { decideOn, planInBuffer, type BatchAnswer, type Planned } from "./driver.js";
import type { RateLimitStore, RemoteAnswer, RemoteItem } from "./types.js";

/**
 * The batch as a store that decides next to its data takes it (see
 * `docs/internals.md`): the plan's numbers, per shard.
 */
export function remoteItems(planned: Planned): RemoteItem[] {
  const { PLAN, PLAN_STRIDE } = layout;
  // Plan again when the buffer has served other calls since.
  if (planOwner !== planned) {
    planInBuffer(planned.calls, planned.figures);
    ownPlan(planned);
  }
  const items: RemoteItem[] = new Array(planned.calls.length);
  for (let index = 0; index < planned.calls.length; index++) {
    const call = planned.calls[index]!;
    const at = PLAN + index * PLAN_STRIDE;
    const numbers = call.limit.numbers;
    const start = numbers[CONFIG_START]!;
    const maxReserved = io[at + PLAN_MAX_RESERVED]!;
    const two = planned.reads[index] === 2;
    const windowStart = io[at + PLAN_WINDOW_START]!;
    const fresh = { value: io[at + PLAN_FRESH + STATE_VALUE]!, ts: io[at + PLAN_FRESH + STATE_TS]! };
    items[index] = {
      reads: two ? [planned.slots[2 * index]!, planned.slots[2 * index + 1]!] : [planned.slots[2 * index]!],
      kind: numbers[CONFIG_KIND] as 0 | 1,
      rate: io[at + PLAN_RATE]!,
      period: io[at + PLAN_PERIOD]!,
      window: Number.isNaN(windowStart) ? null : { start: windowStart, end: io[at + PLAN_WINDOW_END]!, longest: io[at + PLAN_WINDOW_LONGEST]! },
      capacity: io[at + PLAN_CAPACITY]!,
      maxReserved: Number.isNaN(maxReserved) ? null : maxReserved,
      shards: numbers[CONFIG_SHARDS]!,
      start: Number.isNaN(start) ? null : start,
      count: call.count,
      reserve: call.reserve,
      write: call.write,
      now: call.now,
      fresh: two ? [fresh, { value: io[at + PLAN_FRESH + 2 + STATE_VALUE]!, ts: io[at + PLAN_FRESH + 2 + STATE_TS]! }] : [fresh],
    };
  }
  return items;
}

/**
 * Runs a planned batch on a store that decides next to its data: one round
 * trip. The core then replays the decision on what the store read, and its
 * answer is the call's; when the store wrote other than the core decided,
 * the call fails closed (`STORE_MISMATCH`).
 */
export async function runRemote(store: RateLimitStore & { decide: NonNullable<RateLimitStore["decide"]> }, planned: Planned): Promise<BatchAnswer> {
  for (const error of planned.errors) if (error !== undefined) throw error;
  const remote: RemoteAnswer = await store.decide({ refs: planned.refs, items: remoteItems(planned), all: planned.all });
  const answer = decideOn(planned, remote.stored);
  let writes = 0;
  for (let slot = 0; slot < planned.refs.length; slot++) if (!Number.isNaN(io[layout.SLOTS + slot * layout.SLOT + 2]!)) writes++;
  planned.calls.forEach((call, index) => {
    const decided = answer.each[index];
    const core = !(decided instanceof RateboundError) && call.write && (planned.all ? answer.batch.ok : decided!.result.ok);
    if (Boolean(remote.wrote[index]) !== core || (planned.all && core && writes === 0)) {
      throw new RateboundError(
        "STORE_MISMATCH",
        `Rate limit ${JSON.stringify(call.name)}: the store ${remote.wrote[index] ? "wrote" : "did not write"} where the core decided otherwise; the call failed closed`,
      );
    }
  });
  const size = remote.batchSize;
  return typeof size === "number" && size >= 1 ? { ...answer, batchSize: size } : answer;
}
