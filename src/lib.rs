//! ratebound: rate limits stored as two numbers per key, `{ value, ts }`.
//!
//! The core is pure: time, counts and random numbers are arguments, and
//! persistence is whatever implements [`StateStore`]. The `wasm` module is
//! the only one that knows about JavaScript, and nothing here imports it.

mod batch;
mod config;
mod decision;
mod figures;
mod error;
mod fixed_window;
mod js_math;
mod limiter;
mod message;
mod random;
mod raw;
pub mod request;
mod result;
mod settle;
mod shard;
mod slab;
mod state;
mod token_bucket;
mod transition;
mod value;
/// The JavaScript boundary (wasm32 only): what the npm package calls.
#[cfg(target_arch = "wasm32")]
pub mod wasm;

pub use batch::limit_all;
pub use config::{Config, FixedWindowConfig, Kind, RateLimitConfig, TokenBucketConfig, MAX_INSTANT_MS, MAX_SHARDS, MIN_CHOOSE_TWO};
pub use decision::{decide, ShardDecision};
pub use error::{Error, Part, Place, Problem, Says};
pub use figures::{figures, whole_seconds, Figures};
pub use limiter::{check, decide_and_maybe_write, limit, BatchItem};
pub use message::{js_number, Message, NumberFormat, RustNumbers};
pub use random::{unit_random, with_jitter};
pub use raw::{RawConfig, RawValue};
pub use request::{validate_request, Request, MAX_KEY_BYTES};
pub use result::{RateLimitResult, ValueReport};
pub use settle::{limit_with_grant, refund_bound, settle, Grant, GrantShard, Settled};
pub use shard::{combine, first_shard, sample_shards, second_shard};
pub use slab::{Slab, SlabBlock};
pub use state::{State, StateRef, StateStore, Transition, WriteInfo};
pub use transition::{calculate_rate_limit, full_at, initial_state};
pub use value::{get_value, reset};
