//! ratebound: rate limits stored as two numbers per key, `{ value, ts }`.
//!
//! The core is pure: time, counts and random numbers are arguments, and
//! persistence is whatever implements [`StateStore`]. `wasm` is the only
//! module that knows about JavaScript.

mod config;
mod decision;
mod error;
mod fixed_window;
mod jitter;
mod js_number;
mod limiter;
mod shard;
mod slab;
mod state;
mod token_bucket;
mod transition;
/// The JavaScript boundary (wasm32 only): what the npm package calls.
#[cfg(target_arch = "wasm32")]
pub mod wasm;

pub use config::{Config, ConfigError, Kind, RateLimitConfig, RawConfig, RawValue, MAX_INSTANT_MS, MAX_SHARDS};
pub use decision::{decide, validate_request, Request, ShardDecision};
pub use error::Error;
pub use jitter::with_jitter;
pub use js_number::js_number;
pub use limiter::{check, decide_and_maybe_write, get_value, limit, limit_all, reset, BatchItem, RateLimitResult, ValueReport, MAX_KEY_BYTES};
pub use slab::{Slab, SlabBlock};
pub use shard::{combine, first_shard, sample_shards, second_shard, MIN_CHOOSE_TWO};
pub use state::{State, StateRef, StateStore, WriteInfo};
pub use transition::{calculate_rate_limit, full_at, initial_state, unit_random, Transition};
