//! The shared buffer and its layout, in `f64` indexes. `ts/core/engine.ts`
//! reads the layout from [`rb_layout`](super::exports::rb_layout) at start-up,
//! so the two sides cannot drift apart.
//!
//! - `ITEMS`: one record per decision (stride [`ITEM`]): `kind` (0 token
//!   bucket, 1 fixed window), `rate`, `period`, `capacity`, `maxReserved`
//!   (NaN: none), `shards`, `start` (NaN: none), `count`, `reserve`,
//!   `write`, `now`, four random draws, and whether to answer figures.
//! - `PLAN`: per item (stride [`PLAN_STRIDE`]): the first and second shard,
//!   how many shards are read, the fresh state of each (value, ts), status,
//!   and the shard's `rate`, `capacity` and `maxReserved` (NaN: none): what a
//!   host deciding next to its data needs besides the item's own numbers.
//! - `MAP`: per item, the slots of its two reads (the package deduplicates refs).
//! - `SLOTS`: per slot (stride [`SLOT`]): the stored value and ts (NaN value:
//!   none), the pending value and ts (NaN: nothing to write), its `fullAt`.
//! - `OUT`: per item (stride [`OUT_STRIDE`]): status (1 granted, 0 refused,
//!   -code), `retryAfter` (NaN: none), the figures (limit, remaining, reset,
//!   window, retryAfter in seconds, sampled), the two shares taken, and an
//!   error's field, rule, three numbers and `reserve`.
//! - `EXTRA`: what one operation needs beyond items (configs to compile,
//!   grants, settles, sampled shards).

use crate::batch::{Item, Slot};
use crate::limiter::Outcome;
use crate::config::{Config, Kind};
use crate::error::Error;
use crate::request::Request;
use crate::state::State;

/// The most items of one batch.
pub const MAX_ITEMS: usize = 128;
/// The most distinct states one batch reads.
pub const MAX_SLOTS: usize = 256;
/// The stride of an item.
pub const ITEM: usize = 16;
/// The stride of a plan.
pub const PLAN_STRIDE: usize = 12;
/// The stride of a slot.
pub const SLOT: usize = 5;
/// The stride of an answer.
pub const OUT_STRIDE: usize = 16;

pub const ITEMS: usize = 0;
pub const PLAN: usize = ITEMS + ITEM * MAX_ITEMS;
pub const MAP: usize = PLAN + PLAN_STRIDE * MAX_ITEMS;
pub const SLOTS: usize = MAP + 2 * MAX_ITEMS;
pub const OUT: usize = SLOTS + SLOT * MAX_SLOTS;
pub const EXTRA: usize = OUT + OUT_STRIDE * MAX_ITEMS;
/// The buffer's length: `EXTRA` holds up to 1024 sampled shards and their states.
pub const IO_LEN: usize = EXTRA + 4096;

static mut IO: [f64; IO_LEN] = [0.0; IO_LEN];

/// The buffer. Calls into the module run one at a time (JavaScript is single
/// threaded and the exports never call out), so one borrow at a time exists.
pub fn io() -> &'static mut [f64; IO_LEN] {
    // SAFETY: see above; the exports take it once per call and never re-enter.
    unsafe { &mut *core::ptr::addr_of_mut!(IO) }
}

/// One item's answer, kept until the batch knows whether it commits.
pub type Answer = Option<Result<Outcome, Error>>;

static mut ITEMS_SCRATCH: [Item; MAX_ITEMS] = [Item::EMPTY; MAX_ITEMS];
static mut SLOTS_SCRATCH: [Slot; MAX_SLOTS] = [Slot::EMPTY; MAX_SLOTS];
static mut ANSWERS_SCRATCH: [Answer; MAX_ITEMS] = [None; MAX_ITEMS];

/// Room for one batch's items, slots and answers, reused by every call
/// (nothing to clear: a call writes the prefix it uses before reading it).
pub fn scratch() -> (&'static mut [Item; MAX_ITEMS], &'static mut [Slot; MAX_SLOTS], &'static mut [Answer; MAX_ITEMS]) {
    // SAFETY: as for `io`: one call at a time, and `rb_decide` alone takes them.
    unsafe {
        (
            &mut *core::ptr::addr_of_mut!(ITEMS_SCRATCH),
            &mut *core::ptr::addr_of_mut!(SLOTS_SCRATCH),
            &mut *core::ptr::addr_of_mut!(ANSWERS_SCRATCH),
        )
    }
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
    Config {
        kind: if io[at] == 1.0 { Kind::FixedWindow } else { Kind::TokenBucket },
        rate: io[at + 1],
        period_ms: io[at + 2],
        capacity: io[at + 3],
        max_reserved: maybe(io[at + 4]),
        shard_count: io[at + 5] as u32,
        start_ms: maybe(io[at + 6]),
    }
}

/// Writes `config` as seven numbers at `at`.
pub fn put_config(io: &mut [f64], at: usize, config: &Config) {
    io[at] = f64::from(u8::from(config.kind == Kind::FixedWindow));
    io[at + 1] = config.rate;
    io[at + 2] = config.period_ms;
    io[at + 3] = config.capacity;
    io[at + 4] = or_nan(config.max_reserved);
    io[at + 5] = f64::from(config.shard_count);
    io[at + 6] = or_nan(config.start_ms);
}

/// The request of the item at `at`.
pub fn request_at(io: &[f64], at: usize) -> Request {
    Request { count: io[at + 7], reserve: io[at + 8] != 0.0 }
}

/// A state at `at` (value, ts), `None` when the value is NaN.
pub fn state_at(io: &[f64], at: usize) -> Option<State> {
    maybe(io[at]).map(|value| State { value, ts: io[at + 1] })
}

/// Writes a state (or NaN, NaN for none) at `at`.
pub fn put_state(io: &mut [f64], at: usize, state: Option<State>) {
    io[at] = state.map_or(f64::NAN, |state| state.value);
    io[at + 1] = state.map_or(f64::NAN, |state| state.ts);
}

/// Writes `error` into the answer at `out` and returns its status (`-code`).
pub fn put_error(io: &mut [f64], out: usize, error: &Error) -> f64 {
    let status = -f64::from(error.number());
    io[out] = status;
    let (field, rule, numbers, reserve) = match *error {
        Error::InvalidConfig(problem) | Error::InvalidRequest(problem) => (problem.field as u8, problem.rule as u8, problem.numbers, false),
        Error::CountExceedsMax { count, max, shard_count, reserve } => (0, 0, [count, max, f64::from(shard_count)], reserve),
        Error::WaitUnbounded { count } => (0, 0, [count, f64::NAN, f64::NAN], false),
        Error::InvalidRandom { got } => (0, 0, [got, f64::NAN, f64::NAN], false),
        Error::GrantSettled => (0, 0, [f64::NAN; 3], false),
    };
    io[out + 10] = f64::from(field);
    io[out + 11] = f64::from(rule);
    io[out + 12..out + 15].copy_from_slice(&numbers);
    io[out + 15] = f64::from(u8::from(reserve));
    status
}
