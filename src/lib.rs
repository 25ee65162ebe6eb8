//! ratebound: rate limits stored as two numbers per key, `{ value, ts }`.
//!
//! The core is pure and does no I/O. Every call has two halves: a plan
//! (validate the call, draw its random numbers, name every state it reads)
//! and a decision on the states read, which returns the answer and the
//! writes as data. Hosts read and write in batches around it; the reference
//! drivers here do so over a [`StateStore`]. Time and randomness are
//! arguments. The `wasm` module is the only one that knows about
//! WebAssembly, and nothing here imports it.
//!
//! On WebAssembly the crate has no standard library: no allocator and no
//! formatter can reach the `.wasm`. Errors are data; the package words them.

// (A wasm32 binary that links std, the test tier `tests/wasm.rs`, builds it with the `std` feature.)
#![cfg_attr(all(target_arch = "wasm32", not(feature = "std")), no_std)]

mod batch;
mod calendar;
mod concurrency;
mod config;
mod decision;
mod error;
mod fast;
mod figures;
mod fixed_window;
mod js_math;
mod limiter;
mod math;
mod plan;
mod random;
mod records;
mod request;
mod result;
mod settle;
mod shard;
mod sliding_window;
mod state;
mod stored_limit;
mod token_bucket;
mod transition;
mod value;
/// The WebAssembly boundary: numbers in, numbers out (compiled natively too, for its tests).
pub mod wasm;

pub use batch::{decide_batch, Item, Mode, Slot};
#[cfg(not(target_arch = "wasm32"))]
pub use batch::{limit_all, BatchItem};
pub use calendar::{civil_from_days, days_from_civil, days_in_month, is_leap_year, window_at, CalendarUnit, Window, DAY_MS};
pub use concurrency::{
    check_lease_id, check_slots, extend_slots, held_slots, release_slots, slot_list, take_slots, ConcurrencyConfig, ConcurrencyInput, SlotWrites, Slots, Taken, MAX_CONCURRENCY,
};
pub use config::{Config, ConfigInput, Given, GivenKind, Kind, MAX_INSTANT_MS, MAX_SHARDS, MIN_CHOOSE_TWO};
pub use decision::{decide, ShardDecision};
pub use error::{Error, Field, Problem, Rule};
pub use figures::{figures, whole_seconds, Figures};
pub use limiter::{decide_call, decide_planned, prepare, write_info, Outcome};
pub use plan::{draws_needed, plan, unit_random, Plan};
pub use random::with_jitter;
pub use records::{grant_record_shard, ledger_shard, GrantRecord, GRANT_BASE, GRANT_SLOTS, LEDGER_BASE, MAX_GRANT_TAG};
pub use request::{check_count, check_now, sample_shards, validate_request, Request, MAX_KEY_BYTES};
pub use result::{caller_wait, RateLimitResult};
pub use settle::{
    charge_planned, charge_reads, limit_with_grant, plan_charge, refund_bound, settle, settle_draws_needed, settle_planned, settle_reads, Grant,
    GrantShard, Settled, Writes,
};
pub use shard::{combine, first_shard, second_shard, Combined};
pub use stored_limit::{check_shape, decode_limit, encode_limit, resolve_limit, LimitSource, KEY_LIMIT_BASE, LIMIT_RECORDS, NAME_LIMIT_BASE, NO_MAX_RESERVED};
pub use state::{State, StateRef, StateStore, Transition, WriteInfo};
pub use transition::{advance, calculate_rate_limit, filled_at, full_at, initial_state};
pub use value::{plan_value, value_draws_needed, value_of, ValueReport};
