/**
 * Concurrency limits with leases (`{ kind: "concurrency", max, lease }`):
 * `limit` takes a slot (or `count`) and answers a {@link Lease}, or refuses
 * with the wait until enough held leases expire. A limit of `max` slots is
 * `max` stored states, slot `s` at shard `s` of its name and key, each
 * `{ value: the holder's lease id, ts: its expiry }`. Every call reads the
 * slots it needs, the core decides (`src/concurrency.rs`), and the one state
 * it answers is written to the slots it answers: all inside the store's
 * transaction when it has one (the limiter's `transact`). No number of a slot
 * or an expiry is computed here.
 * @module
 */
import * as at from "./boundary.js";
import { core as mainCore, io as mainIo, layout as mainLayout, ownItems, grantsEngine, type Engine } from "./engine.js";
import { coreError, invalidConfig, mustBe, RateboundError, unknownField, wrongArgument } from "./errors.js";
import { refOf } from "./call.js";
import { isThenable, putState, readAll } from "./driver.js";
import type { RateLimitResult, RateLimitState, RateLimitStore, StateRef } from "./types.js";

/** A concurrency limit's fields, in the order its config lists them. */
export const CONCURRENCY_FIELDS = ["kind", "max", "lease"] as const;

/** A concurrency limit validated by the core. */
export interface ConcurrencyCompiled {
  readonly max: number;
  readonly lease: number;
}

/** Whether a config names the concurrency kind (own field only). */
export function isConcurrency(config: unknown): boolean {
  return typeof config === "object" && config !== null && Object.prototype.hasOwnProperty.call(config, "kind") && (config as { kind?: unknown }).kind === "concurrency";
}

/** A field as the core takes it: a type tag (0 absent, 1 null, 2 number, 3 anything else) and the number. */
function tagged(value: unknown): [number, number] {
  if (value === undefined) return [0, 0];
  if (value === null) return [1, 0];
  if (typeof value === "number") return [2, value];
  return [3, Number.NaN];
}

/** The engine with the concurrency exports (the full module's; a browser's small one loads it). */
function engineNow(): Engine | undefined {
  if (typeof (mainCore as { rb_concurrency_compile?: unknown }).rb_concurrency_compile !== "function") return undefined;
  // The buffer's view is read when used: the slab may have grown the memory since (`memoryGrew`).
  return {
    core: mainCore,
    layout: mainLayout,
    get io() {
      return mainIo;
    },
  };
}

/** The engine with the concurrency exports, loaded when the main module lacks them. */
function engine(): Engine | Promise<Engine> {
  return engineNow() ?? grantsEngine();
}

/** The exports of `src/wasm/concurrency.rs`. */
interface ConcurrencyExports {
  rb_concurrency_compile(): number;
  rb_concurrency_take(max: number, lease: number, count: number, id: number, now: number): number;
  rb_concurrency_release(max: number, lease: number, id: number, now: number, slotCount: number): number;
  rb_concurrency_extend(max: number, lease: number, id: number, now: number, extendMs: number, slotCount: number): number;
  rb_concurrency_held(max: number, lease: number, now: number): number;
}

function exportsOf(e: Engine): ConcurrencyExports {
  // The buffer's items are no batch's once these exports have run (as for grants).
  if (e.io === mainIo) ownItems(undefined);
  return e.core as unknown as ConcurrencyExports;
}

/**
 * Compiles a concurrency limit's config: own fields only (`kind`, `max`,
 * `lease`), every value checked by the core. Needs the full module (every
 * server runtime loads it); in a browser's small module it throws.
 *
 * @param limit The limit's name, for messages.
 * @param config What the caller passed.
 * @returns The compiled limit.
 */
export function compileConcurrency(limit: string, config: object): ConcurrencyCompiled {
  const raw: Record<string, unknown> = Object.create(null);
  for (const name of Object.keys(config)) {
    if (!(CONCURRENCY_FIELDS as readonly string[]).includes(name)) throw invalidConfig(limit, name, unknownField(name, CONCURRENCY_FIELDS));
    raw[name] = (config as Record<string, unknown>)[name];
  }
  const e = engineNow();
  if (e === undefined) throw wrongArgument("RateLimiter", "limits", `concurrency limit ${limit} needs the full module (this runtime loaded a small one)`);
  const { io } = e;
  (["max", "lease"] as const).forEach((field, index) => {
    const [tag, value] = tagged(raw[field]);
    io[at.EXTRA + at.CONCURRENCY_FIELDS + 2 * index] = tag;
    io[at.EXTRA + at.CONCURRENCY_FIELDS + 1 + 2 * index] = value;
  });
  if (exportsOf(e).rb_concurrency_compile() < 0) throw coreError(io, at.OUT, limit, (field) => raw[field]);
  return { max: io[at.EXTRA + at.CONCURRENCY_MAX]!, lease: io[at.EXTRA + at.CONCURRENCY_LEASE]! };
}

/** What the core answered for a lease: the slots written, the state they get (null: deleted), its fullAt, the expiry. */
interface SlotAnswer {
  readonly slots: number[];
  readonly state: RateLimitState | null;
  readonly fullAt: number;
  readonly expiresAt: number;
}

function answered(io: Float64Array): SlotAnswer {
  const answer = at.EXTRA + at.CONCURRENCY_ANSWER;
  const count = io[answer + at.LEASE_SLOT_COUNT]!;
  const slots = Array.from(io.subarray(at.EXTRA + at.CONCURRENCY_SLOTS, at.EXTRA + at.CONCURRENCY_SLOTS + count));
  const value = io[answer + at.LEASE_WRITE]!;
  const state = Number.isNaN(value) ? null : { value, ts: io[answer + at.LEASE_WRITE + 1]! };
  return { slots, state, fullAt: io[answer + at.LEASE_FULL_AT]!, expiresAt: io[answer + at.LEASE_EXPIRES_AT]! };
}

/** Writes the answer's state to each of its slots, in slot order; a Promise when the store answers with one. */
function writeSlots(store: RateLimitStore, name: string, key: string | undefined, answer: SlotAnswer, now: number): void | Promise<void> {
  let chain: Promise<void> | undefined;
  for (const slot of answer.slots) {
    const ref = refOf(name, key, slot);
    const info = { now, fullAt: answer.fullAt };
    if (chain !== undefined) {
      chain = chain.then(() => store.write(ref, answer.state, info) as void);
      continue;
    }
    const done = store.write(ref, answer.state, info);
    if (isThenable(done)) chain = Promise.resolve(done) as Promise<void>;
  }
  return chain;
}

/** A lease's identity: the limit, the key, its id and the slots it holds. */
export interface LeaseData {
  readonly name: string;
  readonly key: string | undefined;
  readonly id: number;
  readonly slots: readonly number[];
}

/**
 * A store that decides a concurrency limit's operation next to its data, in one round trip
 * (Redis: `ts/stores/redis-script-concurrency.ts`): it reads `refs`, decides as the core does,
 * writes, and answers what each ref held and the indexes of the refs it wrote.
 */
export interface SlotsDecider {
  decideSlots(refs: StateRef[], args: string[]): Promise<{ stored: unknown[]; wrote: number[] }>;
}

/**
 * A store (a transaction's attempt) that reads a concurrency limit's slots for a call that then
 * writes at most `writes` of them, and checks at commit only what keeps that call exact (Deno
 * KV: `ts/stores/deno-kv-slots.ts`, whose atomic commit takes at most 10 checks). Every other
 * store reads them as any states, each checked as its transaction checks reads.
 */
export interface SlotsReader {
  readSlots(refs: StateRef[], writes: number): Promise<unknown[]>;
}

/** Whether `store` decides concurrency limits next to its data. */
export function decidesSlots(store: RateLimitStore): store is RateLimitStore & SlotsDecider {
  return typeof (store as Partial<SlotsDecider>).decideSlots === "function";
}

/**
 * Reads `slots` of the limit (by slot: the others absent), runs `decide` on
 * the core with them in the buffer, writes what it answers; synchronously on
 * a synchronous store, so nothing runs between the read and the write. On a
 * store that decides next to its data (`remote`: the script's arguments; none
 * for a call that writes nothing, or that the core does not decide), the
 * call is checked on the core first (nothing read), sent, and the core
 * replayed on what the store read: other slots written than the core's fail
 * the call closed (`STORE_MISMATCH`).
 */
function onSlots<T>(
  store: RateLimitStore,
  name: string,
  key: string | undefined,
  limit: ConcurrencyCompiled,
  slots: readonly number[],
  now: number,
  decide: (e: Engine) => { answer: SlotAnswer | undefined; result: T },
  remote: string[] | undefined,
  writes: number,
): T | Promise<T> {
  const refs: StateRef[] = slots.map((slot) => refOf(name, key, slot));
  const inBuffer = (e: Engine, states: unknown[]) => {
    const { io } = e;
    for (let slot = 0; slot < limit.max; slot++) putState(at.EXTRA + at.CONCURRENCY_STATES + 2 * slot, null, refOf(name, key, slot), io);
    slots.forEach((slot, index) => putState(at.EXTRA + at.CONCURRENCY_STATES + 2 * slot, states[index], refs[index]!, io));
    slots.forEach((slot, index) => (io[at.EXTRA + at.CONCURRENCY_SLOTS + index] = slot));
  };
  const finish = (e: Engine, states: unknown[]): T | Promise<T> => {
    inBuffer(e, states);
    const { answer, result } = decide(e);
    const done = answer === undefined ? undefined : writeSlots(store, name, key, answer, now);
    return isThenable(done) ? done.then(() => result) : result;
  };
  const e = engine();
  if (remote !== undefined && decidesSlots(store)) {
    const send = async (loaded: Engine): Promise<T> => {
      // Bad input fails here, before the store is touched (a lease that holds nothing is the store's to find).
      try {
        inBuffer(loaded, slots.map(() => null));
        decide(loaded);
      } catch (error) {
        if ((error as { code?: unknown }).code !== "LEASE_LOST") throw error;
      }
      const { stored, wrote } = await store.decideSlots(refs, remote);
      inBuffer(loaded, stored);
      let decided: { answer: SlotAnswer | undefined; result: T } | undefined;
      let failure: unknown;
      try {
        decided = decide(loaded);
      } catch (error) {
        failure = error;
      }
      const core = (decided?.answer?.slots ?? []).join(",");
      const script = wrote.map((index) => slots[index]).join(",");
      if (core !== script) {
        throw new RateboundError("STORE_MISMATCH", `Rate limit ${JSON.stringify(name)}: the store wrote slots [${script}] where the core decided [${core}]; the call failed closed`);
      }
      if (decided === undefined) throw failure;
      return decided.result;
    };
    return isThenable(e) ? Promise.resolve(e).then(send) : send(e);
  }
  const reader = (store as Partial<SlotsReader>).readSlots;
  const stored = typeof reader === "function" ? reader.call(store, refs, writes) : readAll(store, refs, now);
  if (!isThenable(e) && !isThenable(stored)) return finish(e, stored);
  return Promise.all([e, stored]).then(([loaded, states]) => finish(loaded, states));
}

/** Every slot of a limit of `max`. */
function allSlots(max: number): number[] {
  return Array.from({ length: max }, (_, slot) => slot);
}

/** What taking slots answers: granted, the lease's data and expiry; refused, the wait. */
export type Taken = { ok: true; data: LeaseData; expiresAt: number } | (RateLimitResult & { ok: false });

/**
 * Takes `count` slots for a lease of id `id` (the host's draw, an integer
 * from 1 to 2^53) at `now`: reads every slot, the core picks free or expired
 * ones, writes them. Run it inside the store's transaction.
 */
export function takeSlots(store: RateLimitStore, name: string, key: string | undefined, limit: ConcurrencyCompiled, count: number, id: number, now: number): Taken | Promise<Taken> {
  return onSlots(store, name, key, limit, allSlots(limit.max), now, (e): { answer: SlotAnswer | undefined; result: Taken } => {
    const status = exportsOf(e).rb_concurrency_take(limit.max, limit.lease, count, id, now);
    if (status < 0) throw coreError(e.io, at.OUT, name);
    if (status === 0) return { answer: undefined, result: { ok: false, retryAfter: e.io[at.OUT + at.OUT_RETRY_AFTER]! } };
    const answer = answered(e.io);
    return { answer, result: { ok: true, data: { name, key, id, slots: answer.slots }, expiresAt: answer.expiresAt } };
  }, ["take", String(now), String(id), String(count), String(limit.lease)], count);
}

/** Gives back the slots of `lease` that still hold its id; answers how many (0: released already, expired, or forged). */
export function releaseSlots(store: RateLimitStore, limit: ConcurrencyCompiled, lease: LeaseData, now: number): number | Promise<number> {
  checkSlotsShape(lease);
  const slots = inOrder(lease.slots);
  return onSlots(store, lease.name, lease.key, limit, slots, now, (e) => {
    const status = exportsOf(e).rb_concurrency_release(limit.max, limit.lease, lease.id, now, slots.length);
    if (status < 0) throw coreError(e.io, at.OUT, lease.name);
    return { answer: answered(e.io), result: status };
  }, ["release", String(now), String(lease.id)], slots.length);
}

/** Moves the expiry of `lease` to no earlier than `now + ms`; answers the new expiry, or throws `LEASE_LOST`. */
export function extendSlots(store: RateLimitStore, limit: ConcurrencyCompiled, lease: LeaseData, now: number, ms: number): number | Promise<number> {
  checkSlotsShape(lease);
  const slots = inOrder(lease.slots);
  return onSlots(store, lease.name, lease.key, limit, slots, now, (e) => {
    const status = exportsOf(e).rb_concurrency_extend(limit.max, limit.lease, lease.id, now, ms, slots.length);
    if (status < 0) throw coreError(e.io, at.OUT, lease.name);
    const answer = answered(e.io);
    return { answer, result: answer.expiresAt };
  }, ["extend", String(now), String(lease.id), String(ms)], slots.length);
}

/**
 * Whether `count` slots are free at `now` (a `check`): the core's take on what is stored, its
 * writes dropped. Nothing is written, so no slot is checked at commit (Deno KV) and a store that
 * decides next to its data is only read.
 */
export function checkSlots(store: RateLimitStore, name: string, key: string | undefined, limit: ConcurrencyCompiled, count: number, now: number): RateLimitResult | Promise<RateLimitResult> {
  return onSlots(store, name, key, limit, allSlots(limit.max), now, (e): { answer: undefined; result: RateLimitResult } => {
    // Any valid id: what would be written is dropped.
    const status = exportsOf(e).rb_concurrency_take(limit.max, limit.lease, count, 1, now);
    if (status < 0) throw coreError(e.io, at.OUT, name);
    return { answer: undefined, result: status === 0 ? { ok: false, retryAfter: e.io[at.OUT + at.OUT_RETRY_AFTER]! } : { ok: true } };
  }, undefined, 0);
}

/** How many slots of the limit are held for `key` at `now` (a `getValue`), as the core counts them; nothing written. */
export function heldSlots(store: RateLimitStore, name: string, key: string | undefined, limit: ConcurrencyCompiled, now: number): number | Promise<number> {
  return onSlots(store, name, key, limit, allSlots(limit.max), now, (e): { answer: undefined; result: number } => {
    const held = exportsOf(e).rb_concurrency_held(limit.max, limit.lease, now);
    if (held < 0) throw coreError(e.io, at.OUT, name);
    return { answer: undefined, result: held };
  }, undefined, 0);
}

/** Deletes every slot of the limit for `key` (a `reset`): each lease held there holds nothing after. */
export function deleteSlots(store: RateLimitStore, name: string, key: string | undefined, limit: ConcurrencyCompiled, now: number): void | Promise<void> {
  const slots = allSlots(limit.max);
  // Read as a call that writes them all (Deno KV: the guard is checked and written), then deleted.
  return onSlots(store, name, key, limit, slots, now, () => ({ answer: { slots, state: null, fullAt: now, expiresAt: now }, result: undefined }), undefined, slots.length);
}

/** A lease's slots lowest first (what the core and a store's port read in the same order). */
function inOrder(slots: readonly number[]): number[] {
  return [...slots].sort((a, b) => a - b);
}

/** A lease's slots must be a list of numbers (the core checks each against the limit). */
function checkSlotsShape(lease: LeaseData): void {
  if (!Array.isArray(lease.slots) || lease.slots.length > 64 || lease.slots.some((slot) => typeof slot !== "number")) {
    throw wrongArgument("Lease", "slots", mustBe("lease.slots", "an array of at most 64 slot numbers", lease.slots));
  }
}
