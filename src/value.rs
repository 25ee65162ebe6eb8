//! `getValue` and `reset`: a limit's value for dashboards and previews, and
//! deleting a key's state.

use crate::config::{Config, Kind};
use crate::error::Error;
use crate::limiter::{draw, read};
use crate::request::{check_call, sample_shards};
use crate::result::ValueReport;
use crate::raw::RawValue;
use crate::shard::sample_shards as draw_shards;
use crate::state::{State, StateRef, StateStore, WriteInfo};
use crate::transition::{advance, initial_state};

/// The limit's current value, for dashboards and client previews.
///
/// Unsharded: the stored state, or a full one when there is none (for a
/// fixed window without `start`, one whose window starts at `now`: the
/// latest its first write can pick).
/// Sharded: `min(sample_shards, shards)` distinct shards (a missing one is
/// full) projected to the latest sampled `ts`; `value` is their mean times
/// the shard count, `shard` the best one sampled.
///
/// # Errors
/// `sampleShards` that is not an integer `>= 1`, a bad `now`, a corrupt
/// stored state, or the store's error.
pub async fn get_value<S: StateStore>(
    store: &mut S,
    name: &str,
    key: Option<&str>,
    config: &Config,
    sample_shards_wanted: Option<f64>,
    now_ms: f64,
    random: &mut impl FnMut() -> Result<f64, Error>,
) -> Result<ValueReport, S::Error> {
    check_call(name, key, config, now_ms)?;
    let wanted = sample_shards(name, sample_shards_wanted.map_or(RawValue::Undefined, RawValue::Number), config.shard_count)?;
    let shard_config = config.per_shard();
    let shards = if config.shard_count == 1 { vec![0] } else { draw_shards(config.shard_count, wanted, || draw(random))? };
    let mut sampled = Vec::with_capacity(shards.len());
    for shard in shards {
        let state = match read(store, StateRef { name, key, shard }).await? {
            Some(state) => state,
            // A fixed window with a random start picks it on its first
            // write. Until then report the latest start it can pick, `now`:
            // its real windows end no later than these, so a projection from
            // this report never promises a refill before the limiter gives it.
            None if config.kind == Kind::FixedWindow && config.start_ms.is_none() => {
                State { value: shard_config.capacity, ts: now_ms }
            }
            None => initial_state(&shard_config, now_ms, || draw(random))?,
        };
        sampled.push((shard, state));
    }
    if let [(shard, state)] = sampled[..] {
        if config.shard_count == 1 {
            return Ok(ValueReport { value: state.value, ts: state.ts, shard, config: config.describe(Some(state.ts)) });
        }
    }
    let latest_ts = sampled.iter().map(|(_, state)| state.ts).fold(f64::NEG_INFINITY, f64::max);
    let projected: Vec<(u32, State)> = sampled
        .iter()
        .map(|&(shard, state)| {
            let at_latest = advance(state, &shard_config, latest_ts, 0.0);
            (shard, State { value: at_latest.value, ts: at_latest.ts })
        })
        .collect();
    // `wanted >= 1` and `shard_count >= 1`, so `projected` is never empty;
    // were it, the report would be the empty shard 0 rather than a panic.
    let (best_shard, best) = projected
        .iter()
        .copied()
        .reduce(|best, candidate| if candidate.1.value > best.1.value { candidate } else { best })
        .unwrap_or((0, State { value: 0.0, ts: now_ms }));
    let mean = projected.iter().map(|(_, state)| state.value).sum::<f64>() / projected.len() as f64;
    let value = mean * f64::from(config.shard_count);
    Ok(ValueReport { value, ts: best.ts, shard: best_shard, config: config.describe(Some(best.ts)) })
}

/// Deletes the state of every shard of `name` and `key`.
///
/// # Errors
/// The store's error; shards deleted before it stay deleted (a reset that is
/// repeated completes it).
pub async fn reset<S: StateStore>(store: &mut S, name: &str, key: Option<&str>, config: &Config, now_ms: f64) -> Result<(), S::Error> {
    check_call(name, key, config, now_ms)?;
    for shard in 0..config.shard_count {
        store.write(StateRef { name, key, shard }, None, WriteInfo::delete(now_ms)).await?;
    }
    Ok(())
}
