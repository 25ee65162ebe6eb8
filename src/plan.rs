//! The first half of every call: before anything is read, the random numbers
//! are drawn, the shards are chosen, and the state each shard starts from if
//! it has none is fixed. A host then reads every ref the plan names in one
//! batch (or runs the decision next to its data with these numbers).

use crate::config::{Config, Kind};
use crate::error::Error;
use crate::shard::{first_shard, second_shard};
use crate::state::State;
use crate::transition::initial_state;

/// Checks a number drawn from a random source: it must lie in `[0, 1)`.
///
/// # Errors
/// [`Error::InvalidRandom`] for anything else.
pub fn unit_random(drawn: f64) -> Result<f64, Error> {
    match (0.0..1.0).contains(&drawn) {
        true => Ok(drawn),
        false => Err(Error::InvalidRandom { got: drawn }),
    }
}

/// How many random numbers a decision on `config` draws: the two shard
/// choices of a sharded limit, and the phase of each shard's windows for a
/// fixed window without `start`.
///
/// ```
/// use ratebound::{draws_needed, Config, ConfigInput};
/// let bucket = Config::try_from(&ConfigInput::token_bucket(10.0, 1000.0)).unwrap();
/// assert_eq!(draws_needed(&bucket), 0);
/// let windows = Config::try_from(&ConfigInput::fixed_window(10.0, 1000.0).with("shards", 4.0)).unwrap();
/// assert_eq!(draws_needed(&windows), 4);
/// ```
pub fn draws_needed(config: &Config) -> usize {
    let choices = if config.shard_count > 1 { 2 } else { 0 };
    let random_phase = config.kind == Kind::FixedWindow && config.start_ms.is_none();
    choices + if random_phase { config.shard_count.min(2) as usize } else { 0 }
}

/// Which shards a decision reads (one, or two for a sharded limit), and the
/// state each starts from when it has none yet.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plan {
    /// The shards, first and second (the second only when `reads == 2`).
    pub shards: [u32; 2],
    /// How many shards are read: 1, or 2 for a sharded limit.
    pub reads: usize,
    /// The state of each shard when it has none stored.
    pub fresh: [State; 2],
}

/// Plans a decision on `config` at `now_ms` with the numbers drawn for it
/// (`draws`, [`draws_needed`] of them; more are ignored).
///
/// A sharded limit reads two shards, chosen at random and distinct: the
/// power of two choices decides on the first alone when that is enough, and
/// the second is then simply not used.
///
/// # Errors
/// [`Error::InvalidRandom`] for a draw outside `[0, 1)`.
#[inline]
pub fn plan(config: &Config, now_ms: f64, draws: &[f64]) -> Result<Plan, Error> {
    // The common call: nothing drawn, so one shard (a sharded limit draws its
    // two choices) of a bucket or of windows from a known start: no draw to
    // check and no phase to place a window by.
    if draws_needed(config) == 0 {
        let fresh = initial_state(config, now_ms, 0.0);
        // A sliding window reads its two windows' states, at shards 0 and 1.
        let (shards, reads) = if config.kind == Kind::SlidingWindow { ([0, 1], 2) } else { ([0, 0], 1) };
        return Ok(Plan { shards, reads, fresh: [fresh, fresh] });
    }
    plan_in_full(config, now_ms, draws)
}

/// [`plan`] for every config (the common one too).
pub(crate) fn plan_in_full(config: &Config, now_ms: f64, draws: &[f64]) -> Result<Plan, Error> {
    let needed = draws_needed(config);
    if needed == 0 && config.kind == Kind::SlidingWindow {
        return plan(config, now_ms, draws);
    }
    let mut units = [0.0; 4];
    for (unit, drawn) in units.iter_mut().zip(draws.iter().take(needed)) {
        *unit = unit_random(*drawn)?;
    }
    if draws.len() < needed {
        return Err(Error::InvalidRandom { got: f64::NAN });
    }
    let shard_config = config.per_shard();
    let (shards, reads, phases) = match config.shard_count {
        1 => ([0, 0], 1, [units[0], 0.0]),
        count => {
            let first = first_shard(count, units[0]);
            ([first, second_shard(first, count, units[1])], 2, [units[2], units[3]])
        }
    };
    let fresh = [initial_state(&shard_config, now_ms, phases[0]), initial_state(&shard_config, now_ms, phases[1])];
    Ok(Plan { shards, reads, fresh })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigInput;

    fn config(input: ConfigInput) -> Config {
        Config::try_from(&input).unwrap()
    }

    #[test]
    fn an_unsharded_bucket_draws_nothing_and_reads_shard_zero() {
        let plan = plan(&config(ConfigInput::token_bucket(10.0, 1000.0)), 5.0, &[]).unwrap();
        assert_eq!((plan.shards[0], plan.reads, plan.fresh[0]), (0, 1, State { value: 10.0, ts: 5.0 }));
    }

    #[test]
    fn a_sharded_limit_reads_two_distinct_shards() {
        let limit = config(ConfigInput::token_bucket(30.0, 1000.0).with("shards", 3.0));
        for first in 0..10 {
            for second in 0..10 {
                let planned = plan(&limit, 0.0, &[f64::from(first) / 10.0, f64::from(second) / 10.0]).unwrap();
                assert_eq!(planned.reads, 2);
                assert_ne!(planned.shards[0], planned.shards[1]);
                assert_eq!(planned.fresh[0].value, 10.0);
            }
        }
    }

    #[test]
    fn a_fixed_window_without_start_places_each_fresh_shard_by_its_own_phase() {
        let limit = config(ConfigInput::fixed_window(10.0, 1000.0).with("shards", 2.0));
        let planned = plan(&limit, 10_000.0, &[0.0, 0.0, 0.25, 0.5]).unwrap();
        assert_eq!((planned.fresh[0].ts, planned.fresh[1].ts), (9_750.0, 9_500.0));
    }

    #[test]
    fn a_draw_outside_zero_to_one_is_an_error_and_too_few_draws_too() {
        let limit = config(ConfigInput::fixed_window(10.0, 1000.0));
        assert_eq!(plan(&limit, 0.0, &[1.0]), Err(Error::InvalidRandom { got: 1.0 }));
        assert!(plan(&limit, 0.0, &[]).is_err());
    }
}
