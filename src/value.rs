//! `getValue`: a limit's value for dashboards and previews, from the shards
//! its plan samples.

use crate::config::{Config, Kind};
use crate::error::Error;
use crate::plan::unit_random;
use crate::request::{check_now, sample_shards};
use crate::shard::first_shard;
use crate::state::State;
use crate::transition::{advance, initial_state};

/// `getValue`'s report: `calculateRateLimit({ value, ts }, config, now)` projects the whole limit forward.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ValueReport {
    /// Tokens available in the whole limit at `ts` (negative: reserved debt).
    pub value: f64,
    /// When `value` was true, in ms since the epoch.
    pub ts: f64,
    /// The best sampled shard.
    pub shard: u32,
    /// For a fixed window, the `start` its windows are aligned to (the
    /// config's, or the reported state's `ts`).
    pub start_ms: Option<f64>,
}

/// The shards `getValue` reads: `min(sampleShards ?? 1, shards)` distinct
/// ones, drawn without replacement, one random number each (none for an
/// unsharded limit). Writes them to the front of `into` (as numbers) and returns how many.
///
/// # Errors
/// `sampleShards` that is not an integer `>= 1`, a bad `now`, or a draw outside `[0, 1)`.
pub fn plan_value(config: &Config, wanted: Option<f64>, now_ms: f64, draws: &[f64], into: &mut [f64]) -> Result<usize, Error> {
    check_now(config, now_ms)?;
    let count = sample_shards(wanted, config.shard_count)? as usize;
    // A sliding window's two windows, whatever is asked: both are the limit.
    if config.kind == Kind::SlidingWindow && into.len() >= 2 {
        into[..2].copy_from_slice(&[0.0, 1.0]);
        return Ok(2);
    }
    if config.shard_count == 1 {
        into[0] = 0.0;
        return Ok(1);
    }
    let mut remaining = [0u16; crate::config::MAX_SHARDS as usize];
    let mut left = config.shard_count as usize;
    for (shard, slot) in remaining.iter_mut().enumerate().take(left) {
        *slot = shard as u16;
    }
    for chosen in 0..count.min(into.len()) {
        let drawn = unit_random(*draws.get(chosen).ok_or(Error::InvalidRandom { got: f64::NAN })?)?;
        let index = first_shard(left as u32, drawn) as usize;
        into[chosen] = f64::from(remaining[index]);
        remaining.copy_within(index + 1..left, index);
        left -= 1;
    }
    Ok(count.min(into.len()))
}

/// How many random numbers `getValue` draws for `wanted` shards of `config`.
///
/// # Errors
/// `sampleShards` that is not an integer `>= 1`.
pub fn value_draws_needed(config: &Config, wanted: Option<f64>) -> Result<usize, Error> {
    let count = sample_shards(wanted, config.shard_count)?;
    Ok(if config.shard_count == 1 { 0 } else { count as usize })
}

/// The limit's current value from the sampled shards' states (`None`: no state).
///
/// Unsharded: the stored state, or a full one when there is none (for a
/// fixed window without `start`, one whose window starts at `now`: the
/// latest its first write can pick, so a projection from this report never
/// promises a refill before the limiter gives it).
/// Sharded: the sampled shards (a missing one is full) projected to the
/// latest sampled `ts`; `value` is their mean times the shard count, `shard`
/// the best one sampled.
pub fn value_of(config: &Config, now_ms: f64, count: usize, sampled: impl Fn(usize) -> (u32, Option<State>)) -> ValueReport {
    let shard_config = config.per_shard();
    let state_of = |stored: Option<State>| match stored {
        Some(state) => state,
        None => initial_state(&shard_config, now_ms, 0.0),
    };
    let start_of = |ts: f64| match config.kind {
        Kind::FixedWindow => Some(config.start_ms.unwrap_or(ts)),
        Kind::TokenBucket | Kind::SlidingWindow => None,
    };
    if config.kind == Kind::SlidingWindow {
        let held = |shard: u32| (0..count).map(&sampled).find(|(sampled, _)| *sampled == shard).and_then(|(_, state)| state);
        return crate::sliding_window::value(config, now_ms, [held(0), held(1)]);
    }
    if count == 1 && config.shard_count == 1 {
        let (shard, stored) = sampled(0);
        let state = state_of(stored);
        return ValueReport { value: state.value, ts: state.ts, shard, start_ms: start_of(state.ts) };
    }
    let latest_ts = (0..count).map(|index| state_of(sampled(index).1).ts).fold(f64::NEG_INFINITY, f64::max);
    let mut best: Option<(u32, State)> = None;
    let mut sum = 0.0;
    for index in 0..count {
        let (shard, stored) = sampled(index);
        let at_latest = advance(state_of(stored), &shard_config, latest_ts, 0.0);
        let projected = State { value: at_latest.value, ts: at_latest.ts };
        sum += projected.value;
        if best.is_none_or(|(_, best)| projected.value > best.value) {
            best = Some((shard, projected));
        }
    }
    // `count` is never 0; were it, the report would be the empty shard 0 rather than a panic.
    let (best_shard, best) = best.unwrap_or((0, State { value: 0.0, ts: now_ms }));
    let mean = sum / count.max(1) as f64;
    ValueReport { value: mean * f64::from(config.shard_count), ts: best.ts, shard: best_shard, start_ms: start_of(best.ts) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigInput;

    /// The best sampled shard is the fullest; of equals, the first sampled
    /// (a host's port reports the same one).
    #[test]
    fn the_best_shard_reported_is_the_fullest_and_of_equals_the_first_sampled() {
        let config = Config::try_from(&ConfigInput::token_bucket(40.0, 1_000.0).with("shards", 4.0)).unwrap();
        let at = |value: f64| Some(State { value, ts: 0.0 });
        let report = |sampled: &[(u32, Option<State>)]| value_of(&config, 0.0, sampled.len(), |index| sampled[index]);
        assert_eq!(report(&[(2, at(5.0)), (0, at(5.0))]).shard, 2);
        assert_eq!(report(&[(2, at(5.0)), (0, at(6.0)), (3, at(6.0))]).shard, 0);
        assert_eq!(report(&[(2, at(5.0)), (0, at(6.0)), (3, at(6.0))]).value, 4.0 * 17.0 / 3.0);
    }
}
