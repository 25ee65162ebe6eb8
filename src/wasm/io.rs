//! The shared buffer and its layout, in `f64` indexes. Every offset is named
//! once, here, and the Rust code uses the names; `src/wasm/boundary.rs` writes
//! the same names into the package's `ts/core/boundary.ts` when the package is
//! built (a test fails when the checked-in file is stale), so the two sides
//! cannot drift apart.
//!
//! - `ITEMS`, `PLAN`, `MAP`, `SLOTS`, `OUT`: one record per item (per slot
//!   for `SLOTS`), each field named below (`ITEM_*`, `PLAN_*`, `SLOT_*`, `OUT_*`).
//! - `EXTRA`: what one operation needs beyond items, its sub-layouts named below.

pub use super::calendar_layout::period_number;
use crate::config::{Config, Kind};
use crate::error::Error;
use crate::request::Request;
use crate::state::State;

/// Declares layout constants, each once, and a table of them (name, value, doc) that
/// `src/wasm/boundary.rs` writes into the package's `ts/core/boundary.ts`.
macro_rules! layout {
    ($table:ident: $title:literal; $( $(#[doc = $doc:literal])+ $name:ident = $value:expr; )+) => {
        $( $(#[doc = $doc])+ pub const $name: usize = $value; )+
        #[doc = $title]
        #[cfg(not(target_arch = "wasm32"))]
        pub const $table: Section = Section { title: $title, names: &[$( (stringify!($name), $name, concat!($($doc),+)) ),+] };
    };
}

/// A table of layout constants: its title, then each one's name, value and doc.
#[cfg(not(target_arch = "wasm32"))]
pub struct Section {
    pub title: &'static str,
    pub names: &'static [(&'static str, usize, &'static str)],
}

layout! { BUFFER: "The buffer's regions and strides, in f64 indexes.";
    /// The most items of one batch.
    MAX_ITEMS = 128;
    /// The most distinct states one batch reads.
    MAX_SLOTS = 256;
    /// The stride of an item.
    ITEM = 16;
    /// The stride of a plan.
    PLAN_STRIDE = 15;
    /// The stride of a slot.
    SLOT = 5;
    /// The stride of an answer.
    OUT_STRIDE = 17;
    /// One record per decision (stride `ITEM`).
    ITEMS = 0;
    /// Per item (stride `PLAN_STRIDE`): what `rb_plan` names.
    PLAN = ITEMS + ITEM * MAX_ITEMS;
    /// Per item, the slots of its two reads.
    MAP = PLAN + PLAN_STRIDE * MAX_ITEMS;
    /// Per slot (stride `SLOT`): stored and pending states.
    SLOTS = MAP + 2 * MAX_ITEMS;
    /// Per item (stride `OUT_STRIDE`): its answer or error.
    OUT = SLOTS + SLOT * MAX_SLOTS;
    /// What one operation needs beyond items (the `EXTRA`-relative sub-layouts below).
    EXTRA = OUT + OUT_STRIDE * MAX_ITEMS;
    /// The buffer's length: `EXTRA` holds up to 1024 sampled shards and their states.
    IO_LEN = EXTRA + 4096;
}

layout! { STATES: "A state, two numbers (value NaN: none), and a compiled config, seven.";
    /// A state's value.
    STATE_VALUE = 0;
    /// A state's ts.
    STATE_TS = 1;
    /// A compiled config's kind: 0 token bucket, 1 fixed window.
    CONFIG_KIND = 0;
    /// Its rate.
    CONFIG_RATE = 1;
    /// Its period in ms.
    CONFIG_PERIOD = 2;
    /// Its capacity.
    CONFIG_CAPACITY = 3;
    /// Its maxReserved (NaN: none).
    CONFIG_MAX_RESERVED = 4;
    /// Its shard count.
    CONFIG_SHARDS = 5;
    /// Its fixed window's start (NaN: none).
    CONFIG_START = 6;
    /// How many numbers a compiled config takes.
    CONFIG_LEN = 7;
}

layout! { ITEM_FIELDS: "An item (offsets in its record): the config's seven numbers first, then the call.";
    /// Tokens asked for.
    ITEM_COUNT = 7;
    /// 1: reserve.
    ITEM_RESERVE = 8;
    /// 1: write (limit), 0: check.
    ITEM_WRITE = 9;
    /// The call's now, in ms.
    ITEM_NOW = 10;
    /// Four random draws.
    ITEM_DRAWS = 11;
    /// 1: answer the header figures.
    ITEM_FIGURES = 15;
}

layout! { PLAN_FIELDS: "A plan (offsets in its record of PLAN_STRIDE).";
    /// The first shard read.
    PLAN_FIRST = 0;
    /// The second shard read.
    PLAN_SECOND = 1;
    /// How many shards are read (1 or 2).
    PLAN_READS = 2;
    /// The fresh state of each shard read: two states (value, ts).
    PLAN_FRESH = 3;
    /// 0, or the item's error as -code.
    PLAN_STATUS = 7;
    /// The shard's rate.
    PLAN_RATE = 8;
    /// The shard's capacity.
    PLAN_CAPACITY = 9;
    /// The shard's maxReserved (NaN: none).
    PLAN_MAX_RESERVED = 10;
    /// The period in ms a port counts windows in (a calendar period's mean length).
    PLAN_PERIOD = 11;
    /// A calendar period's window holding `now`: its start (NaN: not a calendar period).
    PLAN_WINDOW_START = 12;
    /// That window's end (the next one's start).
    PLAN_WINDOW_END = 13;
    /// The period's longest window in ms, which waits and fills past that end count.
    PLAN_WINDOW_LONGEST = 14;
}

layout! { SLOT_FIELDS: "A slot (offsets in its record of SLOT).";
    /// The stored state (value NaN: none).
    SLOT_STORED = 0;
    /// The state to write (value NaN: nothing).
    SLOT_PENDING = 2;
    /// The written state's fullAt.
    SLOT_FULL_AT = 4;
}

layout! { OUT_FIELDS: "An answer (offsets in its record of OUT_STRIDE), and the header figures inside it.";
    /// 1 granted, 0 refused, -code: an error (its details below).
    OUT_STATUS = 0;
    /// The wait in ms (NaN: none).
    OUT_RETRY_AFTER = 1;
    /// The header figures (FIGURE_*).
    OUT_FIGURES = 2;
    /// The two shares taken.
    OUT_SHARES = 9;
    /// An error's field (`src/error.rs` `Field`, 0: none).
    OUT_FIELD = 11;
    /// An error's rule (`Rule`, 0: none).
    OUT_RULE = 12;
    /// An error's three numbers.
    OUT_NUMBERS = 13;
    /// 1: the error's request reserved.
    OUT_RESERVE = 16;
    /// Figures: the limit.
    FIGURE_LIMIT = 0;
    /// Figures: what remains.
    FIGURE_REMAINING = 1;
    /// Figures: seconds until reset.
    FIGURE_RESET = 2;
    /// Figures: the window in seconds.
    FIGURE_WINDOW = 3;
    /// Figures: retryAfter in seconds (NaN: none).
    FIGURE_RETRY_AFTER = 4;
    /// Figures: how many shards were sampled.
    FIGURE_SAMPLED = 5;
    /// Figures: the effective window in seconds (draft-11's `t`).
    FIGURE_EFFECTIVE_WINDOW = 6;
}

layout! { EXTRA_DECIDE: "EXTRA for compiling a config and deciding (offsets from EXTRA).";
    /// `rb_decide`: a refused batch's wait.
    BATCH_WAIT = 0;
    /// `rb_compile` in: the kind (0 token bucket, 1 fixed window, 2 other).
    COMPILE_KIND = 0;
    /// `rb_compile` in: a (tag, value) pair per field (tags: 0 absent, 1 null, 2 number, 3 other, `COMPILE_TAG_CALENDAR`).
    COMPILE_FIELDS = 1;
    /// `rb_compile` in: the tag of a calendar period's name, its value the unit's code (`CALENDAR_PERIODS`).
    COMPILE_TAG_CALENDAR = 4;
    /// `rb_compile` out: the config's seven numbers.
    COMPILED_CONFIG = 0;
    /// `rb_compile` out: how many draws a decision takes.
    COMPILED_DRAWS = 7;
    /// `rb_compile` out: how many draws a settle takes.
    COMPILED_SETTLE_DRAWS = 8;
}

layout! { EXTRA_GRANTS: "EXTRA for a grant's charge and settle (offsets from EXTRA), a grant, and writes.";
    /// `rb_plan_charge` out: the shards of the two ledgers and the record.
    CHARGE_READS = 0;
    /// `rb_charge` in: the five states read (two shards, their ledgers, the record).
    CHARGE_STATES = 0;
    /// `rb_charge` out: the grant (GRANT_*, without slot and tag).
    CHARGE_GRANT = 16;
    /// `rb_charge` out: the writes (WRITES_*).
    CHARGE_WRITES = 32;
    /// `rb_settle` in: the config's seven numbers.
    SETTLE_CONFIG = 0;
    /// `rb_settle` in: the grant (GRANT_*).
    SETTLE_GRANT = 8;
    /// `rb_settle` in: two draws.
    SETTLE_DRAWS = 24;
    /// `rb_settle_reads` out: the five shards a settle reads.
    SETTLE_READS = 32;
    /// `rb_settle` in: the five states read.
    SETTLE_STATES = 40;
    /// `rb_settle` out: refunded, charged, unpaid, retryAfter (NaN: none).
    SETTLE_ANSWER = 64;
    /// `rb_settle` out: the writes (WRITES_*).
    SETTLE_WRITES = 72;
    /// A settle's answer: tokens refunded.
    SETTLED_REFUNDED = 0;
    /// A settle's answer: tokens charged beyond the grant.
    SETTLED_CHARGED = 1;
    /// A settle's answer: tokens charged but not available.
    SETTLED_UNPAID = 2;
    /// A settle's answer: the wait (NaN: none).
    SETTLED_RETRY_AFTER = 3;
    /// A grant: tokens charged.
    GRANT_COUNT = 0;
    /// A grant: when, in ms.
    GRANT_CHARGED_AT = 1;
    /// A grant: how many shards it used.
    GRANT_SHARD_COUNT = 2;
    /// A grant: per shard used, GRANT_PART numbers (PART_*).
    GRANT_PARTS = 3;
    /// A grant's part stride.
    GRANT_PART = 5;
    /// A part: the shard.
    PART_SHARD = 0;
    /// A part: tokens.
    PART_COUNT = 1;
    /// A part: the shard's value after the charge.
    PART_VALUE = 2;
    /// A part: its ts.
    PART_TS = 3;
    /// A part: tokens refunded.
    PART_REFUNDED = 4;
    /// A grant: its record's slot.
    GRANT_SLOT = 13;
    /// A grant: its record's tag.
    GRANT_TAG = 14;
    /// Writes: how many.
    WRITES_COUNT = 0;
    /// Writes: the first (stride WRITE: shard, value, ts, fullAt).
    WRITES_FIRST = 1;
    /// A write's stride.
    WRITE = 4;
    /// A write: the shard.
    WRITE_SHARD = 0;
    /// A write: the state (value, ts).
    WRITE_STATE = 1;
    /// A write: its fullAt.
    WRITE_FULL_AT = 3;
}

layout! { EXTRA_PURE: "EXTRA for getValue and the pure functions (offsets from EXTRA).";
    /// `rb_plan_value` in: the draws.
    VALUE_DRAWS = 0;
    /// `rb_plan_value` out, `rb_value` in: the sampled shards.
    VALUE_SHARDS = 1024;
    /// `rb_value` in: the sampled shards' states.
    VALUE_STATES = 2048;
    /// The most shards `getValue` samples.
    MAX_SAMPLED = 1024;
    /// `rb_value` out: the report (REPORT_*).
    VALUE_REPORT = 0;
    /// A report: the value.
    REPORT_VALUE = 0;
    /// A report: its ts.
    REPORT_TS = 1;
    /// A report: the shard sampled.
    REPORT_SHARD = 2;
    /// A report: a fixed window's start (NaN: none).
    REPORT_START = 3;
    /// `rb_decide_state`, `rb_figures` in: the config's seven numbers.
    PURE_CONFIG = 0;
    /// `rb_calculate`, `rb_decide_state`, `rb_figures` out.
    PURE_ANSWER = 8;
    /// `rb_calculate` out: ts.
    CALCULATED_TS = 0;
    /// `rb_calculate` out: retryAfter (NaN: none).
    CALCULATED_RETRY_AFTER = 1;
    /// `rb_calculate` out: windowStart (NaN: none).
    CALCULATED_WINDOW_START = 2;
    /// `rb_calculate` out: 0, or -code.
    CALCULATED_STATUS = 3;
    /// `rb_decide_state` out: 1 granted.
    DECIDED_OK = 0;
    /// `rb_decide_state` out: the wait (NaN: none).
    DECIDED_RETRY_AFTER = 1;
    /// `rb_decide_state` out: the next value.
    DECIDED_VALUE = 2;
    /// `rb_decide_state` out: the next ts.
    DECIDED_TS = 3;
}

// Checked as the crate compiles: no region, record or sub-layout runs into the next.
const _: () = assert!(PLAN >= ITEMS + ITEM * MAX_ITEMS && MAP >= PLAN + PLAN_STRIDE * MAX_ITEMS && SLOTS >= MAP + 2 * MAX_ITEMS);
const _: () = assert!(OUT >= SLOTS + SLOT * MAX_SLOTS && EXTRA >= OUT + OUT_STRIDE * MAX_ITEMS);
const _: () = assert!(ITEM_FIGURES < ITEM && PLAN_WINDOW_LONGEST < PLAN_STRIDE && SLOT_FULL_AT < SLOT && OUT_RESERVE < OUT_STRIDE);
const _: () = assert!(OUT_FIGURES + FIGURE_SAMPLED < OUT_SHARES && OUT_FIGURES + FIGURE_EFFECTIVE_WINDOW < OUT_SHARES && CONFIG_LEN <= ITEM_COUNT);
const _: () = assert!(CHARGE_STATES + 10 <= CHARGE_GRANT && CHARGE_GRANT + GRANT_PARTS + 2 * GRANT_PART <= CHARGE_WRITES);
const _: () = assert!(SETTLE_GRANT + GRANT_TAG < SETTLE_DRAWS && SETTLE_READS + 5 <= SETTLE_STATES && SETTLE_STATES + 10 <= SETTLE_ANSWER);
const _: () = assert!(VALUE_SHARDS + MAX_SAMPLED <= VALUE_STATES && EXTRA + VALUE_STATES + 2 * MAX_SAMPLED <= IO_LEN);

#[cfg(not(target_arch = "wasm32"))]
use super::{concurrency_layout::EXTRA_CONCURRENCY as CONCURRENCY, limits_layout::EXTRA_LIMITS as LIMITS, slab_layout::SLAB};
/// Every table, in the order the generated module lists them.
#[cfg(not(target_arch = "wasm32"))]
pub const SECTIONS: [Section; 12] = [BUFFER, STATES, ITEM_FIELDS, PLAN_FIELDS, SLOT_FIELDS, OUT_FIELDS, EXTRA_DECIDE, EXTRA_GRANTS, LIMITS, EXTRA_PURE, CONCURRENCY, SLAB];

static mut IO: [f64; IO_LEN] = [0.0; IO_LEN];

/// The buffer. Calls into the module run one at a time (JavaScript is single
/// threaded and the exports never call out), so one borrow at a time exists.
pub fn io() -> &'static mut [f64; IO_LEN] {
    // SAFETY: see above; the exports take it once per call and never re-enter.
    unsafe { &mut *core::ptr::addr_of_mut!(IO) }
}

/// The buffer's address, for the package's `Float64Array` view.
pub fn io_address() -> usize {
    core::ptr::addr_of!(IO) as usize
}

/// `None` for NaN: how the buffer says "absent".
pub fn maybe(number: f64) -> Option<f64> {
    (!number.is_nan()).then_some(number)
}

/// NaN for `None`.
pub fn or_nan(number: Option<f64>) -> f64 {
    number.unwrap_or(f64::NAN)
}

/// A compiled config at `at`: seven numbers as `rb_compile` wrote them.
pub fn config_at(io: &[f64], at: usize) -> Config {
    compiled_config([CONFIG_KIND, CONFIG_RATE, CONFIG_PERIOD, CONFIG_CAPACITY, CONFIG_MAX_RESERVED, CONFIG_SHARDS, CONFIG_START].map(|offset| io[at + offset]))
}

/// The config a compile wrote as seven numbers (kind, rate, period, capacity, maxReserved, shards,
/// start; NaN: none), wherever they come from: the buffer, or an export's arguments. A calendar
/// period crosses as minus its unit's code (`super::calendar_layout`).
pub fn compiled_config([kind, rate, period, capacity, max_reserved, shards, start]: [f64; 7]) -> Config {
    let kind = match kind {
        1.0 => Kind::FixedWindow,
        2.0 => Kind::SlidingWindow,
        _ => Kind::TokenBucket,
    };
    let (period_ms, calendar) = super::calendar_layout::period_of(period);
    Config { kind, rate, period_ms, calendar, capacity, max_reserved: maybe(max_reserved), shard_count: shards as u32, start_ms: maybe(start) }
}

/// Writes `config` as seven numbers at `at`.
pub fn put_config(io: &mut [f64], at: usize, config: &Config) {
    io[at + CONFIG_KIND] = config.kind.code();
    io[at + CONFIG_RATE] = config.rate;
    io[at + CONFIG_PERIOD] = period_number(config);
    io[at + CONFIG_CAPACITY] = config.capacity;
    io[at + CONFIG_MAX_RESERVED] = or_nan(config.max_reserved);
    io[at + CONFIG_SHARDS] = f64::from(config.shard_count);
    io[at + CONFIG_START] = or_nan(config.start_ms);
}

/// The request of the item at `at`.
pub fn request_at(io: &[f64], at: usize) -> Request {
    Request { count: io[at + ITEM_COUNT], reserve: io[at + ITEM_RESERVE] != 0.0 }
}

/// A state at `at` (value, ts), `None` when the value is NaN.
pub fn state_at(io: &[f64], at: usize) -> Option<State> {
    maybe(io[at + STATE_VALUE]).map(|value| State { value, ts: io[at + STATE_TS] })
}

/// Writes a state (or NaN, NaN for none) at `at`.
pub fn put_state(io: &mut [f64], at: usize, state: Option<State>) {
    io[at + STATE_VALUE] = state.map_or(f64::NAN, |state| state.value);
    io[at + STATE_TS] = state.map_or(f64::NAN, |state| state.ts);
}

/// Writes `error` into the answer at `out` and returns its status (`-code`).
pub fn put_error(io: &mut [f64], out: usize, error: &Error) -> f64 {
    let status = -f64::from(error.number());
    io[out + OUT_STATUS] = status;
    let (field, rule, numbers, reserve) = match *error {
        Error::InvalidConfig(problem) | Error::InvalidRequest(problem) => (problem.field as u8, problem.rule as u8, problem.numbers, false),
        Error::CountExceedsMax { count, max, shard_count, reserve } => (0, 0, [count, max, f64::from(shard_count)], reserve),
        Error::WaitUnbounded { count } => (0, 0, [count, f64::NAN, f64::NAN], false),
        Error::InvalidRandom { got } => (0, 0, [got, f64::NAN, f64::NAN], false),
        Error::GrantSettled | Error::LeaseLost => (0, 0, [f64::NAN; 3], false),
    };
    io[out + OUT_FIELD] = f64::from(field);
    io[out + OUT_RULE] = f64::from(rule);
    io[out + OUT_NUMBERS..out + OUT_NUMBERS + 3].copy_from_slice(&numbers);
    io[out + OUT_RESERVE] = f64::from(u8::from(reserve));
    status
}
