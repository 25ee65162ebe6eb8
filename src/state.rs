//! The two numbers stored per key, where they live, and the host's store.

use crate::error::Error;

/// The whole state of one shard of one limit.
///
/// Token bucket: `value` tokens were available at `ts`. Fixed window: `value`
/// tokens were available in the window that starts at `ts`. `value` is
/// negative while reserved tokens are owed. Both are finite; `ts` is in ms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct State {
    /// Tokens available (negative: reserved debt).
    pub value: f64,
    /// Milliseconds since the epoch.
    pub ts: f64,
}

/// The state after a transition, and how long to wait if it went negative.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Transition {
    /// Tokens left after consuming `count` (negative: short by that much).
    pub value: f64,
    /// The new `ts`: `now` for a token bucket, the current window's start for a fixed window.
    pub ts: f64,
    /// When `value < 0`: ms from `now` until enough tokens will have arrived.
    pub retry_after_ms: Option<f64>,
    /// Fixed window only: the `ts` of the state it started from.
    pub window_start_ms: Option<f64>,
}

/// Where one shard's state lives: SPEC's `{ name, key?, shard }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StateRef<'a> {
    /// The limit's name.
    pub name: &'a str,
    /// The key (a user, a team…); `None` is the limit's single shared state.
    pub key: Option<&'a str>,
    /// The shard, `0..shard_count`.
    pub shard: u32,
}

/// What a write knows besides the state: the decision's clock, and from
/// when the state is full again, so that deleting it changes no decision.
///
/// `full_at_ms` is `+∞` when no such instant is certain (a fixed window
/// with a random start: a fresh state would draw other windows), and `-∞`
/// for a delete. A store may use it for a TTL or to make room.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WriteInfo {
    /// The `now` of the call that writes, in ms.
    pub now_ms: f64,
    /// From this instant (ms) on, a missing state decides exactly as this one.
    pub full_at_ms: f64,
}

impl WriteInfo {
    /// The info of a delete at `now_ms`.
    pub fn delete(now_ms: f64) -> WriteInfo {
        WriteInfo { now_ms, full_at_ms: f64::NEG_INFINITY }
    }
}

/// The host's persistence: read and write one shard's state (or one of the
/// library's records, at a shard from [`MAX_SHARDS`](crate::MAX_SHARDS) on).
///
/// Contract: within one call of the limiter, a read sees the writes that
/// call made before it; `write(at, None)` deletes. Atomicity across calls
/// belongs to the host (a Convex mutation, a Durable Object, a Deno KV atomic
/// commit). An `Err` from either method makes the whole call fail: the
/// limiter fails closed. A stored state must be two finite numbers.
pub trait StateStore {
    /// The store's own error; core errors convert into it.
    type Error: From<Error>;

    /// The state at `at`, or `None` when there is none yet.
    fn read(&mut self, at: StateRef<'_>) -> Result<Option<State>, Self::Error>;

    /// Replaces the state at `at`; `None` deletes it. `info` says when the
    /// call happened and from when the written state may be dropped.
    fn write(&mut self, at: StateRef<'_>, state: Option<State>, info: WriteInfo) -> Result<(), Self::Error>;
}
