/**
 * Grants: `limit(…, { grant: true })` charges and answers a handle; a settle
 * gives back what was not used (within the refund rule) or takes the extra.
 * The reads and writes of both are here; every number is the core's.
 * @module
 */
import * as at from "./boundary.js";
import { figuresAt, io as mainIo, ownItems, type Engine } from "./engine.js";
import { coreError, invalidRequest, mustBe, RateboundError, unknownField, wrongArgument } from "./errors.js";
import { checkKey, checkName, refId, refOf } from "./call.js";
import { isThenable, putItem, putState, readAll, type Call } from "./driver.js";
import type { Compiled } from "./config.js";
import { applyLimit } from "./stored-limits.js";
import type { GrantData, GrantShard, RateLimitFigures, RateLimitResult, RateLimitState, RateLimitStore, SettleResult, StateRef } from "./types.js";

export { Grant, type GrantResult, type Settler } from "./grant-handle.js";

// ---------------------------------------------------------------------------------------------
// A grant's id names its record: 30 bits of slot, 34 bits of tag (`src/records.rs`).

/** Two 32-bit FNV-1a hashes of `id` (different offsets): where its record lives, and how it is told apart. */
export function recordOf(id: string): { slot: number; tag: number } {
  let first = 0x811c9dc5;
  let second = 0x01000193 ^ 0x9747b28c;
  for (let index = 0; index < id.length; index++) {
    const unit = id.charCodeAt(index);
    first = Math.imul(first ^ unit, 0x01000193);
    second = Math.imul(second ^ unit, 0x01000193);
  }
  return { slot: first >>> 2, tag: (second >>> 0) * 4 + (first & 3) };
}

/** A fresh id: the charge's ms in hex, then 64 random bits. */
export function grantId(now: number, words: readonly number[]): string {
  const hex = (word: number) => (word >>> 0).toString(16).padStart(8, "0");
  return `${Math.max(0, Math.trunc(now)).toString(16)}.${hex(words[0]!)}${hex(words[1]!)}`;
}

/** The refs of a grant's charge: the planned shards, their ledgers, the record. */
function chargeRefs(e: Engine, call: Call, slot: number): { refs: StateRef[]; reads: number } {
  const { core, io } = e;
  const { PLAN, EXTRA } = at;
  if (core.rb_plan_charge(slot) < 0) throw coreError(io, at.OUT, call.name);
  const reads = io[PLAN + at.PLAN_READS]!;
  const ledgers = EXTRA + at.CHARGE_READS;
  const shards = [io[PLAN + at.PLAN_FIRST]!, io[PLAN + at.PLAN_SECOND]!, io[ledgers]!, io[ledgers + 1]!, io[ledgers + 2]!];
  const wanted = reads === 2 ? shards : [shards[0]!, shards[2]!, shards[4]!];
  return { refs: wanted.map((shard) => refOf(call.name, call.key, shard)), reads };
}

/** Writes the call as item 0 of the engine's buffer (a charge always writes; it answers figures when asked). */
function putCall(e: Engine, call: Call, figures: boolean): void {
  if (e.io === mainIo) ownItems(undefined);
  putItem(e.io, at.ITEMS, call, figures);
}

/** Applies a core answer's writes (from `writes`: count, then shard, value, ts, fullAt each) through `store`. */
function writeBack(io: Float64Array, store: RateLimitStore, name: string, key: string | undefined, writes: number, now: number): void | Promise<void> {
  const applied: [StateRef, RateLimitState, number][] = [];
  for (let index = 0; index < io[writes + at.WRITES_COUNT]!; index++) {
    const from = writes + at.WRITES_FIRST + at.WRITE * index;
    const state = from + at.WRITE_STATE;
    applied.push([refOf(name, key, io[from + at.WRITE_SHARD]!), { value: io[state + at.STATE_VALUE]!, ts: io[state + at.STATE_TS]! }, io[from + at.WRITE_FULL_AT]!]);
  }
  let chain: Promise<void> | undefined;
  for (const [ref, state, fullAt] of applied) {
    if (chain !== undefined) {
      chain = chain.then(() => store.write(ref, state, { now, fullAt }) as void);
      continue;
    }
    const done = store.write(ref, state, { now, fullAt });
    if (isThenable(done)) chain = Promise.resolve(done) as Promise<void>;
  }
  return chain;
}

/**
 * Charges a grant: the decision `limit` makes, and when granted the grant's
 * data, with its record and the ledgers written in the same transaction.
 *
 * @param e The engine with grants ({@link grantsEngine}).
 * @param store The store, inside its transaction when it has one.
 * @param call The checked call (its draws: the decision's, then two for the id).
 * @param idWords Two random 32-bit words for the grant's id.
 * @param figures Whether to answer the limit's header figures, as `limit` does (the core computes them from the charge's decision).
 * @returns The result, with the grant's data when granted, and the figures when asked.
 */
export function charge(e: Engine, store: RateLimitStore, call: Call, idWords: readonly number[], figures = false): Charged | Promise<Charged> {
  const id = grantId(call.now, idWords);
  const { slot, tag } = recordOf(id);
  putCall(e, call, figures);
  // On a stored limit the count is checked once its records are read: the shards it reads never depend on it.
  if (call.records !== undefined) e.io[at.ITEMS + at.ITEM_COUNT] = e.io[at.ITEMS + at.ITEM_RESERVE] = 0;
  const { refs, reads } = chargeRefs(e, call, slot);
  // The records of its stored limit are read with its states, in the same transaction.
  const stored = readAll(store, call.records === undefined ? refs : [...refs, ...call.records], call.now);
  const charging: Charging = { id, slot, tag, refs, reads, figures };
  // A synchronous store is charged synchronously: nothing can run between the read and the write.
  return isThenable(stored) ? Promise.resolve(stored).then((states) => charged(e, store, call, charging, states)) : charged(e, store, call, charging, stored);
}

/** What a charge answers: the result, with the grant's data when granted, and the figures when asked. */
export type Charged = RateLimitResult & { grant?: GrantData; figures?: RateLimitFigures };

/** A charge between its plan and its decision: the grant's id and record, the refs read, whether figures were asked. */
interface Charging {
  id: string;
  slot: number;
  tag: number;
  refs: StateRef[];
  reads: number;
  figures: boolean;
}

function charged(e: Engine, store: RateLimitStore, call: Call, { id, slot, tag, refs, reads, figures }: Charging, stored: unknown[]): Charged | Promise<Charged> {
  const { core, io } = e;
  const { EXTRA, OUT } = at;
  putCall(e, call, figures);
  if (call.records !== undefined) {
    // The core makes the stored limit the item's config, and checks the count against it.
    const source = applyLimit(0, call, call.records, stored.slice(refs.length), e);
    if (source instanceof RateboundError) throw source;
  }
  chargeRefs(e, call, slot);
  // The five states the core takes: shard a, shard b, ledger a, ledger b, record (absent ones NaN).
  const order = reads === 2 ? [0, 1, 2, 3, 4] : [0, -1, 1, -1, 2];
  order.forEach((from, index) => putState(EXTRA + at.CHARGE_STATES + 2 * index, from < 0 ? null : stored[from], { name: call.name, key: call.key, shard: from < 0 ? 0 : refs[from]!.shard }, io));
  const status = core.rb_charge(slot, tag);
  if (status < 0) throw coreError(io, OUT, call.name);
  const ok = io[OUT + at.OUT_STATUS] === 1;
  const wait = io[OUT + at.OUT_RETRY_AFTER]!;
  // The same figures `limit` answers, read by the same reader from this engine's buffer.
  const shown = figures ? { figures: figuresAt(OUT + at.OUT_FIGURES, io) } : {};
  if (!ok) return { ok: false, retryAfter: wait, ...shown };
  const shards: GrantShard[] = [];
  const charged = EXTRA + at.CHARGE_GRANT;
  for (let index = 0; index < io[charged + at.GRANT_SHARD_COUNT]!; index++) {
    const part = charged + at.GRANT_PARTS + at.GRANT_PART * index;
    shards.push({
      shard: io[part + at.PART_SHARD]!,
      count: io[part + at.PART_COUNT]!,
      value: io[part + at.PART_VALUE]!,
      ts: io[part + at.PART_TS]!,
      refunded: io[part + at.PART_REFUNDED]!,
    });
  }
  const grant: GrantData = {
    name: call.name,
    ...(call.key === undefined ? {} : { key: call.key }),
    id,
    count: io[charged + at.GRANT_COUNT]!,
    chargedAt: io[charged + at.GRANT_CHARGED_AT]!,
    shards,
  };
  const answer: Charged = Number.isNaN(wait) ? { ok: true, grant, ...shown } : { ok: true, retryAfter: wait, grant, ...shown };
  const written = writeBack(io, store, call.name, call.key, EXTRA + at.CHARGE_WRITES, call.now);
  return isThenable(written) ? written.then(() => answer) : answer;
}

const GRANT_FIELDS = ["name", "key", "id", "count", "chargedAt", "shards"];
const SHARD_FIELDS = ["shard", "count", "value", "ts", "refunded"];

/** A grant's data as given, own fields only; its numbers are the core's to check. */
export interface GrantInput {
  name: string;
  key: string | undefined;
  id: string;
  count: number;
  chargedAt: number;
  shards: GrantShard[];
}

/** Reads a grant's data (own fields only): its shape is checked here, its numbers by the core. */
export function grantInput(data: unknown): GrantInput {
  const wrong = (field: string, rule: string, value: unknown) => wrongArgument("settle", field, mustBe(field, rule, value));
  const own = (object: object, known: readonly string[], of: string): Record<string, unknown> => {
    let names: string[];
    try {
      names = Object.keys(object);
    } catch {
      throw wrongArgument("settle", "grant", "grant must be a plain object (listing its fields threw) (got an object)");
    }
    const fields: Record<string, unknown> = Object.create(null);
    for (const name of names) {
      if (!known.includes(name)) throw wrongArgument("settle", name, unknownField(name, known, "field", of));
      fields[name] = (object as Record<string, unknown>)[name];
    }
    return fields;
  };
  if (typeof data !== "object" || data === null || Array.isArray(data)) throw wrong("grant", "a grant's data (an object)", data);
  const fields = own(data, GRANT_FIELDS, " of a grant's data");
  const name = checkName(fields.name);
  const key = checkKey(name, fields.key);
  if (typeof fields.id !== "string") throw wrong("grant.id", "a string", fields.id);
  if (fields.id.length === 0 || fields.id.length > 64) throw invalidRequest(name, "grant.id", mustBe("grant.id", "a grant's id (1 to 64 characters)", fields.id));
  const number = (field: string, value: unknown): number => {
    if (typeof value !== "number") throw wrong(field, "a number", value);
    return value;
  };
  if (!Array.isArray(fields.shards)) throw wrong("grant.shards", "an array", fields.shards);
  const listed = fields.shards as unknown[];
  const shards: GrantShard[] = [];
  for (let index = 0; index < Math.min(listed.length, 3); index++) {
    const part = listed[index];
    if (typeof part !== "object" || part === null) throw wrong("grant.shards", "an array of objects", part);
    const entry = own(part, SHARD_FIELDS, " of a grant's data");
    const shard = number("grant.shards.shard", entry.shard);
    if (!Number.isInteger(shard) || shard < 0 || shard >= 2 ** 32 - 1) throw wrong("grant.shards.shard", "an integer >= 0", shard);
    shards.push({
      shard,
      count: number("grant.shards.count", entry.count),
      value: number("grant.shards.value", entry.value),
      ts: number("grant.shards.ts", entry.ts),
      refunded: number("grant.shards.refunded", entry.refunded),
    });
  }
  return { name, key, id: fields.id, count: number("grant.count", fields.count), chargedAt: number("grant.chargedAt", fields.chargedAt), shards };
}

/** Writes a settle's config (its seven numbers), grant and draws into `EXTRA`. */
function putSettle(e: Engine, grant: GrantInput, numbers: readonly number[], draws: readonly number[]): void {
  const { io } = e;
  const { EXTRA } = at;
  numbers.forEach((number, index) => (io[EXTRA + at.SETTLE_CONFIG + index] = number));
  const { slot, tag } = recordOf(grant.id);
  const into = EXTRA + at.SETTLE_GRANT;
  io[into + at.GRANT_COUNT] = grant.count;
  io[into + at.GRANT_CHARGED_AT] = grant.chargedAt;
  io[into + at.GRANT_SHARD_COUNT] = grant.shards.length;
  for (let index = 0; index < 2; index++) {
    const part = grant.shards[index];
    const from = into + at.GRANT_PARTS + at.GRANT_PART * index;
    io[from + at.PART_SHARD] = part?.shard ?? 0;
    io[from + at.PART_COUNT] = part?.count ?? 0;
    io[from + at.PART_VALUE] = part?.value ?? 0;
    io[from + at.PART_TS] = part?.ts ?? 0;
    io[from + at.PART_REFUNDED] = part?.refunded ?? 0;
  }
  io[into + at.GRANT_SLOT] = slot;
  io[into + at.GRANT_TAG] = tag;
  io[EXTRA + at.SETTLE_DRAWS] = draws[0] ?? 0;
  io[EXTRA + at.SETTLE_DRAWS + 1] = draws[1] ?? 0;
}

/**
 * Settles a grant at `actual` tokens: reads its shards, their ledgers and its
 * record, lets the core settle, and writes what it says.
 *
 * @param e The engine with grants ({@link grantsEngine}).
 * @param store The store, inside its transaction when it has one.
 * @param grant The grant's data, read by {@link grantInput}.
 * @param limit Its limit's compiled config.
 * @param actual Tokens really used.
 * @param now The clock, ms.
 * @param draws The settle's random numbers (`limit.settleDraws`).
 * @param records The records of its stored limit (`limitRefs`), when it settles on the limit stored now.
 * @returns What the settle did.
 */
export function settle(
  e: Engine,
  store: RateLimitStore,
  grant: GrantInput,
  limit: Compiled,
  actual: number,
  now: number,
  draws: readonly number[],
  records?: readonly StateRef[],
): SettleResult | Promise<SettleResult> {
  const { core, io } = e;
  const { EXTRA, OUT } = at;
  putSettle(e, grant, limit.numbers, draws);
  core.rb_settle_reads();
  const shards = Array.from(io.subarray(EXTRA + at.SETTLE_READS, EXTRA + at.SETTLE_READS + 5));
  // The five reads, de-duplicated (an unsharded grant reads its shard and ledger once).
  const ids = new Map<string, number>();
  const refs: StateRef[] = [];
  const slots = shards.map((shard) => {
    const id = refId(grant.name, grant.key, shard);
    let slot = ids.get(id);
    if (slot === undefined) {
      ids.set(id, (slot = refs.length));
      refs.push(refOf(grant.name, grant.key, shard));
    }
    return slot;
  });
  const read = readAll(store, records === undefined ? refs : [...refs, ...records], now);
  // A synchronous store is settled synchronously: nothing can run between the read and the write.
  const finish = (stored: unknown[]): SettleResult | Promise<SettleResult> => {
  const numbers = records === undefined ? limit.numbers : storedNumbers(e, grant, limit, records, stored.slice(refs.length), now);
  putSettle(e, grant, numbers, draws);
  slots.forEach((slot, index) => putState(EXTRA + at.SETTLE_STATES + 2 * index, stored[slot], { name: grant.name, key: grant.key, shard: shards[index]! }, io));
  if (core.rb_settle(actual, now) < 0) throw coreError(io, OUT, grant.name);
  const answer = EXTRA + at.SETTLE_ANSWER;
  const retryAfter = io[answer + at.SETTLED_RETRY_AFTER]!;
  const settled: SettleResult = {
    refunded: io[answer + at.SETTLED_REFUNDED]!,
    charged: io[answer + at.SETTLED_CHARGED]!,
    unpaid: io[answer + at.SETTLED_UNPAID]!,
    ...(Number.isNaN(retryAfter) ? {} : { retryAfter }),
  };
  const written = writeBack(io, store, grant.name, grant.key, EXTRA + at.SETTLE_WRITES, now);
  return isThenable(written) ? written.then(() => settled) : settled;
  };
  return isThenable(read) ? Promise.resolve(read).then(finish) : finish(read);
}

/**
 * The config a settle decides on: the limit its records hold now (the key's,
 * else the name's, else `limit`, the code's), as the core resolves it into
 * item 0.
 */
function storedNumbers(e: Engine, grant: GrantInput, limit: Compiled, records: readonly StateRef[], stored: readonly unknown[], now: number): number[] {
  const item: Call = { name: grant.name, key: grant.key, limit, count: 0, reserve: false, write: false, now, draws: [] };
  putCall(e, item, false);
  const source = applyLimit(0, item, records, stored, e);
  if (source instanceof RateboundError) throw source;
  return Array.from(e.io.subarray(at.ITEMS, at.ITEMS + at.CONFIG_LEN));
}

export { RateboundError };
