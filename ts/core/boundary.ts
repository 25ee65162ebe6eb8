// Generated from src/wasm/io.rs (the buffer's layout) and src/error.rs (the core's error tables)
// by src/wasm/boundary.rs, which scripts/build.mjs runs: do not edit. `cargo test` fails while
// this file differs from what the Rust side writes (`cargo run --bin boundary -- --write`).
/**
 * The WebAssembly boundary's numbers: where each record and field sits in the shared buffer of
 * `f64`s (indexes, not bytes), and the tables that word the core's errors (`ts/core/errors.ts`).
 * @module
 */

// The buffer's regions and strides, in f64 indexes.
/** The most items of one batch. */
export const MAX_ITEMS = 128;
/** The most distinct states one batch reads. */
export const MAX_SLOTS = 256;
/** The stride of an item. */
export const ITEM = 16;
/** The stride of a plan. */
export const PLAN_STRIDE = 15;
/** The stride of a slot. */
export const SLOT = 5;
/** The stride of an answer. */
export const OUT_STRIDE = 17;
/** One record per decision (stride `ITEM`). */
export const ITEMS = 0;
/** Per item (stride `PLAN_STRIDE`): what `rb_plan` names. */
export const PLAN = 2048;
/** Per item, the slots of its two reads. */
export const MAP = 3968;
/** Per slot (stride `SLOT`): stored and pending states. */
export const SLOTS = 4224;
/** Per item (stride `OUT_STRIDE`): its answer or error. */
export const OUT = 5504;
/** What one operation needs beyond items (the `EXTRA`-relative sub-layouts below). */
export const EXTRA = 7680;
/** The buffer's length: `EXTRA` holds up to 1024 sampled shards and their states. */
export const IO_LEN = 11776;

// A state, two numbers (value NaN: none), and a compiled config, seven.
/** A state's value. */
export const STATE_VALUE = 0;
/** A state's ts. */
export const STATE_TS = 1;
/** A compiled config's kind: 0 token bucket, 1 fixed window. */
export const CONFIG_KIND = 0;
/** Its rate. */
export const CONFIG_RATE = 1;
/** Its period in ms. */
export const CONFIG_PERIOD = 2;
/** Its capacity. */
export const CONFIG_CAPACITY = 3;
/** Its maxReserved (NaN: none). */
export const CONFIG_MAX_RESERVED = 4;
/** Its shard count. */
export const CONFIG_SHARDS = 5;
/** Its fixed window's start (NaN: none). */
export const CONFIG_START = 6;
/** How many numbers a compiled config takes. */
export const CONFIG_LEN = 7;

// An item (offsets in its record): the config's seven numbers first, then the call.
/** Tokens asked for. */
export const ITEM_COUNT = 7;
/** 1: reserve. */
export const ITEM_RESERVE = 8;
/** 1: write (limit), 0: check. */
export const ITEM_WRITE = 9;
/** The call's now, in ms. */
export const ITEM_NOW = 10;
/** Four random draws. */
export const ITEM_DRAWS = 11;
/** 1: answer the header figures. */
export const ITEM_FIGURES = 15;

// A plan (offsets in its record of PLAN_STRIDE).
/** The first shard read. */
export const PLAN_FIRST = 0;
/** The second shard read. */
export const PLAN_SECOND = 1;
/** How many shards are read (1 or 2). */
export const PLAN_READS = 2;
/** The fresh state of each shard read: two states (value, ts). */
export const PLAN_FRESH = 3;
/** 0, or the item's error as -code. */
export const PLAN_STATUS = 7;
/** The shard's rate. */
export const PLAN_RATE = 8;
/** The shard's capacity. */
export const PLAN_CAPACITY = 9;
/** The shard's maxReserved (NaN: none). */
export const PLAN_MAX_RESERVED = 10;
/** The period in ms a port counts windows in (a calendar period's mean length). */
export const PLAN_PERIOD = 11;
/** A calendar period's window holding `now`: its start (NaN: not a calendar period). */
export const PLAN_WINDOW_START = 12;
/** That window's end (the next one's start). */
export const PLAN_WINDOW_END = 13;
/** The period's longest window in ms, which waits and fills past that end count. */
export const PLAN_WINDOW_LONGEST = 14;

// A slot (offsets in its record of SLOT).
/** The stored state (value NaN: none). */
export const SLOT_STORED = 0;
/** The state to write (value NaN: nothing). */
export const SLOT_PENDING = 2;
/** The written state's fullAt. */
export const SLOT_FULL_AT = 4;

// An answer (offsets in its record of OUT_STRIDE), and the header figures inside it.
/** 1 granted, 0 refused, -code: an error (its details below). */
export const OUT_STATUS = 0;
/** The wait in ms (NaN: none). */
export const OUT_RETRY_AFTER = 1;
/** The header figures (FIGURE_*). */
export const OUT_FIGURES = 2;
/** The two shares taken. */
export const OUT_SHARES = 9;
/** An error's field (`src/error.rs` `Field`, 0: none). */
export const OUT_FIELD = 11;
/** An error's rule (`Rule`, 0: none). */
export const OUT_RULE = 12;
/** An error's three numbers. */
export const OUT_NUMBERS = 13;
/** 1: the error's request reserved. */
export const OUT_RESERVE = 16;
/** Figures: the limit. */
export const FIGURE_LIMIT = 0;
/** Figures: what remains. */
export const FIGURE_REMAINING = 1;
/** Figures: seconds until reset. */
export const FIGURE_RESET = 2;
/** Figures: the window in seconds. */
export const FIGURE_WINDOW = 3;
/** Figures: retryAfter in seconds (NaN: none). */
export const FIGURE_RETRY_AFTER = 4;
/** Figures: how many shards were sampled. */
export const FIGURE_SAMPLED = 5;
/** Figures: the effective window in seconds (draft-11's `t`). */
export const FIGURE_EFFECTIVE_WINDOW = 6;

// EXTRA for compiling a config and deciding (offsets from EXTRA).
/** `rb_decide`: a refused batch's wait. */
export const BATCH_WAIT = 0;
/** `rb_compile` in: the kind (0 token bucket, 1 fixed window, 2 other). */
export const COMPILE_KIND = 0;
/** `rb_compile` in: a (tag, value) pair per field (tags: 0 absent, 1 null, 2 number, 3 other, `COMPILE_TAG_CALENDAR`). */
export const COMPILE_FIELDS = 1;
/** `rb_compile` in: the tag of a calendar period's name, its value the unit's code (`CALENDAR_PERIODS`). */
export const COMPILE_TAG_CALENDAR = 4;
/** `rb_compile` out: the config's seven numbers. */
export const COMPILED_CONFIG = 0;
/** `rb_compile` out: how many draws a decision takes. */
export const COMPILED_DRAWS = 7;
/** `rb_compile` out: how many draws a settle takes. */
export const COMPILED_SETTLE_DRAWS = 8;

// EXTRA for a grant's charge and settle (offsets from EXTRA), a grant, and writes.
/** `rb_plan_charge` out: the shards of the two ledgers and the record. */
export const CHARGE_READS = 0;
/** `rb_charge` in: the five states read (two shards, their ledgers, the record). */
export const CHARGE_STATES = 0;
/** `rb_charge` out: the grant (GRANT_*, without slot and tag). */
export const CHARGE_GRANT = 16;
/** `rb_charge` out: the writes (WRITES_*). */
export const CHARGE_WRITES = 32;
/** `rb_settle` in: the config's seven numbers. */
export const SETTLE_CONFIG = 0;
/** `rb_settle` in: the grant (GRANT_*). */
export const SETTLE_GRANT = 8;
/** `rb_settle` in: two draws. */
export const SETTLE_DRAWS = 24;
/** `rb_settle_reads` out: the five shards a settle reads. */
export const SETTLE_READS = 32;
/** `rb_settle` in: the five states read. */
export const SETTLE_STATES = 40;
/** `rb_settle` out: refunded, charged, unpaid, retryAfter (NaN: none). */
export const SETTLE_ANSWER = 64;
/** `rb_settle` out: the writes (WRITES_*). */
export const SETTLE_WRITES = 72;
/** A settle's answer: tokens refunded. */
export const SETTLED_REFUNDED = 0;
/** A settle's answer: tokens charged beyond the grant. */
export const SETTLED_CHARGED = 1;
/** A settle's answer: tokens charged but not available. */
export const SETTLED_UNPAID = 2;
/** A settle's answer: the wait (NaN: none). */
export const SETTLED_RETRY_AFTER = 3;
/** A grant: tokens charged. */
export const GRANT_COUNT = 0;
/** A grant: when, in ms. */
export const GRANT_CHARGED_AT = 1;
/** A grant: how many shards it used. */
export const GRANT_SHARD_COUNT = 2;
/** A grant: per shard used, GRANT_PART numbers (PART_*). */
export const GRANT_PARTS = 3;
/** A grant's part stride. */
export const GRANT_PART = 5;
/** A part: the shard. */
export const PART_SHARD = 0;
/** A part: tokens. */
export const PART_COUNT = 1;
/** A part: the shard's value after the charge. */
export const PART_VALUE = 2;
/** A part: its ts. */
export const PART_TS = 3;
/** A part: tokens refunded. */
export const PART_REFUNDED = 4;
/** A grant: its record's slot. */
export const GRANT_SLOT = 13;
/** A grant: its record's tag. */
export const GRANT_TAG = 14;
/** Writes: how many. */
export const WRITES_COUNT = 0;
/** Writes: the first (stride WRITE: shard, value, ts, fullAt). */
export const WRITES_FIRST = 1;
/** A write's stride. */
export const WRITE = 4;
/** A write: the shard. */
export const WRITE_SHARD = 0;
/** A write: the state (value, ts). */
export const WRITE_STATE = 1;
/** A write: its fullAt. */
export const WRITE_FULL_AT = 3;

// EXTRA for limits stored in the host (offsets from EXTRA), and where their records live.
/** `rb_limit_encode` in: the limit's config in code (seven numbers). */
export const LIMIT_CODE = 0;
/** `rb_limit_encode` in: the config to store, compiled (seven numbers). */
export const LIMIT_STORED = 8;
/** `rb_limit_encode` out: its two records (value, ts each). */
export const LIMIT_WRITE = 16;
/** `rb_limit_resolve` in: the key's two records (value, ts each; NaN value: none). */
export const LIMIT_KEY = 0;
/** `rb_limit_resolve` in: the name's two records. */
export const LIMIT_NAME = 4;
/** How many records one stored limit takes. */
export const LIMIT_RECORDS = 2;
/** The shard of a key's first record (its key's own limit). */
export const KEY_LIMIT_SHARD = 1073743872;
/** The shard of a name's first record (the key none). */
export const NAME_LIMIT_SHARD = 1073743874;

// EXTRA for getValue and the pure functions (offsets from EXTRA).
/** `rb_plan_value` in: the draws. */
export const VALUE_DRAWS = 0;
/** `rb_plan_value` out, `rb_value` in: the sampled shards. */
export const VALUE_SHARDS = 1024;
/** `rb_value` in: the sampled shards' states. */
export const VALUE_STATES = 2048;
/** The most shards `getValue` samples. */
export const MAX_SAMPLED = 1024;
/** `rb_value` out: the report (REPORT_*). */
export const VALUE_REPORT = 0;
/** A report: the value. */
export const REPORT_VALUE = 0;
/** A report: its ts. */
export const REPORT_TS = 1;
/** A report: the shard sampled. */
export const REPORT_SHARD = 2;
/** A report: a fixed window's start (NaN: none). */
export const REPORT_START = 3;
/** `rb_decide_state`, `rb_figures` in: the config's seven numbers. */
export const PURE_CONFIG = 0;
/** `rb_calculate`, `rb_decide_state`, `rb_figures` out. */
export const PURE_ANSWER = 8;
/** `rb_calculate` out: ts. */
export const CALCULATED_TS = 0;
/** `rb_calculate` out: retryAfter (NaN: none). */
export const CALCULATED_RETRY_AFTER = 1;
/** `rb_calculate` out: windowStart (NaN: none). */
export const CALCULATED_WINDOW_START = 2;
/** `rb_calculate` out: 0, or -code. */
export const CALCULATED_STATUS = 3;
/** `rb_decide_state` out: 1 granted. */
export const DECIDED_OK = 0;
/** `rb_decide_state` out: the wait (NaN: none). */
export const DECIDED_RETRY_AFTER = 1;
/** `rb_decide_state` out: the next value. */
export const DECIDED_VALUE = 2;
/** `rb_decide_state` out: the next ts. */
export const DECIDED_TS = 3;

// EXTRA for a concurrency limit's lease (offsets from EXTRA): `rb_concurrency_*`.
/** `rb_concurrency_compile` in: `max` as a (tag, value) pair as `COMPILE_FIELDS`, then `lease`. */
export const CONCURRENCY_FIELDS = 0;
/** `rb_concurrency_compile` out: the limit's max. */
export const CONCURRENCY_MAX = 0;
/** `rb_concurrency_compile` out: its lease in ms. */
export const CONCURRENCY_LEASE = 1;
/** In: every slot's state as read (two numbers a slot, value NaN: none), slot 0 first. */
export const CONCURRENCY_STATES = 0;
/** In (release, extend): the lease's slots; out: the slots written (as many as `LEASE_SLOT_COUNT`). */
export const CONCURRENCY_SLOTS = 128;
/** Out: the lease's answer (LEASE_*). */
export const CONCURRENCY_ANSWER = 192;
/** A lease's answer: how many slots are taken, released or extended (and written). */
export const LEASE_SLOT_COUNT = 0;
/** A lease's answer: when it expires, in ms (NaN: refused, or released). */
export const LEASE_EXPIRES_AT = 1;
/** A lease's answer: the state each slot written gets (value NaN: deleted), then its fullAt. */
export const LEASE_WRITE = 2;
/** A lease's answer: the written state's fullAt. */
export const LEASE_FULL_AT = 4;

// The slab of MemoryStore's states in the module's memory, and rb_slab_limit's flags and status.
/** The `f64`s of a slot: value, ts, fullAt. */
export const SLAB_SLOT_LEN = 3;
/** A slot's value (NaN: no state). */
export const SLAB_VALUE = 0;
/** A slot's ts. */
export const SLAB_TS = 1;
/** A slot's fullAt. */
export const SLAB_FULL_AT = 2;
/** A flag: `reserve`. */
export const SLAB_RESERVE = 1;
/** A flag: `limit` (writes) rather than `check`. */
export const SLAB_WRITE = 2;
/** A flag: answer the figures too. */
export const SLAB_FIGURES = 4;
/** A flag: a missing state cannot be read as full (the store dropped states that were not full yet at `now`): the call answers `SLAB_UNREADABLE` instead of deciding. */
export const SLAB_MISSING_UNREADABLE = 8;
/** A flag: the store never drops states (it has no `maxKeys`), so nothing reads a slot's fullAt: it is written `Infinity` without being computed. */
export const SLAB_NO_FULL_AT = 16;
/** `rb_slab_limit`'s status when its state is missing and `SLAB_MISSING_UNREADABLE` was set. */
export const SLAB_UNREADABLE = 2;

// The core's errors (src/error.rs): each table by number, 0 for none.
/** The codes (`Error::number`). */
export const CODES = [
  "",
  "INVALID_CONFIG",
  "INVALID_REQUEST",
  "COUNT_EXCEEDS_MAX",
  "WAIT_UNBOUNDED",
  "INVALID_RANDOM",
  "GRANT_SETTLED",
  "LEASE_LOST",
] as const;
/** The fields (`Field`), as messages and `error.field` name them. */
export const FIELDS = [
  "",
  "kind",
  "rate",
  "period",
  "capacity",
  "maxReserved",
  "shards",
  "start",
  "count",
  "reserve",
  "now",
  "sampleShards",
  "actual",
  "grant.count",
  "grant.chargedAt",
  "grant.shards",
  "grant.shards.count",
  "grant.shards.refunded",
  "grant.shards.value",
  "retryAfter",
  "maxJitter",
  "max",
  "lease",
  "lease.id",
  "lease.slots",
] as const;
/** The rules (`Rule`) a message words as "{field} must be {rule} (got …)" ("": a sentence). */
export const RULES = [
  "",
  "a number",
  "a positive finite number",
  "a finite number >= 0",
  "an integer from 1 to 1024",
  "null or absent for a token bucket",
  "a number of ms within ±9007199254740992 (2^53)",
  "\"token bucket\", \"fixed window\" or \"sliding window\"",
  "",
  "a finite number of ms",
  "",
  "an integer >= 1",
  "",
  "",
  "one or two shards",
  "a finite number",
  "the limit's own in code: a stored limit changes rate, period, capacity and maxReserved only",
  "an integer from 1 to 64",
  "an integer from 1 to 9007199254740992 (2^53)",
  "",
  "",
  "absent for a sliding window",
  "\"token bucket\" or \"fixed window\" for calculateRateLimit and grants (a sliding window decides on two windows' states: use limit, check or getValue)",
  "a positive finite number of ms, or \"day\", \"week\", \"month\" or \"year\"",
  "a number of ms for a token bucket or a sliding window (calendar periods are for fixed windows)",
  "1 for a calendar period",
  "a number of ms within ±9007199254740992 (2^53) for a calendar period",
] as const;
/** The rules a message words whole, the error's numbers as {0}, {1}, {2} ("": a phrase). */
export const SENTENCES = [
  "",
  "",
  "",
  "",
  "",
  "",
  "",
  "",
  "rate / period must be a positive finite number of tokens per ms for each shard (got rate {0}, period {1}, shards {2})",
  "",
  "period must be at least the clock's resolution at now (got period {0} ms, now {1}, whose resolution is {2} ms)",
  "",
  "the limit's state would leave the range of numbers (value {0}, ts {1}); nothing was written",
  "the grant names shard {0}, which is not another shard of this limit (it has {1})",
  "",
  "",
  "",
  "",
  "",
  "lease must be at least the clock's resolution at now (got lease {0} ms, now {1}, whose resolution is {2} ms)",
  "the lease names slot {0} twice or one this limit does not have (it has {1})",
  "",
  "",
  "",
  "",
  "",
  "",
] as const;

// The calendar periods (src/calendar.rs), by code: a config's `period` crosses as minus its code.
/** The names a fixed window's `period` may take instead of ms. */
export const CALENDAR_PERIODS = [
  "",
  "day",
  "week",
  "month",
  "year",
] as const;
