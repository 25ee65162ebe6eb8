/**
 * The driver's road for a store that decides next to its data
 * (`docs/internals.md`): the plan is sent instead of reading, and the core
 * replays the store's answer, so messages, figures and errors come from the
 * one reference.
 * @module
 */
import {
  CONFIG_KIND, CONFIG_SHARDS, CONFIG_START, ITEM, ITEMS, PLAN_CAPACITY, PLAN_FRESH, PLAN_MAX_RESERVED, PLAN_PERIOD, PLAN_RATE, PLAN_WINDOW_END,
  PLAN_WINDOW_LONGEST, PLAN_WINDOW_START, STATE_TS, STATE_VALUE,
} from "./boundary.js";
import { io, layout, ownPlan, planOwner } from "./engine.js";
import { RateboundError } from "./errors.js";
import { refId } from "./call.js";
import { decideOn, planInBuffer, planWithLimits, readAll, type BatchAnswer, type Planned } from "./driver.js";
import type { RateLimitState, RateLimitStore, RemoteAnswer, RemoteItem } from "./types.js";

/**
 * The batch as a store that decides next to its data takes it (see
 * `docs/internals.md`): the plan's numbers, per shard.
 */
export function remoteItems(planned: Planned, records?: readonly unknown[]): RemoteItem[] {
  const { PLAN, PLAN_STRIDE } = layout;
  if (records !== undefined) {
    // Planned on the stored limits as last read: the store decides only when its records still hold them.
    const error = planWithLimits(planned, records).find((each) => each !== undefined);
    if (error !== undefined) throw error;
    ownPlan(undefined);
  } else if (planOwner !== planned) {
    // Plan again when the buffer has served other calls since.
    planInBuffer(planned.calls, planned.figures);
    ownPlan(planned);
  }
  const items: RemoteItem[] = new Array(planned.calls.length);
  for (let index = 0; index < planned.calls.length; index++) {
    const call = planned.calls[index]!;
    const at = PLAN + index * PLAN_STRIDE;
    // The item's config: the call's in code, or the stored limit it took.
    const numbers = io.subarray(ITEMS + index * ITEM, ITEMS + index * ITEM + CONFIG_START + 1);
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
  const remote = planned.states < planned.refs.length ? await decideChecked(store, planned) : await store.decide({ refs: planned.refs, items: remoteItems(planned), all: planned.all });
  const answer = decideOn(planned, remote.stored);
  let writes = 0;
  for (let slot = 0; slot < planned.states; slot++) if (!Number.isNaN(io[layout.SLOTS + slot * layout.SLOT + 2]!)) writes++;
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

/** How many times a batch on stored limits is planned again when the store's records changed under it. */
const REPLANS = 3;

/** The most records a store's cache keeps (the oldest read goes first). */
const CACHED_RECORDS = 10_000;

/** Per store: the records of stored limits as last read, by ref. */
const lastRead = new WeakMap<object, Map<string, unknown>>();

/**
 * A batch that reads stored limits, on a store that decides next to its data
 * (`checksStoredLimits`): planned on the records the store last answered and
 * sent with them (`RemoteBatch.limits`), so the store decides in the same
 * round trip; when they changed since, it decides and writes nothing and
 * answers them (`replan`), and the batch is planned again on them: one more
 * round trip, on the first call after a change only. A plan that fails on
 * records not yet read by this call (a count above the code's capacity at
 * the first call, or records since replaced) reads them first.
 */
async function decideChecked(store: RateLimitStore & { decide: NonNullable<RateLimitStore["decide"]> }, planned: Planned): Promise<RemoteAnswer> {
  let cache = lastRead.get(store);
  if (cache === undefined) lastRead.set(store, (cache = new Map()));
  const ids = planned.refs.map((ref, index) => (index < planned.states ? "" : refId(ref.name, ref.key, ref.shard)));
  const remember = (stored: readonly unknown[]) => {
    for (let ref = planned.states; ref < ids.length; ref++) {
      const id = ids[ref]!;
      cache.delete(id);
      cache.set(id, stored[ref] ?? null);
    }
    while (cache.size > CACHED_RECORDS) cache.delete(cache.keys().next().value as string);
  };
  let read = false;
  for (let attempt = 0; ; attempt++) {
    const assumed: unknown[] = ids.map((id) => (id === "" ? null : (cache.get(id) ?? null)));
    let items: RemoteItem[];
    try {
      items = remoteItems(planned, assumed);
    } catch (error) {
      if (read) throw error;
      const records = planned.refs.slice(planned.states);
      const now = Math.max(...planned.calls.map((call) => call.now));
      remember([...assumed.slice(0, planned.states), ...(await readAll(store, records, now))]);
      read = true;
      continue;
    }
    const limits = assumed.slice(planned.states) as (RateLimitState | null)[];
    const remote = await store.decide({ refs: planned.refs, items, all: planned.all, limits });
    remember(remote.stored);
    read = true;
    if (remote.replan !== true) return remote;
    if (attempt + 1 >= REPLANS) {
      throw new RateboundError(
        "STORE_MISMATCH",
        `Rate limit ${JSON.stringify(planned.calls[0]!.name)}: its stored limit changed ${REPLANS} times while the call was sent; nothing was written, the call failed closed`,
      );
    }
  }
}
