//! Limit configurations: the fields as the caller gave them
//! ([`ConfigInput`]), and the validated [`Config`] the transitions run on.

use crate::calendar::CalendarUnit;
use crate::error::{Error, Field, Problem, Rule};

/// The most shards a limit may have. Shards `MAX_SHARDS..` name the
/// library's own records (see [`crate::records`]), which no call can reach.
pub const MAX_SHARDS: u32 = 1024;

/// Below this many shards only one shard is decided on alone.
pub const MIN_CHOOSE_TWO: u32 = 3;

/// The largest `start`, in ms from the epoch either way, a fixed window may
/// name: 2^53, where integers stop being exact (a `Date` reaches 8.64e15).
/// Far beyond it window arithmetic loses whole windows, and near ±1.8e308 it
/// overflows.
pub const MAX_INSTANT_MS: f64 = 9_007_199_254_740_992.0;

/// The algorithms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Tokens flow in continuously at `rate / period`, up to `capacity`.
    TokenBucket,
    /// `rate` tokens arrive at the start of every window of `period` ms, up to `capacity`.
    FixedWindow,
    /// `@upstash/ratelimit`'s sliding window: the current window's count plus
    /// the previous one's weighted by how much of it the sliding period still
    /// covers, at most `rate` (see [`crate::sliding_window`]).
    SlidingWindow,
}

impl Kind {
    /// The kind's number across the boundary: 0, 1 or 2.
    pub fn code(self) -> f64 {
        match self {
            Kind::TokenBucket => 0.0,
            Kind::FixedWindow => 1.0,
            Kind::SlidingWindow => 2.0,
        }
    }

    /// The name used in configs: `"token bucket"`, `"fixed window"` or `"sliding window"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::TokenBucket => "token bucket",
            Kind::FixedWindow => "fixed window",
            Kind::SlidingWindow => "sliding window",
        }
    }
}

/// One field as the caller gave it, before validation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Given {
    /// Absent or `undefined`.
    Absent,
    /// `null`.
    Null,
    /// A number, including NaN, the infinities and `-0`.
    Number(f64),
    /// A calendar period's name (`"day"`, `"week"`, `"month"`, `"year"`), as `period` takes it.
    Calendar(CalendarUnit),
    /// Anything else (a string, an object…): the package shows what it was.
    Other,
}

impl From<f64> for Given {
    fn from(number: f64) -> Self {
        Given::Number(number)
    }
}

/// A config's `kind` as given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum GivenKind {
    /// One of the two algorithms.
    Known(Kind),
    /// Anything else.
    Other,
}

/// A configuration's fields as the caller wrote them. The object's shape
/// (own fields only, no unknown ones) is the package's to check; the values
/// are checked here, once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConfigInput {
    pub kind: GivenKind,
    pub rate: Given,
    pub period: Given,
    pub capacity: Given,
    pub max_reserved: Given,
    pub shards: Given,
    pub start: Given,
}

impl ConfigInput {
    /// `{ kind: "token bucket", rate, period }`.
    pub fn token_bucket(rate: f64, period_ms: f64) -> Self {
        Self::of(Kind::TokenBucket, rate, period_ms)
    }

    /// `{ kind: "fixed window", rate, period }`.
    pub fn fixed_window(rate: f64, period_ms: f64) -> Self {
        Self::of(Kind::FixedWindow, rate, period_ms)
    }

    /// `{ kind: "fixed window", rate, period: "day" | "week" | "month" | "year" }`.
    pub fn calendar(rate: f64, unit: CalendarUnit) -> Self {
        ConfigInput { period: Given::Calendar(unit), ..Self::of(Kind::FixedWindow, rate, unit.nominal_ms()) }
    }

    /// `{ kind: "sliding window", rate, period }`.
    pub fn sliding_window(rate: f64, period_ms: f64) -> Self {
        Self::of(Kind::SlidingWindow, rate, period_ms)
    }

    fn of(kind: Kind, rate: f64, period_ms: f64) -> Self {
        ConfigInput {
            kind: GivenKind::Known(kind),
            rate: Given::Number(rate),
            period: Given::Number(period_ms),
            capacity: Given::Absent,
            max_reserved: Given::Absent,
            shards: Given::Absent,
            start: Given::Absent,
        }
    }

    /// The same input with `field` set.
    ///
    /// # Panics
    /// For a field that configs do not have.
    pub fn with(mut self, field: &str, value: impl Into<Given>) -> Self {
        let value = value.into();
        match field {
            "rate" => self.rate = value,
            "period" => self.period = value,
            "capacity" => self.capacity = value,
            "maxReserved" => self.max_reserved = value,
            "shards" => self.shards = value,
            "start" => self.start = value,
            other => panic!("configs have no field {other:?}"),
        }
        self
    }
}

/// A validated configuration: every number finite and in range, defaults filled in.
///
/// Invariants: `rate > 0`, `period_ms > 0`, `rate / shard_count / period_ms`
/// is a positive finite refill rate, `capacity >= 0`, `max_reserved >= 0`,
/// `1 <= shard_count <= MAX_SHARDS`, `start_ms` finite and only for fixed windows;
/// a calendar period is a fixed window's, unsharded, with `start_ms` its anchor
/// (the unit's default when none was given) and `period_ms` its unit's mean length.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// The algorithm.
    pub kind: Kind,
    /// Tokens added per period (for the whole limit, all shards together).
    pub rate: f64,
    /// The period in milliseconds (a calendar period's mean length: see [`CalendarUnit::nominal_ms`]).
    pub period_ms: f64,
    /// A fixed window of calendar days, weeks, months or years (UTC) instead of `period_ms`.
    pub calendar: Option<CalendarUnit>,
    /// The most tokens the limit can hold (defaults to `rate`).
    pub capacity: f64,
    /// The most tokens that may be reserved ahead; `None` is unlimited, `Some(0.0)` none.
    pub max_reserved: Option<f64>,
    /// How many shards the capacity is split across.
    pub shard_count: u32,
    /// For a fixed window, the instant (ms since the epoch) windows are aligned to.
    pub start_ms: Option<f64>,
}

fn number(field: Field, given: Given) -> Result<Option<f64>, Error> {
    match given {
        Given::Absent => Ok(None),
        Given::Number(number) => Ok(Some(number)),
        Given::Null | Given::Other | Given::Calendar(_) => Err(Error::config(field, Rule::Number, f64::NAN)),
    }
}

fn positive(field: Field, given: Given) -> Result<f64, Error> {
    match number(field, given)? {
        Some(value) if value.is_finite() && value > 0.0 => Ok(value),
        found => Err(Error::config(field, Rule::PositiveFinite, found.unwrap_or(f64::NAN))),
    }
}

fn non_negative(field: Field, given: Given) -> Result<Option<f64>, Error> {
    match number(field, given)? {
        Some(value) if !(value.is_finite() && value >= 0.0) => Err(Error::config(field, Rule::FiniteNonNegative, value)),
        found => Ok(found),
    }
}

impl TryFrom<&ConfigInput> for Config {
    type Error = Error;

    /// Validates every field, in the order a config lists them; the first problem found is the error.
    ///
    /// ```
    /// use ratebound::{Config, ConfigInput, Error, Field, Rule};
    /// let error = Config::try_from(&ConfigInput::token_bucket(-1.0, 1000.0)).unwrap_err();
    /// assert_eq!(error, Error::config(Field::Rate, Rule::PositiveFinite, -1.0));
    /// ```
    fn try_from(input: &ConfigInput) -> Result<Config, Error> {
        let kind = match input.kind {
            GivenKind::Known(kind) => kind,
            GivenKind::Other => return Err(Error::config(Field::Kind, Rule::KindName, f64::NAN)),
        };
        let rate = positive(Field::Rate, input.rate)?;
        let (period_ms, calendar) = match (kind, input.period) {
            (Kind::FixedWindow, Given::Calendar(unit)) => (unit.nominal_ms(), Some(unit)),
            (Kind::TokenBucket | Kind::SlidingWindow, Given::Calendar(_)) => return Err(Error::config(Field::Period, Rule::CalendarOfBucket, f64::NAN)),
            (_, Given::Other) => return Err(Error::config(Field::Period, Rule::PeriodName, f64::NAN)),
            (_, given) => (positive(Field::Period, given)?, None),
        };
        if kind == Kind::SlidingWindow {
            return sliding_window(input, rate, period_ms);
        }
        let capacity = non_negative(Field::Capacity, input.capacity)?.unwrap_or(rate);
        let max_reserved = non_negative(Field::MaxReserved, input.max_reserved)?;
        let shard_count = match number(Field::Shards, input.shards)? {
            None => 1,
            Some(shards) if crate::math::fract(shards) == 0.0 && (1.0..=f64::from(MAX_SHARDS)).contains(&shards) => shards as u32,
            Some(shards) => return Err(Error::config(Field::Shards, Rule::ShardRange, shards)),
        };
        if calendar.is_some() && shard_count != 1 {
            return Err(Error::config(Field::Shards, Rule::CalendarShards, f64::from(shard_count)));
        }
        let start_ms = match (kind, input.start) {
            (_, Given::Absent) | (Kind::TokenBucket, Given::Null) => None,
            (Kind::TokenBucket, Given::Number(start)) => return Err(Error::config(Field::Start, Rule::StartOfBucket, start)),
            (Kind::TokenBucket, _) => return Err(Error::config(Field::Start, Rule::StartOfBucket, f64::NAN)),
            (Kind::FixedWindow, Given::Number(start)) if start.abs() <= MAX_INSTANT_MS => Some(start),
            (Kind::FixedWindow, Given::Number(start)) => return Err(Error::config(Field::Start, Rule::StartOfWindow, start)),
            (Kind::FixedWindow, _) => return Err(Error::config(Field::Start, Rule::StartOfWindow, f64::NAN)),
            (Kind::SlidingWindow, _) => unreachable!("validated by `sliding_window`"),
        };
        let shard_refill_per_ms = rate / f64::from(shard_count) / period_ms;
        if !(shard_refill_per_ms.is_finite() && shard_refill_per_ms > 0.0) {
            let numbers = [rate, period_ms, f64::from(shard_count)];
            return Err(Error::InvalidConfig(Problem::with_numbers(Field::Rate, Rule::RefillPerShard, numbers)));
        }
        let start_ms = start_ms.or(calendar.map(CalendarUnit::default_anchor_ms));
        Ok(Config { kind, rate, period_ms, calendar, capacity, max_reserved, shard_count, start_ms })
    }
}

/// A sliding window takes `rate` and `period` only: its windows are aligned
/// to the epoch (as `@upstash/ratelimit`'s), it holds `rate` (no other
/// capacity), it never goes into debt, and its two states are its two
/// windows (no shards). Any of those fields given, even `null`, is refused
/// naming it. The config carries `capacity = rate`, one shard, and
/// `maxReserved = 0`: a call that reserves is decided as one that does not
/// (as on any limit with `maxReserved: 0`), so `acquire` waits its turn.
fn sliding_window(input: &ConfigInput, rate: f64, period_ms: f64) -> Result<Config, Error> {
    let fields = [(Field::Capacity, input.capacity), (Field::MaxReserved, input.max_reserved), (Field::Shards, input.shards), (Field::Start, input.start)];
    for (field, given) in fields {
        match given {
            Given::Absent => {}
            Given::Number(number) => return Err(Error::config(field, Rule::AbsentForSlidingWindow, number)),
            Given::Null | Given::Other | Given::Calendar(_) => return Err(Error::config(field, Rule::AbsentForSlidingWindow, f64::NAN)),
        }
    }
    Ok(Config { kind: Kind::SlidingWindow, rate, period_ms, calendar: None, capacity: rate, max_reserved: Some(0.0), shard_count: 1, start_ms: None })
}

impl Config {
    /// The configuration of one shard: `rate`, `capacity` and `max_reserved`
    /// divided by the shard count (the whole config when unsharded).
    pub fn per_shard(&self) -> Config {
        if self.shard_count == 1 {
            return *self;
        }
        let shards = f64::from(self.shard_count);
        Config {
            rate: self.rate / shards,
            capacity: self.capacity / shards,
            max_reserved: self.max_reserved.map(|max_reserved| max_reserved / shards),
            ..*self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(input: ConfigInput) -> (Field, Rule, f64) {
        match Config::try_from(&input).unwrap_err() {
            Error::InvalidConfig(problem) => (problem.field, problem.rule, problem.numbers[0]),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_shards_rule_names_max_shards() {
        assert_eq!(MAX_SHARDS, 1024, "the message \"an integer from 1 to 1024\" names it");
    }

    #[test]
    fn capacity_defaults_to_rate_and_shards_to_one() {
        let config = Config::try_from(&ConfigInput::token_bucket(10.0, 60_000.0)).unwrap();
        assert_eq!((config.capacity, config.shard_count, config.max_reserved), (10.0, 1, None));
    }

    #[test]
    fn rejects_a_negative_rate_naming_the_field_and_value() {
        assert_eq!(problem(ConfigInput::token_bucket(-1.0, 1000.0)), (Field::Rate, Rule::PositiveFinite, -1.0));
    }

    #[test]
    fn rejects_every_non_finite_number() {
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            for field in ["rate", "period", "capacity", "maxReserved", "shards"] {
                let input = ConfigInput::fixed_window(1.0, 1000.0).with(field, bad);
                assert!(Config::try_from(&input).is_err(), "{field} = {bad}");
            }
        }
        assert!(Config::try_from(&ConfigInput::fixed_window(1.0, 1.0).with("start", f64::NAN)).is_err());
    }

    #[test]
    fn rejects_what_is_not_a_number_where_numbers_belong() {
        let input = ConfigInput::token_bucket(1.0, 1.0).with("capacity", Given::Other);
        assert_eq!(problem(input).0..=problem(input).0, Field::Capacity..=Field::Capacity);
        assert_eq!(problem(input).1, Rule::Number);
    }

    #[test]
    fn rejects_fractional_and_out_of_range_shards() {
        for shards in [0.0, 2.5, 1025.0, -1.0] {
            assert_eq!(problem(ConfigInput::token_bucket(10.0, 1.0).with("shards", shards)).0, Field::Shards);
        }
        let input = ConfigInput::token_bucket(10.0, 1.0).with("shards", 1024.0);
        assert_eq!(Config::try_from(&input).unwrap().shard_count, 1024);
    }

    #[test]
    fn rejects_an_unknown_kind() {
        let input = ConfigInput { kind: GivenKind::Other, ..ConfigInput::token_bucket(1.0, 1.0) };
        assert_eq!(problem(input).1, Rule::KindName);
    }

    #[test]
    fn token_bucket_accepts_null_start_but_not_a_number() {
        assert!(Config::try_from(&ConfigInput::token_bucket(1.0, 1.0).with("start", Given::Null)).is_ok());
        assert_eq!(problem(ConfigInput::token_bucket(1.0, 1.0).with("start", 5.0)), (Field::Start, Rule::StartOfBucket, 5.0));
    }

    #[test]
    fn a_fixed_window_start_must_be_within_2_to_the_53() {
        assert!(Config::try_from(&ConfigInput::fixed_window(1.0, 1.0).with("start", MAX_INSTANT_MS)).is_ok());
        assert_eq!(problem(ConfigInput::fixed_window(1.0, 1.0).with("start", Given::Null)).1, Rule::StartOfWindow);
        assert_eq!(problem(ConfigInput::fixed_window(1.0, 1.0).with("start", -MAX_INSTANT_MS * 2.0)).1, Rule::StartOfWindow);
    }

    #[test]
    fn rejects_a_refill_rate_that_underflows_per_shard() {
        let error = Config::try_from(&ConfigInput::token_bucket(5e-324, 10.0).with("shards", 2.0)).unwrap_err();
        assert_eq!(error.problem().map(|problem| (problem.field, problem.rule)), Some((Field::Rate, Rule::RefillPerShard)));
    }

    #[test]
    fn allows_zero_capacity_and_zero_max_reserved() {
        let input = ConfigInput::token_bucket(1.0, 1.0).with("capacity", 0.0).with("maxReserved", 0.0);
        let config = Config::try_from(&input).unwrap();
        assert_eq!((config.capacity, config.max_reserved), (0.0, Some(0.0)));
    }

    #[test]
    fn a_sliding_window_takes_rate_and_period_and_refuses_every_other_field_by_name() {
        let config = Config::try_from(&ConfigInput::sliding_window(10.0, 1_000.0)).unwrap();
        assert_eq!((config.kind, config.capacity, config.shard_count, config.max_reserved, config.start_ms), (Kind::SlidingWindow, 10.0, 1, Some(0.0), None));
        for (name, field) in [("capacity", Field::Capacity), ("maxReserved", Field::MaxReserved), ("shards", Field::Shards), ("start", Field::Start)] {
            assert_eq!(problem(ConfigInput::sliding_window(10.0, 1_000.0).with(name, 1.0)), (field, Rule::AbsentForSlidingWindow, 1.0), "{name}");
            assert_eq!(problem(ConfigInput::sliding_window(10.0, 1_000.0).with(name, Given::Null)).1, Rule::AbsentForSlidingWindow, "{name}");
        }
        assert_eq!(problem(ConfigInput::sliding_window(0.0, 1_000.0)).0, Field::Rate);
        assert_eq!(problem(ConfigInput::sliding_window(1.0, f64::INFINITY)).0, Field::Period);
    }

    #[test]
    fn per_shard_divides_rate_capacity_and_max_reserved() {
        let input = ConfigInput::token_bucket(40_000.0, 60_000.0).with("shards", 10.0).with("maxReserved", 100.0);
        let shard = Config::try_from(&input).unwrap().per_shard();
        assert_eq!((shard.rate, shard.capacity, shard.max_reserved), (4000.0, 4000.0, Some(10.0)));
    }
}
