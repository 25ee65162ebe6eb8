//! Sharding by the power of two choices: which shards to read, and how two
//! shards that each fall short can serve a request together.

use crate::config::Config;
use crate::decision::{decide_as_reference, ShardDecision};
use crate::request::Request;
use crate::state::State;

/// The first shard to read: `floor(random × shard_count)`.
///
/// ```
/// assert_eq!(ratebound::first_shard(10, 0.99), 9);
/// ```
pub fn first_shard(shard_count: u32, random: f64) -> u32 {
    (crate::math::floor(random * f64::from(shard_count)) as u32).min(shard_count - 1)
}

/// A second shard, uniformly among the others: `(first + 1 + floor(random × (n - 1))) % n`.
///
/// ```
/// assert_eq!(ratebound::second_shard(9, 10, 0.0), 0);
/// ```
pub fn second_shard(first: u32, shard_count: u32, random: f64) -> u32 {
    let offset = (crate::math::floor(random * f64::from(shard_count - 1)) as u32).min(shard_count - 2);
    (first + 1 + offset) % shard_count
}

/// The outcome of serving one request from two shards together.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Combined {
    /// Whether both shards granted their share.
    pub ok: bool,
    /// The larger wait of the two, when either went negative.
    pub retry_after_ms: Option<f64>,
    /// The two shards' next states, to write when `ok`.
    pub next: [State; 2],
    /// The tokens each shard gives; they add up to the count.
    pub shares: [f64; 2],
}

/// Splits `request.count` across two shards that each fell short alone, so
/// that both end at the same value, and decides each share.
///
/// `states` are the shards' states before this request and `alone` their
/// decisions for the whole count. The shares add up to the count, so the
/// total consumed is exactly what was asked.
pub fn combine(states: [State; 2], alone: [ShardDecision; 2], shard_config: &Config, now_ms: f64, request: Request) -> Combined {
    let count = request.count;
    // Each value already had `count` taken off; add it back once for the balance.
    let balance = alone[0].next.value + alone[1].next.value + count;
    let share = |decision: &ShardDecision| decision.next.value + count - balance / 2.0;
    let shares = [share(&alone[0]), share(&alone[1])];
    let shared = [
        decide_as_reference(states[0], shard_config, now_ms, Request { count: shares[0], ..request }),
        decide_as_reference(states[1], shard_config, now_ms, Request { count: shares[1], ..request }),
    ];
    let retry_after_ms = match (shared[0].retry_after_ms, shared[1].retry_after_ms) {
        (None, None) => None,
        (first, second) => Some(first.unwrap_or(0.0).max(second.unwrap_or(0.0))),
    };
    Combined { ok: shared[0].ok && shared[1].ok, retry_after_ms, next: [shared[0].next, shared[1].next], shares }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigInput;
    use crate::decision::decide;

    #[test]
    fn the_second_shard_is_never_the_first() {
        for first in 0..7 {
            for step in 0..100 {
                let second = second_shard(first, 7, f64::from(step) / 100.0);
                assert_ne!(second, first);
                assert!(second < 7);
            }
        }
    }

    #[test]
    fn two_short_shards_together_serve_the_request_and_end_level() {
        let shard = Config::try_from(&ConfigInput::token_bucket(30.0, 1000.0).with("shards", 3.0)).unwrap().per_shard();
        let states = [State { value: 6.0, ts: 0.0 }, State { value: 4.0, ts: 0.0 }];
        let request = Request { count: 8.0, reserve: false };
        let alone = [decide(states[0], &shard, 0.0, request), decide(states[1], &shard, 0.0, request)];
        assert!(!alone[0].ok && !alone[1].ok);
        let combined = combine(states, alone, &shard, 0.0, request);
        assert!(combined.ok);
        assert_eq!((combined.next[0].value, combined.next[1].value), (1.0, 1.0));
    }
}
