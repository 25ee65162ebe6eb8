//! A call's arguments, each checked in this one place and with one message:
//! the limit's name and key, `count`, `reserve`, `now`, `sampleShards`, and
//! whether the count can ever be granted. The boundary hands values over as
//! the caller gave them ([`RawValue`]); the core's own entry points check the
//! ranges again only where Rust callers could pass anything.

use crate::config::{Config, MIN_CHOOSE_TWO};
use crate::error::{Error, Part, Problem};
use crate::raw::RawValue;

/// What one call asks of a limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Request {
    /// Tokens to consume: finite and `>= 0`.
    pub count: f64,
    /// Whether to go into debt (and be told when to run) rather than be refused.
    pub reserve: bool,
}

/// The longest limit name or key, in UTF-8 bytes. Hosts cap their keys
/// (Deno KV at 2048 bytes for the whole key), so the limiter refuses longer
/// ones up front with a clear error rather than failing inside a host.
pub const MAX_KEY_BYTES: usize = 1024;

const COUNT_RULE: &str = "a finite number >= 0";
const NOW_RULE: &str = "a finite number of ms";

/// A limit's name: a well-formed string of at most [`MAX_KEY_BYTES`].
///
/// # Errors
/// [`Error::InvalidName`] for anything but a string, [`Error::NameTooLong`] past the cap.
pub fn name(raw: RawValue) -> Result<String, Error> {
    match raw {
        RawValue::String(name) if name.len() <= MAX_KEY_BYTES => Ok(name),
        RawValue::String(name) => Err(Error::NameTooLong { bytes: name.len() }),
        got => Err(Error::InvalidName { got }),
    }
}

/// A key: absent, or a well-formed string of at most [`MAX_KEY_BYTES`].
///
/// # Errors
/// [`Error::InvalidRequest`] naming `key`.
pub fn key(limit: &str, raw: RawValue) -> Result<Option<String>, Error> {
    match raw {
        RawValue::Undefined => Ok(None),
        RawValue::String(key) => {
            check_key_length(limit, &key)?;
            Ok(Some(key))
        }
        got => Err(Error::request(limit, Problem::must_be("key", "a well-formed string or undefined", got))),
    }
}

fn check_key_length(limit: &str, key: &str) -> Result<(), Error> {
    if key.len() <= MAX_KEY_BYTES {
        return Ok(());
    }
    let parts = vec![
        Part::Text("key must be at most 1024 bytes of UTF-8 (got "),
        Part::Number(key.len() as f64),
        Part::Text(" bytes)"),
    ];
    Err(Error::request(limit, Problem::parts("key", parts)))
}

/// `count`: default 1, else a finite number `>= 0` (a negative one would mint tokens).
///
/// # Errors
/// [`Error::InvalidRequest`] naming `count`.
pub fn count(limit: &str, raw: RawValue) -> Result<f64, Error> {
    match raw {
        RawValue::Undefined => Ok(1.0),
        RawValue::Number(count) if count.is_finite() && count >= 0.0 => Ok(count),
        got => Err(Error::request(limit, Problem::must_be("count", COUNT_RULE, got))),
    }
}

/// A boolean option such as `reserve`: default `false`.
///
/// # Errors
/// [`Error::InvalidRequest`] naming the field.
pub fn flag(limit: &str, field: &'static str, raw: RawValue) -> Result<bool, Error> {
    match raw {
        RawValue::Undefined => Ok(false),
        RawValue::Bool(flag) => Ok(flag),
        got => Err(Error::request(limit, Problem::must_be(field, "a boolean", got))),
    }
}

/// `now`: a finite number of ms.
///
/// # Errors
/// [`Error::InvalidRequest`] naming `now`.
pub fn now(limit: &str, raw: RawValue) -> Result<f64, Error> {
    match raw {
        RawValue::Number(now) if now.is_finite() => Ok(now),
        got => Err(Error::request(limit, Problem::must_be("now", NOW_RULE, got))),
    }
}

/// `sampleShards`: how many distinct shards `getValue` reads, `min(wanted, shards)`; default 1.
///
/// # Errors
/// [`Error::InvalidRequest`] unless it is an integer `>= 1`.
pub fn sample_shards(limit: &str, raw: RawValue, shard_count: u32) -> Result<u32, Error> {
    match raw {
        RawValue::Undefined => Ok(1),
        RawValue::Number(wanted) if wanted.fract() == 0.0 && wanted >= 1.0 => Ok(wanted.min(f64::from(shard_count)) as u32),
        got => Err(Error::request(limit, Problem::must_be("sampleShards", "an integer >= 1", got))),
    }
}

/// What every call of the core shares, for Rust callers: a name and key
/// within [`MAX_KEY_BYTES`], and a finite `now` that can tell the limit's
/// periods apart.
///
/// A period shorter than the spacing of numbers at `now` cannot be kept by
/// that clock: every wait would round to 0 and a client would spin (issue 18).
///
/// # Errors
/// As [`name`], [`key`] and [`now`]; [`Error::InvalidConfig`] for a period the clock cannot resolve.
pub fn check_call(name: &str, key: Option<&str>, config: &Config, now_ms: f64) -> Result<(), Error> {
    if name.len() > MAX_KEY_BYTES {
        return Err(Error::NameTooLong { bytes: name.len() });
    }
    if let Some(key) = key {
        check_key_length(name, key)?;
    }
    if !now_ms.is_finite() {
        return Err(Error::request(name, Problem::must_be("now", NOW_RULE, now_ms)));
    }
    let resolution_ms = now_ms.abs().next_up() - now_ms.abs();
    if config.period_ms < resolution_ms {
        let parts = vec![
            Part::Text("period must be at least the clock's resolution at now (got period "),
            Part::Number(config.period_ms),
            Part::Text(" ms, now "),
            Part::Number(now_ms),
            Part::Text(", whose resolution is "),
            Part::Number(resolution_ms),
            Part::Text(" ms)"),
        ];
        return Err(Problem::parts("period", parts).for_limit(name));
    }
    Ok(())
}

/// Rejects a request that is malformed or that can never succeed.
///
/// With `shard_factor = shards < 3 ? 1 : shards / 2` and
/// `max = capacity / shard_factor`: without `reserve`, `count > max` is an
/// error; with `reserve` and a `maxReserved`, `count > max + maxReserved / shard_factor` is.
///
/// ```
/// use ratebound::{validate_request, Config, RawConfig, Request};
/// let config = Config::try_from(&RawConfig::token_bucket(1.0, 1000.0)).unwrap();
/// let error = validate_request("simple", &config, Request { count: 2.0, reserve: false }).unwrap_err();
/// assert_eq!(error.to_string(), "Rate limit simple count 2 exceeds 1.");
/// ```
///
/// # Errors
/// [`Error::InvalidRequest`] for a count that is not a finite number `>= 0`;
/// [`Error::CountExceedsMax`] as above.
pub fn validate_request(limit: &str, config: &Config, request: Request) -> Result<(), Error> {
    let Request { count, reserve } = request;
    if !(count.is_finite() && count >= 0.0) {
        return Err(Error::request(limit, Problem::must_be("count", COUNT_RULE, count)));
    }
    let shard_factor = if config.shard_count < MIN_CHOOSE_TWO { 1.0 } else { f64::from(config.shard_count) / 2.0 };
    let max = config.capacity / shard_factor;
    let bound = match (reserve, config.max_reserved) {
        (false, _) => max,
        (true, Some(max_reserved)) => max + max_reserved / shard_factor,
        (true, None) => return Ok(()),
    };
    if count > bound {
        return Err(Error::CountExceedsMax { limit: limit.into(), count, max: bound, shard_count: config.shard_count, reserve });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raw::RawConfig;

    fn config(raw: RawConfig) -> Config {
        Config::try_from(&raw).unwrap()
    }

    #[test]
    fn rejects_a_negative_count_instead_of_minting_tokens() {
        let error = validate_request("x", &config(RawConfig::token_bucket(1.0, 1.0)), Request { count: -1.0, reserve: false });
        assert_eq!(error.unwrap_err().to_string(), "Rate limit \"x\": count must be a finite number >= 0 (got -1)");
    }

    #[test]
    fn sharded_bound_counts_two_shards() {
        let limit = config(RawConfig::token_bucket(40_000.0, 60_000.0).with("shards", 10.0));
        assert!(validate_request("llm", &limit, Request { count: 8000.0, reserve: false }).is_ok());
        let error = validate_request("llm", &limit, Request { count: 8001.0, reserve: false }).unwrap_err();
        assert_eq!(error.to_string(), "Rate limit llm count 8001 exceeds 8000 per 10 shards.");
    }

    #[test]
    fn reservation_bound_adds_max_reserved() {
        let limit = config(RawConfig::token_bucket(10.0, 1.0).with("maxReserved", 5.0));
        assert!(validate_request("r", &limit, Request { count: 15.0, reserve: true }).is_ok());
        let error = validate_request("r", &limit, Request { count: 16.0, reserve: true }).unwrap_err();
        assert_eq!(error.to_string(), "Rate limit r count 16 exceeds 15.00.");
    }

    #[test]
    fn unlimited_reservation_accepts_any_count() {
        let limit = config(RawConfig::token_bucket(10.0, 1.0));
        assert!(validate_request("r", &limit, Request { count: 1e9, reserve: true }).is_ok());
    }
}
