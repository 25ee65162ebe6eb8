//! Limits stored in the host (issue 32): a limit's numbers for one name, or
//! for one key of it (a customer), kept as records beside its states, so
//! every instance of a limiter decides on them at its next call.
//!
//! A stored limit changes `rate`, `period`, `capacity` and `maxReserved`;
//! its `kind`, `shards` and `start` stay the limit's in code, so the shards a
//! call reads and the random numbers it draws never depend on a record, and
//! the records are read with the states, in the same batch (no extra round
//! trip, no plan made again). Two records, at shards beyond every grant's:
//!
//! - a key's own limit at `(name, key, KEY_LIMIT_BASE + 0..2)`;
//! - the name's at `(name, no key, NAME_LIMIT_BASE + 0..2)`, another range,
//!   so a key's records can never be the name's whatever the key.
//!
//! Record 0 is `{ value: rate, ts: period }` (a calendar period as minus its
//! unit's code, as it crosses the boundary), record 1
//! `{ value: capacity, ts: maxReserved }` with [`NO_MAX_RESERVED`] for none.
//! A stored limit keeps the code's kind of period: a number of ms stays one,
//! a calendar period stays one (its unit may change; its anchor is `start`).
//! A decision uses the key's records when there are any, else the name's,
//! else the code's config. Records that do not decode to a valid config (one
//! missing, a number out of range) are an error: the call fails closed.

use crate::calendar::CalendarUnit;
use crate::config::{Config, ConfigInput, Given, GivenKind, Kind};
use crate::error::{Error, Field, Rule};
use crate::records::{GRANT_BASE, GRANT_SLOTS};
use crate::state::State;

/// How many records one stored limit takes.
pub const LIMIT_RECORDS: u32 = 2;

/// The first shard of a key's stored limit: past every grant's record.
pub const KEY_LIMIT_BASE: u32 = GRANT_BASE + GRANT_SLOTS;

/// The first shard of a name's stored limit (its key is none).
pub const NAME_LIMIT_BASE: u32 = KEY_LIMIT_BASE + LIMIT_RECORDS;

/// Record 1's `ts` for a limit without `maxReserved` (a stored state holds finite numbers only).
pub const NO_MAX_RESERVED: f64 = -1.0;

/// Where a decision's limit came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitSource {
    /// The config in code (no records).
    Code = 0,
    /// The key's own stored limit.
    Key = 1,
    /// The name's stored limit.
    Name = 2,
}

/// Checks that `stored` keeps the `kind`, `shards` and `start` of `code`, and its kind of
/// period (ms, or a calendar period).
///
/// # Errors
/// `InvalidConfig` naming the first field that differs, rule `SameAsCode`.
pub fn check_shape(code: &Config, stored: &Config) -> Result<(), Error> {
    if stored.kind != code.kind {
        return Err(Error::config(Field::Kind, Rule::SameAsCode, f64::NAN));
    }
    if stored.calendar.is_some() != code.calendar.is_some() {
        let given = if stored.calendar.is_some() { f64::NAN } else { stored.period_ms };
        return Err(Error::config(Field::Period, Rule::SameAsCode, given));
    }
    if stored.shard_count != code.shard_count {
        return Err(Error::config(Field::Shards, Rule::SameAsCode, f64::from(stored.shard_count)));
    }
    let same_start = match (stored.start_ms, code.start_ms) {
        (None, None) => true,
        (Some(a), Some(b)) => a.to_bits() == b.to_bits(),
        _ => false,
    };
    if !same_start {
        return Err(Error::config(Field::Start, Rule::SameAsCode, stored.start_ms.unwrap_or(f64::NAN)));
    }
    Ok(())
}

/// The two records of `stored`, a limit of the same shape as `code`.
///
/// ```
/// use ratebound::{encode_limit, Config, ConfigInput, State};
/// let code = Config::try_from(&ConfigInput::token_bucket(10.0, 1000.0)).unwrap();
/// let stored = Config::try_from(&ConfigInput::token_bucket(2.0, 500.0).with("capacity", 4.0)).unwrap();
/// assert_eq!(encode_limit(&code, &stored).unwrap(), [State { value: 2.0, ts: 500.0 }, State { value: 4.0, ts: -1.0 }]);
/// ```
///
/// # Errors
/// As [`check_shape`].
pub fn encode_limit(code: &Config, stored: &Config) -> Result<[State; 2], Error> {
    check_shape(code, stored)?;
    Ok([
        State { value: stored.rate, ts: stored.calendar.map_or(stored.period_ms, |unit| -f64::from(unit as u8)) },
        State { value: stored.capacity, ts: stored.max_reserved.unwrap_or(NO_MAX_RESERVED) },
    ])
}

/// The limit `records` hold, with the shape of `code`; `None` when neither record exists.
///
/// # Errors
/// `InvalidConfig` when one record is missing (its number shows as NaN) or
/// a number breaks a config's rule: the records are not a limit.
pub fn decode_limit(code: &Config, records: [Option<State>; 2]) -> Result<Option<Config>, Error> {
    if records == [None, None] {
        return Ok(None);
    }
    let [numbers, sizes] = records.map(|record| record.unwrap_or(State { value: f64::NAN, ts: f64::NAN }));
    // A sliding window takes no capacity, maxReserved or shards: its sizes record holds what it
    // implies (capacity the rate, no reservation), and anything else is not its limit.
    let sliding = code.kind == Kind::SlidingWindow;
    if sliding && !(sizes.value == numbers.value && sizes.ts == 0.0) {
        return Err(Error::config(Field::Capacity, Rule::AbsentForSlidingWindow, sizes.value));
    }
    let input = ConfigInput {
        kind: GivenKind::Known(code.kind),
        rate: Given::Number(numbers.value),
        period: match CalendarUnit::from_code(-numbers.ts) {
            Some(unit) if numbers.ts < 0.0 => Given::Calendar(unit),
            _ => Given::Number(numbers.ts),
        },
        capacity: if sliding { Given::Absent } else { Given::Number(sizes.value) },
        max_reserved: if sliding || sizes.ts == NO_MAX_RESERVED { Given::Absent } else { Given::Number(sizes.ts) },
        shards: if sliding { Given::Absent } else { Given::Number(f64::from(code.shard_count)) },
        start: code.start_ms.map_or(Given::Absent, Given::Number),
    };
    let config = Config::try_from(&input)?;
    // Records of another kind of period than the code's now (the code changed since): not this limit.
    check_shape(code, &config)?;
    Ok(Some(config))
}

/// The limit a decision uses: the key's records when it has any, else the
/// name's, else `code`; and where it came from.
///
/// # Errors
/// As [`decode_limit`], for the records it uses.
pub fn resolve_limit(code: &Config, key: [Option<State>; 2], name: [Option<State>; 2]) -> Result<(Config, LimitSource), Error> {
    if let Some(config) = decode_limit(code, key)? {
        return Ok((config, LimitSource::Key));
    }
    if let Some(config) = decode_limit(code, name)? {
        return Ok((config, LimitSource::Name));
    }
    Ok((*code, LimitSource::Code))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Kind, MAX_SHARDS};
    use crate::records::grant_record_shard;

    fn bucket(rate: f64, period: f64) -> Config {
        Config::try_from(&ConfigInput::token_bucket(rate, period)).unwrap()
    }

    #[test]
    fn stored_limits_live_past_every_state_ledger_and_grant_record() {
        assert!(KEY_LIMIT_BASE > grant_record_shard(GRANT_SLOTS - 1) && KEY_LIMIT_BASE > MAX_SHARDS);
        assert_eq!(NAME_LIMIT_BASE, KEY_LIMIT_BASE + 2);
        assert!(NAME_LIMIT_BASE + LIMIT_RECORDS - 1 <= i32::MAX as u32, "fits a signed 32-bit column");
    }

    #[test]
    fn a_stored_limit_reads_back_as_it_was_written() {
        let code = Config::try_from(&ConfigInput::fixed_window(10.0, 1000.0).with("shards", 4.0).with("start", 5.0)).unwrap();
        let stored = Config::try_from(&ConfigInput::fixed_window(3.0, 60_000.0).with("shards", 4.0).with("start", 5.0).with("maxReserved", 2.0)).unwrap();
        let records = encode_limit(&code, &stored).unwrap().map(Some);
        assert_eq!(decode_limit(&code, records), Ok(Some(stored)));
        let plain = bucket(2.0, 10.0);
        assert_eq!(decode_limit(&bucket(1.0, 1.0), encode_limit(&bucket(1.0, 1.0), &plain).unwrap().map(Some)), Ok(Some(plain)));
    }

    #[test]
    fn a_stored_limit_keeps_the_kind_shards_and_start_in_code() {
        let code = bucket(10.0, 1000.0);
        let window = Config::try_from(&ConfigInput::fixed_window(10.0, 1000.0)).unwrap();
        assert_eq!(encode_limit(&code, &window), Err(Error::config(Field::Kind, Rule::SameAsCode, f64::NAN)));
        let sharded = Config::try_from(&ConfigInput::token_bucket(10.0, 1000.0).with("shards", 2.0)).unwrap();
        assert_eq!(encode_limit(&code, &sharded), Err(Error::config(Field::Shards, Rule::SameAsCode, 2.0)));
        let started = Config::try_from(&ConfigInput::fixed_window(10.0, 1000.0).with("start", 7.0)).unwrap();
        assert_eq!(encode_limit(&window, &started), Err(Error::config(Field::Start, Rule::SameAsCode, 7.0)));
        assert_eq!(started.kind, Kind::FixedWindow);
    }

    #[test]
    fn a_stored_limit_keeps_the_code_s_kind_of_period_and_may_change_its_calendar_unit() {
        let calendar = |rate: f64, unit: CalendarUnit| Config::try_from(&ConfigInput::calendar(rate, unit).with("start", 0.0)).unwrap();
        let code = calendar(100.0, CalendarUnit::Day);
        let monthly = calendar(3000.0, CalendarUnit::Month);
        let records = encode_limit(&code, &monthly).unwrap();
        assert_eq!(records[0], State { value: 3000.0, ts: -3.0 });
        assert_eq!(decode_limit(&code, records.map(Some)), Ok(Some(monthly)));
        let millis = Config::try_from(&ConfigInput::fixed_window(100.0, 86_400_000.0).with("start", 0.0)).unwrap();
        assert_eq!(encode_limit(&code, &millis), Err(Error::config(Field::Period, Rule::SameAsCode, 86_400_000.0)));
        assert!(matches!(encode_limit(&millis, &monthly), Err(Error::InvalidConfig(problem)) if (problem.field, problem.rule) == (Field::Period, Rule::SameAsCode)));
        // Records of a calendar period under a code in ms (or the other way round) fail closed.
        assert!(matches!(decode_limit(&millis, records.map(Some)), Err(Error::InvalidConfig(problem)) if problem.field == Field::Period));
        let in_ms = encode_limit(&millis, &millis).unwrap().map(Some);
        assert!(matches!(decode_limit(&code, in_ms), Err(Error::InvalidConfig(problem)) if problem.field == Field::Period));
        let unknown = [Some(State { value: 1.0, ts: -9.0 }), records.map(Some)[1]];
        assert_eq!(decode_limit(&code, unknown), Err(Error::config(Field::Period, Rule::PositiveFinite, -9.0)));
    }

    #[test]
    fn the_key_wins_over_the_name_and_the_name_over_code() {
        let code = bucket(10.0, 1000.0);
        let key = encode_limit(&code, &bucket(1.0, 1000.0)).unwrap().map(Some);
        let name = encode_limit(&code, &bucket(5.0, 1000.0)).unwrap().map(Some);
        assert_eq!(resolve_limit(&code, key, name).unwrap(), (bucket(1.0, 1000.0), LimitSource::Key));
        assert_eq!(resolve_limit(&code, [None, None], name).unwrap(), (bucket(5.0, 1000.0), LimitSource::Name));
        assert_eq!(resolve_limit(&code, [None, None], [None, None]).unwrap(), (code, LimitSource::Code));
    }

    proptest::proptest! {
        #[test]
        fn every_limit_of_the_code_s_shape_reads_back_bit_for_bit(
            fixed in proptest::bool::ANY,
            rate in 1e-6..1e12f64,
            period in 1e-3..1e10f64,
            capacity in proptest::option::of(0.0..1e12f64),
            max_reserved in proptest::option::of(0.0..1e12f64),
            shards in 1u32..=8,
        ) {
            let shaped = |rate: f64, period: f64| {
                let input = if fixed { ConfigInput::fixed_window(rate, period).with("start", 0.0) } else { ConfigInput::token_bucket(rate, period) };
                input.with("shards", f64::from(shards))
            };
            let code = Config::try_from(&shaped(10.0, 1000.0)).unwrap();
            let mut input = shaped(rate, period);
            if let Some(capacity) = capacity {
                input = input.with("capacity", capacity);
            }
            if let Some(max_reserved) = max_reserved {
                input = input.with("maxReserved", max_reserved);
            }
            let Ok(stored) = Config::try_from(&input) else { return Ok(()) };
            let records = encode_limit(&code, &stored).unwrap().map(Some);
            let decoded = decode_limit(&code, records).unwrap().unwrap();
            let bits = |config: &Config| {
                [config.rate, config.period_ms, config.capacity, config.max_reserved.unwrap_or(f64::NAN), config.start_ms.unwrap_or(f64::NAN)].map(f64::to_bits)
            };
            proptest::prop_assert_eq!(bits(&decoded), bits(&stored));
            proptest::prop_assert_eq!((decoded.kind, decoded.shard_count), (stored.kind, stored.shard_count));
        }
    }

    /// A sliding window's stored limit reads back (it has no capacity, maxReserved or shards to give
    /// its config), and sizes that are not a sliding window's are not its limit.
    #[test]
    fn a_sliding_window_s_stored_limit_reads_back() {
        let code = Config::try_from(&ConfigInput::sliding_window(2.0, 60_000.0)).unwrap();
        let stored = Config::try_from(&ConfigInput::sliding_window(5.0, 1_000.0)).unwrap();
        let records = encode_limit(&code, &stored).unwrap();
        assert_eq!(decode_limit(&code, records.map(Some)), Ok(Some(stored)));
        let [numbers, _] = records;
        let wrong = [Some(numbers), Some(State { value: 9.0, ts: 0.0 })];
        assert_eq!(decode_limit(&code, wrong), Err(Error::config(Field::Capacity, Rule::AbsentForSlidingWindow, 9.0)));
    }

    #[test]
    fn records_that_are_not_a_limit_fail_closed() {
        let code = bucket(10.0, 1000.0);
        let [numbers, _] = encode_limit(&code, &bucket(1.0, 1000.0)).unwrap();
        assert!(matches!(resolve_limit(&code, [Some(numbers), None], [None, None]), Err(Error::InvalidConfig(_))), "one record missing");
        let negative = [Some(State { value: -3.0, ts: 1000.0 }), Some(State { value: 1.0, ts: NO_MAX_RESERVED })];
        assert_eq!(resolve_limit(&code, [None, None], negative), Err(Error::config(Field::Rate, Rule::PositiveFinite, -3.0)));
        let below = [Some(State { value: 1.0, ts: 1000.0 }), Some(State { value: 1.0, ts: -2.0 })];
        assert_eq!(resolve_limit(&code, below, [None, None]), Err(Error::config(Field::MaxReserved, Rule::FiniteNonNegative, -2.0)));
    }
}
