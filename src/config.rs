//! Limit configurations: the loose shape callers pass in, the validated
//! [`Config`] the transitions run on, and the typed shape reported back.

use serde::Serialize;
use tsify::Tsify;

use crate::error::{Part, Problem};
use crate::raw::{RawConfig, RawValue};

/// The most shards a limit may have.
pub const MAX_SHARDS: u32 = 1024;

/// Below this many shards only one shard is read per decision.
pub const MIN_CHOOSE_TWO: u32 = 3;

/// The largest `start`, in ms from the epoch either way, a fixed window may
/// name: 2^53, where integers stop being exact (a `Date` reaches 8.64e15).
/// Far beyond it window arithmetic loses whole windows, and near ±1.8e308 it
/// overflows.
pub const MAX_INSTANT_MS: f64 = 9_007_199_254_740_992.0;

/// The two algorithms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Tokens flow in continuously at `rate / period`, up to `capacity`.
    TokenBucket,
    /// `rate` tokens arrive at the start of every window of `period` ms, up to `capacity`.
    FixedWindow,
}

impl Kind {
    /// The name used in configs: `"token bucket"` or `"fixed window"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::TokenBucket => "token bucket",
            Kind::FixedWindow => "fixed window",
        }
    }
}

/// A validated configuration: every number finite and in range, defaults filled in.
///
/// Invariants: `rate > 0`, `period_ms > 0`, `rate / shard_count / period_ms`
/// is a positive finite refill rate, `capacity >= 0`, `max_reserved >= 0`,
/// `1 <= shard_count <= MAX_SHARDS`, `start_ms` finite and only for fixed windows.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The algorithm.
    pub kind: Kind,
    /// Tokens added per period (for the whole limit, all shards together).
    pub rate: f64,
    /// The period in milliseconds.
    pub period_ms: f64,
    /// The most tokens the limit can hold (defaults to `rate`).
    pub capacity: f64,
    /// The most tokens that may be reserved ahead; `None` is unlimited, `Some(0.0)` none.
    pub max_reserved: Option<f64>,
    /// How many shards the capacity is split across.
    pub shard_count: u32,
    /// For a fixed window, the instant (ms since the epoch) windows are aligned to.
    pub start_ms: Option<f64>,
}

const FIELDS: [&str; 7] = ["kind", "rate", "period", "capacity", "maxReserved", "shards", "start"];

fn number(raw: &RawConfig, field: &str) -> Result<Option<f64>, Problem> {
    match raw.get(field) {
        RawValue::Undefined => Ok(None),
        RawValue::Number(number) => Ok(Some(*number)),
        other => Err(Problem::must_be(field, "a number", other.clone())),
    }
}

fn positive(raw: &RawConfig, field: &str) -> Result<f64, Problem> {
    match number(raw, field)? {
        Some(value) if value.is_finite() && value > 0.0 => Ok(value),
        found => Err(Problem::must_be(field, "a positive finite number", found.map_or(RawValue::Undefined, RawValue::Number))),
    }
}

fn non_negative(raw: &RawConfig, field: &str) -> Result<Option<f64>, Problem> {
    match number(raw, field)? {
        Some(value) if !(value.is_finite() && value >= 0.0) => Err(Problem::must_be(field, "a finite number >= 0", value)),
        found => Ok(found),
    }
}

impl TryFrom<&RawConfig> for Config {
    type Error = Problem;

    /// Validates every field; the first problem found is the error.
    fn try_from(raw: &RawConfig) -> Result<Config, Problem> {
        if let Some((field, _)) = raw.fields.iter().find(|(name, _)| !FIELDS.contains(&name.as_str())) {
            return Err(Problem::unknown(field.clone(), "field", "fields", &FIELDS));
        }
        let kind = match raw.get("kind") {
            RawValue::String(text) if text == "token bucket" => Kind::TokenBucket,
            RawValue::String(text) if text == "fixed window" => Kind::FixedWindow,
            other => return Err(Problem::must_be("kind", "\"token bucket\" or \"fixed window\"", other.clone())),
        };
        let rate = positive(raw, "rate")?;
        let period_ms = positive(raw, "period")?;
        let capacity = non_negative(raw, "capacity")?.unwrap_or(rate);
        let max_reserved = non_negative(raw, "maxReserved")?;
        let shard_count = match number(raw, "shards")? {
            None => 1,
            Some(shards) if shards.fract() == 0.0 && (1.0..=f64::from(MAX_SHARDS)).contains(&shards) => shards as u32,
            Some(shards) => return Err(Problem::must_be("shards", "an integer from 1 to 1024", shards)),
        };
        let start_ms = match (kind, raw.get("start")) {
            (_, RawValue::Undefined) | (Kind::TokenBucket, RawValue::Null) => None,
            (Kind::TokenBucket, other) => return Err(Problem::must_be("start", "null or absent for a token bucket", other.clone())),
            (Kind::FixedWindow, RawValue::Number(start)) if start.abs() <= MAX_INSTANT_MS => Some(*start),
            (Kind::FixedWindow, other) => {
                return Err(Problem::must_be("start", "a number of ms within ±9007199254740992 (2^53)", other.clone()))
            }
        };
        let shard_refill_per_ms = rate / f64::from(shard_count) / period_ms;
        if !(shard_refill_per_ms.is_finite() && shard_refill_per_ms > 0.0) {
            return Err(Problem::parts(
                "rate",
                vec![
                    Part::Text("rate / period must be a positive finite number of tokens per ms for each shard (got rate "),
                    Part::Number(rate),
                    Part::Text(", period "),
                    Part::Number(period_ms),
                    Part::Text(", shards "),
                    Part::Number(f64::from(shard_count)),
                    Part::Text(")"),
                ],
            ));
        }
        Ok(Config { kind, rate, period_ms, capacity, max_reserved, shard_count, start_ms })
    }
}

impl Config {
    /// The configuration of one shard: `rate`, `capacity` and `max_reserved`
    /// divided by the shard count (the whole config when unsharded).
    pub fn per_shard(&self) -> Config {
        if self.shard_count == 1 {
            return self.clone();
        }
        let shards = f64::from(self.shard_count);
        Config {
            rate: self.rate / shards,
            capacity: self.capacity / shards,
            max_reserved: self.max_reserved.map(|max_reserved| max_reserved / shards),
            ..self.clone()
        }
    }

    /// The config as callers write it, with `capacity` and `shards` filled in
    /// and, for a fixed window, `start` set to `start_ms` (or `window_start_ms`).
    pub fn describe(&self, window_start_ms: Option<f64>) -> RateLimitConfig {
        match self.kind {
            Kind::TokenBucket => RateLimitConfig::TokenBucket(TokenBucketConfig {
                kind: TokenBucketKind::TokenBucket,
                rate: self.rate,
                period: self.period_ms,
                capacity: Some(self.capacity),
                max_reserved: self.max_reserved,
                shards: Some(self.shard_count),
                start: None,
            }),
            Kind::FixedWindow => RateLimitConfig::FixedWindow(FixedWindowConfig {
                kind: FixedWindowKind::FixedWindow,
                rate: self.rate,
                period: self.period_ms,
                capacity: Some(self.capacity),
                max_reserved: self.max_reserved,
                shards: Some(self.shard_count),
                start: self.start_ms.or(window_start_ms),
            }),
        }
    }
}

/// The literal `"token bucket"`.
#[derive(Tsify, Serialize, Debug, Clone, Copy, PartialEq)]
pub enum TokenBucketKind {
    /// `"token bucket"`
    #[serde(rename = "token bucket")]
    TokenBucket,
}

/// The literal `"fixed window"`.
#[derive(Tsify, Serialize, Debug, Clone, Copy, PartialEq)]
pub enum FixedWindowKind {
    /// `"fixed window"`
    #[serde(rename = "fixed window")]
    FixedWindow,
}

/// Tokens flow in continuously, `rate` per `period` ms, up to `capacity`.
#[derive(Tsify, Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TokenBucketConfig {
    pub kind: TokenBucketKind,
    /// Tokens added per period.
    pub rate: f64,
    /// The period in milliseconds.
    pub period: f64,
    /// The most tokens that can accumulate (default: `rate`).
    #[tsify(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<f64>,
    /// The most tokens that may be reserved ahead (default: unlimited; 0: none).
    #[tsify(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_reserved: Option<f64>,
    /// How many shards to split the capacity across, 1 to 1024 (default 1).
    #[tsify(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shards: Option<u32>,
    /// Token buckets have no windows.
    #[tsify(optional, type = "null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start: Option<()>,
}

/// `rate` tokens arrive at the start of every `period` ms window, up to `capacity`.
#[derive(Tsify, Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FixedWindowConfig {
    pub kind: FixedWindowKind,
    /// Tokens added per window.
    pub rate: f64,
    /// The window length in milliseconds.
    pub period: f64,
    /// The most tokens that can accumulate (default: `rate`).
    #[tsify(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<f64>,
    /// The most tokens that may be reserved ahead (default: unlimited; 0: none).
    #[tsify(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_reserved: Option<f64>,
    /// How many shards to split the capacity across, 1 to 1024 (default 1).
    #[tsify(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shards: Option<u32>,
    /// Windows start at `start + n × period` (ms since the epoch); random per key when absent.
    #[tsify(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start: Option<f64>,
}

/// A rate limit's configuration.
#[derive(Tsify, Serialize, Debug, Clone, PartialEq)]
#[serde(untagged)]
pub enum RateLimitConfig {
    TokenBucket(TokenBucketConfig),
    FixedWindow(FixedWindowConfig),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(raw: RawConfig) -> String {
        Config::try_from(&raw).unwrap_err().for_limit("sendMessage").to_string()
    }

    #[test]
    fn the_shards_rule_names_max_shards() {
        assert_eq!(MAX_SHARDS, 1024, "the message \"an integer from 1 to 1024\" names it");
    }

    #[test]
    fn capacity_defaults_to_rate_and_shards_to_one() {
        let config = Config::try_from(&RawConfig::token_bucket(10.0, 60_000.0)).unwrap();
        assert_eq!((config.capacity, config.shard_count, config.max_reserved), (10.0, 1, None));
    }

    #[test]
    fn rejects_a_negative_rate_naming_limit_field_and_value() {
        assert_eq!(
            problem(RawConfig::token_bucket(-1.0, 1000.0)),
            "Rate limit \"sendMessage\": rate must be a positive finite number (got -1)"
        );
    }

    #[test]
    fn rejects_every_non_finite_number() {
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            for field in ["rate", "period", "capacity", "maxReserved", "shards"] {
                let raw = RawConfig::fixed_window(1.0, 1000.0).with(field, bad);
                assert!(Config::try_from(&raw).is_err(), "{field} = {bad}");
            }
        }
        assert!(Config::try_from(&RawConfig::fixed_window(1.0, 1.0).with("start", f64::NAN)).is_err());
    }

    #[test]
    fn rejects_strings_where_numbers_belong() {
        assert_eq!(
            problem(RawConfig::token_bucket(1.0, 1.0).with("capacity", "3")),
            "Rate limit \"sendMessage\": capacity must be a number (got \"3\")"
        );
    }

    #[test]
    fn rejects_fractional_and_out_of_range_shards() {
        for shards in [0.0, 2.5, 1025.0, -1.0] {
            let raw = RawConfig::token_bucket(10.0, 1.0).with("shards", shards);
            assert_eq!(Config::try_from(&raw).unwrap_err().field, "shards");
        }
        let raw = RawConfig::token_bucket(10.0, 1.0).with("shards", 1024.0);
        assert_eq!(Config::try_from(&raw).unwrap().shard_count, 1024);
    }

    #[test]
    fn rejects_unknown_fields_by_name() {
        let message = problem(RawConfig::token_bucket(1.0, 1.0).with("applyUpdates", "asynchronously"));
        assert!(message.contains("unknown field \"applyUpdates\""), "{message}");
    }

    #[test]
    fn rejects_an_unknown_kind() {
        let raw = RawConfig::default().with("kind", "leaky bucket").with("rate", 1.0).with("period", 1.0);
        assert_eq!(
            problem(raw),
            "Rate limit \"sendMessage\": kind must be \"token bucket\" or \"fixed window\" (got \"leaky bucket\")"
        );
    }

    #[test]
    fn token_bucket_accepts_null_start_but_not_a_number() {
        assert!(Config::try_from(&RawConfig::token_bucket(1.0, 1.0).with("start", RawValue::Null)).is_ok());
        assert_eq!(Config::try_from(&RawConfig::token_bucket(1.0, 1.0).with("start", 5.0)).unwrap_err().field, "start");
    }

    #[test]
    fn rejects_a_refill_rate_that_underflows_per_shard() {
        let raw = RawConfig::token_bucket(5e-324, 10.0).with("shards", 2.0);
        assert_eq!(Config::try_from(&raw).unwrap_err().field, "rate");
    }

    #[test]
    fn allows_zero_capacity_and_zero_max_reserved() {
        let raw = RawConfig::token_bucket(1.0, 1.0).with("capacity", 0.0).with("maxReserved", 0.0);
        let config = Config::try_from(&raw).unwrap();
        assert_eq!((config.capacity, config.max_reserved), (0.0, Some(0.0)));
    }

    #[test]
    fn per_shard_divides_rate_capacity_and_max_reserved() {
        let raw = RawConfig::token_bucket(40_000.0, 60_000.0).with("shards", 10.0).with("maxReserved", 100.0);
        let shard = Config::try_from(&raw).unwrap().per_shard();
        assert_eq!((shard.rate, shard.capacity, shard.max_reserved), (4000.0, 4000.0, Some(10.0)));
    }
}
