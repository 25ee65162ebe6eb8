//! What one call asks of a limit, and the checks every call's numbers go
//! through once: `count`, `now` against the limit's period, `sampleShards`,
//! and whether the count can ever be granted. Names and keys are strings,
//! the package's to check (`ts/core/call.ts`); the core never sees them.

use crate::config::{Config, MIN_CHOOSE_TWO};
use crate::error::{Error, Field, Problem, Rule};

/// What one call asks of a limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Request {
    /// Tokens to consume: finite and `>= 0`.
    pub count: f64,
    /// Whether to go into debt (and be told when to run) rather than be refused.
    pub reserve: bool,
}

/// The longest limit name or key, in UTF-8 bytes (the package checks it).
pub const MAX_KEY_BYTES: usize = 1024;

/// `now`, a finite number of ms, fine enough for the limit's period.
///
/// A period shorter than the spacing of numbers at `now` cannot be kept by
/// that clock: every wait would round to 0 and a client would spin (issue 18).
///
/// # Errors
/// [`Error::InvalidRequest`] for a `now` that is not finite (or, for a
/// calendar period, beyond ±[`MAX_INSTANT_MS`](crate::MAX_INSTANT_MS));
/// [`Error::InvalidConfig`] for a period the clock cannot resolve.
pub fn check_now(config: &Config, now_ms: f64) -> Result<(), Error> {
    if !now_ms.is_finite() {
        return Err(Error::request(Field::Now, Rule::FiniteMs, now_ms));
    }
    if config.calendar.is_some() && now_ms.abs() > crate::config::MAX_INSTANT_MS {
        return Err(Error::request(Field::Now, Rule::CalendarInstant, now_ms));
    }
    let resolution_ms = now_ms.abs().next_up() - now_ms.abs();
    if config.period_ms < resolution_ms {
        let numbers = [config.period_ms, now_ms, resolution_ms];
        return Err(Error::InvalidConfig(Problem::with_numbers(Field::Period, Rule::ClockResolution, numbers)));
    }
    Ok(())
}

/// `count`: a finite number `>= 0` (a negative one would mint tokens).
///
/// # Errors
/// [`Error::InvalidRequest`] naming `count`.
pub fn check_count(count: f64) -> Result<f64, Error> {
    match count.is_finite() && count >= 0.0 {
        true => Ok(count),
        false => Err(Error::request(Field::Count, Rule::FiniteNonNegative, count)),
    }
}

/// `sampleShards`: how many distinct shards `getValue` reads, `min(wanted, shards)`; `None` is 1.
///
/// # Errors
/// [`Error::InvalidRequest`] unless it is an integer `>= 1`.
pub fn sample_shards(wanted: Option<f64>, shard_count: u32) -> Result<u32, Error> {
    match wanted {
        None => Ok(1),
        Some(wanted) if crate::math::fract(wanted) == 0.0 && wanted >= 1.0 => Ok(wanted.min(f64::from(shard_count)) as u32),
        Some(wanted) => Err(Error::request(Field::SampleShards, Rule::IntegerAtLeastOne, wanted)),
    }
}

/// Rejects a request that is malformed or that can never succeed.
///
/// With `shard_factor = shards < 3 ? 1 : shards / 2` and
/// `max = capacity / shard_factor`: without `reserve`, `count > max` is an
/// error; with `reserve` and a `maxReserved`, `count > max + maxReserved / shard_factor` is.
///
/// ```
/// use ratebound::{validate_request, Config, ConfigInput, Error, Request};
/// let config = Config::try_from(&ConfigInput::token_bucket(1.0, 1000.0)).unwrap();
/// let error = validate_request(&config, Request { count: 2.0, reserve: false }).unwrap_err();
/// assert_eq!(error, Error::CountExceedsMax { count: 2.0, max: 1.0, shard_count: 1, reserve: false });
/// ```
///
/// # Errors
/// [`Error::InvalidRequest`] for a count that is not a finite number `>= 0`;
/// [`Error::CountExceedsMax`] as above.
pub fn validate_request(config: &Config, request: Request) -> Result<(), Error> {
    let Request { count, reserve } = request;
    check_count(count)?;
    let shard_factor = if config.shard_count < MIN_CHOOSE_TWO { 1.0 } else { f64::from(config.shard_count) / 2.0 };
    // `capacity / 1.0` is `capacity`: no division on the common call.
    let max = if config.shard_count < MIN_CHOOSE_TWO { config.capacity } else { config.capacity / shard_factor };
    let bound = match (reserve, config.max_reserved) {
        (false, _) => max,
        (true, Some(max_reserved)) => max + max_reserved / shard_factor,
        (true, None) => return Ok(()),
    };
    if count > bound {
        return Err(Error::CountExceedsMax { count, max: bound, shard_count: config.shard_count, reserve });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigInput;

    fn config(input: ConfigInput) -> Config {
        Config::try_from(&input).unwrap()
    }

    #[test]
    fn rejects_a_negative_count_instead_of_minting_tokens() {
        let error = validate_request(&config(ConfigInput::token_bucket(1.0, 1.0)), Request { count: -1.0, reserve: false });
        assert_eq!(error, Err(Error::request(Field::Count, Rule::FiniteNonNegative, -1.0)));
    }

    #[test]
    fn sharded_bound_counts_two_shards() {
        let limit = config(ConfigInput::token_bucket(40_000.0, 60_000.0).with("shards", 10.0));
        assert!(validate_request(&limit, Request { count: 8000.0, reserve: false }).is_ok());
        let error = validate_request(&limit, Request { count: 8001.0, reserve: false }).unwrap_err();
        assert_eq!(error, Error::CountExceedsMax { count: 8001.0, max: 8000.0, shard_count: 10, reserve: false });
    }

    #[test]
    fn reservation_bound_adds_max_reserved() {
        let limit = config(ConfigInput::token_bucket(10.0, 1.0).with("maxReserved", 5.0));
        assert!(validate_request(&limit, Request { count: 15.0, reserve: true }).is_ok());
        let error = validate_request(&limit, Request { count: 16.0, reserve: true }).unwrap_err();
        assert_eq!(error, Error::CountExceedsMax { count: 16.0, max: 15.0, shard_count: 1, reserve: true });
    }

    #[test]
    fn unlimited_reservation_accepts_any_count() {
        let limit = config(ConfigInput::token_bucket(10.0, 1.0));
        assert!(validate_request(&limit, Request { count: 1e9, reserve: true }).is_ok());
    }

    #[test]
    fn a_period_finer_than_the_clock_is_refused_at_the_call() {
        let limit = config(ConfigInput::token_bucket(1.0, 0.5));
        assert!(check_now(&limit, 1e15).is_ok());
        let error = check_now(&limit, 8e15).unwrap_err();
        assert_eq!(error.problem().map(|problem| problem.rule), Some(Rule::ClockResolution));
        assert_eq!(check_now(&limit, f64::NAN).unwrap_err().field(), Some(Field::Now));
    }

    #[test]
    fn sample_shards_is_an_integer_of_at_least_one_capped_by_the_shards() {
        assert_eq!(sample_shards(None, 8), Ok(1));
        assert_eq!(sample_shards(Some(20.0), 8), Ok(8));
        for bad in [0.0, 1.5, f64::NAN, -1.0] {
            assert_eq!(sample_shards(Some(bad), 8).unwrap_err().field(), Some(Field::SampleShards));
        }
    }
}
