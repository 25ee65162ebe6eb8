//! The two numbers stored per key, where they live, and the host's store.

use serde::Serialize;
use tsify::Tsify;

use crate::error::{Error, Place, Problem};

/// The whole state of one shard of one limit.
///
/// Token bucket: `value` tokens were available at `ts`. Fixed window: `value`
/// tokens were available in the window that starts at `ts`. `value` is
/// negative while reserved tokens are owed. Both are finite; `ts` is in ms.
#[derive(Tsify, Serialize, Debug, Clone, Copy, PartialEq)]
#[tsify(rename = "RateLimitState")]
pub struct State {
    /// Tokens available (negative: reserved debt).
    pub value: f64,
    /// Milliseconds since the epoch.
    pub ts: f64,
}

impl State {
    /// Checks what a store returned: both numbers must be finite.
    ///
    /// # Errors
    /// [`Error::CorruptState`] naming `at` and the bad number.
    pub fn checked(self, at: StateRef<'_>) -> Result<State, Error> {
        for (field, number) in [("value", self.value), ("ts", self.ts)] {
            if !number.is_finite() {
                return Err(Error::CorruptState { at: at.place(), problem: Problem::must_be(field, "a finite number", number) });
            }
        }
        Ok(self)
    }
}

/// The state after a transition, and how long to wait if it went negative.
#[derive(Tsify, Serialize, Debug, Clone, Copy, PartialEq)]
#[tsify(rename = "RateLimitTransition")]
pub struct Transition {
    /// Tokens left after consuming `count` (negative: short by that much).
    pub value: f64,
    /// The new `ts`: `now` for a token bucket, the current window's start for a fixed window.
    pub ts: f64,
    /// When `value < 0`: ms from `now` until enough tokens will have arrived.
    #[serde(rename = "retryAfter", skip_serializing_if = "Option::is_none")]
    #[tsify(optional)]
    pub retry_after_ms: Option<f64>,
    /// Fixed window only: the `ts` of the state it started from.
    #[serde(rename = "windowStart", skip_serializing_if = "Option::is_none")]
    #[tsify(optional)]
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

impl StateRef<'_> {
    /// Where this ref is, for an error message.
    pub fn place(&self) -> Place {
        Place::Stored { name: self.name.into(), key: self.key.map(Into::into), shard: self.shard }
    }
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

/// The host's persistence: read and write one shard's state.
///
/// Contract: within one call of the limiter, a read sees the writes that
/// call made before it; `write(at, None)` deletes. Atomicity across calls
/// belongs to the host (a Convex mutation, a Durable Object, a Deno KV atomic
/// commit). An `Err` from either method makes the whole call fail: the
/// limiter fails closed. The futures of a synchronous store are ready at once,
/// and the limiter then completes without yielding.
#[allow(async_fn_in_trait)]
pub trait StateStore {
    /// The store's own error; core errors convert into it.
    type Error: From<Error>;

    /// The state at `at`, or `None` when there is none yet.
    async fn read(&mut self, at: StateRef<'_>) -> Result<Option<State>, Self::Error>;

    /// Replaces the state at `at`; `None` deletes it. `info` says when the
    /// call happened and from when the written state may be dropped.
    async fn write(&mut self, at: StateRef<'_>, state: Option<State>, info: WriteInfo) -> Result<(), Self::Error>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_non_finite_stored_value_is_an_error_naming_the_ref() {
        let at = StateRef { name: "chat", key: Some("a:b"), shard: 2 };
        let error = State { value: f64::NAN, ts: 0.0 }.checked(at).unwrap_err();
        assert_eq!(
            error.to_string(),
            "Stored state for rate limit \"chat\" key \"a:b\" shard 2 is corrupt: value must be a finite number (got NaN)"
        );
    }
}
