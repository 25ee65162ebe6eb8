// The Rust core through the package's own engine (pkg/dist/core/engine.js: the instance the
// package runs, its buffer and layout; src/wasm/io.rs documents the buffer), for the Redis
// suites that hand the store's `decide` a batch planned by the core and compare with, or answer
// from, the core's own decision (not a test file itself).
import "../../pkg/dist/node.js"; // instantiates the engine
import * as engine from "../../pkg/dist/core/engine.js";
import { CALENDAR_PERIODS, COMPILE_TAG_CALENDAR, OUT_SHARES, PLAN_PERIOD, PLAN_WINDOW_END, PLAN_WINDOW_LONGEST, PLAN_WINDOW_START } from "../../pkg/dist/core/boundary.js";

const wasm = engine.core;
const io = engine.io;
const { ITEMS, PLAN, MAP, SLOTS, OUT, EXTRA, ITEM, PLAN_STRIDE, SLOT, OUT_STRIDE } = engine.layout;

export const KINDS = ["token bucket", "fixed window"];
const FIELDS = ["rate", "period", "capacity", "maxReserved", "shards", "start"];

/** The core's validated config (seven numbers), or null when the core rejects it. */
function compile(config) {
  io[EXTRA] = KINDS.indexOf(config.kind);
  FIELDS.forEach((field, index) => {
    const given = config[field];
    const calendar = typeof given === "string" ? CALENDAR_PERIODS.indexOf(given) : -1;
    io[EXTRA + 1 + 2 * index] = given === undefined ? 0 : given === null ? 1 : calendar > 0 ? COMPILE_TAG_CALENDAR : 2;
    io[EXTRA + 2 + 2 * index] = typeof given === "number" ? given : calendar;
  });
  if (wasm.rb_compile() !== 0) return null;
  return Array.from(io.subarray(EXTRA, EXTRA + 7));
}

/**
 * Plans calls with the core, as the driver does before `store.decide`: `calls` are
 * `{ name, key?, config, count, reserve, write, now }`; `random()` draws the shard choices and
 * phases. Returns the RemoteBatch (docs/internals.md; each ref also carries `periodMs` and the
 * shard's `capacity`, which a store ignores), or null when the core refuses a call before any read.
 */
export function corePlan(calls, all, random = Math.random) {
  const compiled = calls.map((call) => compile(call.config));
  if (compiled.includes(null)) return null;
  calls.forEach((call, index) => {
    const at = ITEMS + index * ITEM;
    io.set(compiled[index], at);
    io[at + 7] = call.count;
    io[at + 8] = call.reserve ? 1 : 0;
    io[at + 9] = call.write ? 1 : 0;
    io[at + 10] = call.now;
    for (let draw = 0; draw < 4; draw++) io[at + 11 + draw] = random();
  });
  engine.ownItems(undefined); // the package's driver must write its own items again
  if (wasm.rb_plan(calls.length) !== 0) return null;
  // The buffer is shared: keep this batch's items, for its decision after the store's await.
  const records = io.slice(ITEMS, ITEMS + calls.length * ITEM);
  const refs = [];
  const refIndex = new Map();
  const items = calls.map((call, index) => {
    const at = PLAN + index * PLAN_STRIDE;
    const config = compiled[index];
    const reads = [];
    for (let which = 0; which < io[at + 2]; which++) {
      const ref = call.key === undefined ? { name: call.name, shard: io[at + which] } : { name: call.name, key: call.key, shard: io[at + which] };
      const id = JSON.stringify([ref.name, ref.key ?? null, ref.shard]);
      if (!refIndex.has(id)) {
        refIndex.set(id, refs.length);
        refs.push({ ...ref, periodMs: io[at + PLAN_PERIOD], capacity: io[at + 9] });
      }
      reads.push(refIndex.get(id));
    }
    return {
      reads,
      kind: config[0],
      rate: io[at + 8],
      period: io[at + PLAN_PERIOD],
      window: Number.isNaN(io[at + PLAN_WINDOW_START]) ? null : { start: io[at + PLAN_WINDOW_START], end: io[at + PLAN_WINDOW_END], longest: io[at + PLAN_WINDOW_LONGEST] },
      capacity: io[at + 9],
      maxReserved: Number.isNaN(io[at + 10]) ? null : io[at + 10],
      shards: config[5],
      start: Number.isNaN(config[6]) ? null : config[6],
      count: call.count,
      reserve: call.reserve,
      write: call.write,
      now: call.now,
      fresh: reads.map((_, which) => ({ value: io[at + 3 + 2 * which], ts: io[at + 4 + 2 * which] })),
    };
  });
  return { refs, items, all, records };
}

/** The refs of a planned batch as a store takes them (without the test's extra fields). */
export const storeRefs = (batch) => batch.refs.map(({ name, key, shard }) => (key === undefined ? { name, shard } : { name, key, shard }));

/**
 * The core's decision of `batch` (planned by `corePlan`, which kept its items) on `states` (per ref, `{ value, ts }` or null): each item's own decision (null: an error
 * or not decided), the batch's status (1, 0, or -code), which items wrote, and each ref after
 * (`fullAt` null when not written), and the shares each item took.
 */
export function coreDecide(batch, states) {
  io.set(batch.records, ITEMS);
  engine.ownItems(undefined);
  batch.refs.forEach((_, index) => {
    const at = SLOTS + index * SLOT;
    io[at] = states[index] === null ? NaN : states[index].value;
    io[at + 1] = states[index] === null ? NaN : states[index].ts;
  });
  batch.items.forEach((item, index) => {
    io[MAP + 2 * index] = item.reads[0];
    io[MAP + 2 * index + 1] = item.reads[1] ?? item.reads[0];
  });
  const status = wasm.rb_decide(batch.items.length, batch.refs.length, batch.all ? 1 : 0);
  const decided = batch.items.map((_, index) => {
    const at = OUT + index * OUT_STRIDE;
    if (!(io[at] === 0 || io[at] === 1)) return null;
    return Number.isNaN(io[at + 1]) ? { ok: io[at] === 1 } : { ok: io[at] === 1, retryAfter: io[at + 1] };
  });
  const shares = batch.items.map((_, index) => [io[OUT + index * OUT_STRIDE + OUT_SHARES], io[OUT + index * OUT_STRIDE + OUT_SHARES + 1]]);
  const anyWrite = batch.items.some((item) => item.write);
  const wrote = batch.items.map((item, index) => item.write && (batch.all ? status === 1 && anyWrite : decided[index]?.ok === true));
  const after = batch.refs.map((_, index) => {
    const at = SLOTS + index * SLOT;
    if (Number.isNaN(io[at + 2])) return { state: states[index], fullAt: null };
    return { state: { value: io[at + 2], ts: io[at + 3] }, fullAt: io[at + 4] };
  });
  return { status, decided, wrote, after, shares };
}

/**
 * What the driver does with a store that decides (docs/internals.md), in small: plan the calls,
 * `store.decide` them, replay the core on what the store read, and answer with the core's
 * decision; a store whose `wrote` differs from the core's fails the call. Returns the core's
 * decisions (null for a call the core answers with an error), or throws what the store threw.
 */
export async function decideThrough(store, calls, { all = false, random = Math.random } = {}) {
  const batch = corePlan(calls, all, random);
  if (batch === null) throw new Error("the core refused the calls before any read");
  const answer = await store.decide({ refs: storeRefs(batch), items: batch.items, all });
  const states = answer.stored.map((state) => {
    if (state !== null && !(typeof state === "object" && Number.isFinite(state.value) && Number.isFinite(state.ts))) throw Object.assign(new Error(`corrupt state ${JSON.stringify(state)}`), { code: "CORRUPT_STATE" });
    return state;
  });
  const replayed = coreDecide(batch, states);
  if (replayed.wrote.join() !== answer.wrote.join()) throw new Error(`the store wrote ${answer.wrote} where the core decided ${replayed.wrote}`);
  return all ? { ok: replayed.status === 1, decided: replayed.decided } : replayed.decided;
}
