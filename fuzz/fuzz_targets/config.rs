//! Config validation on arbitrary values for every field: never a panic; a
//! config that passes holds every invariant `Config` promises; a config that
//! fails is `INVALID_CONFIG` naming a field and a rule fit for it, with what
//! was given as its first number; request validation on any count answers
//! without panicking. (The object's shape, unknown fields included, is the
//! package's to check: the core gets the seven fields.)
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use ratebound::{validate_request, Config, ConfigInput, Field, Given, GivenKind, Kind, Request, Rule, MAX_SHARDS};
use ratebound_fuzz::Num;

#[derive(Debug, Arbitrary)]
enum Value {
    Undefined,
    Null,
    Bool,
    Number(Num),
    Kind(bool),
    Text(String),
}

#[derive(Debug, Arbitrary)]
struct Input {
    /// A well-formed start: kind, rate and period, so most inputs reach the later checks.
    base: Option<(bool, Num, Num)>,
    /// Values for `kind`, `rate`, `period`, `capacity`, `maxReserved`, `shards`, `start` (by index).
    fields: Vec<(u8, Value)>,
    count: Num,
    reserve: bool,
}

fn given(value: &Value) -> Given {
    match value {
        Value::Undefined => Given::Absent,
        Value::Null => Given::Null,
        Value::Number(number) => Given::Number(number.0),
        Value::Bool | Value::Kind(_) | Value::Text(_) => Given::Other,
    }
}

fn given_kind(value: &Value) -> GivenKind {
    match value {
        Value::Kind(true) => GivenKind::Known(Kind::TokenBucket),
        Value::Kind(false) => GivenKind::Known(Kind::FixedWindow),
        Value::Text(text) if text == "token bucket" => GivenKind::Known(Kind::TokenBucket),
        Value::Text(text) if text == "fixed window" => GivenKind::Known(Kind::FixedWindow),
        _ => GivenKind::Other,
    }
}

fn assert_valid(config: &Config) {
    assert!(config.rate.is_finite() && config.rate > 0.0, "{config:?}");
    assert!(config.period_ms.is_finite() && config.period_ms > 0.0, "{config:?}");
    assert!(config.capacity.is_finite() && config.capacity >= 0.0, "{config:?}");
    assert!(config.max_reserved.is_none_or(|m| m.is_finite() && m >= 0.0), "{config:?}");
    assert!((1..=MAX_SHARDS).contains(&config.shard_count), "{config:?}");
    assert!(config.start_ms.is_none_or(f64::is_finite), "{config:?}");
    assert!(config.kind == Kind::FixedWindow || config.start_ms.is_none(), "{config:?}");
    let shard = config.per_shard();
    let refill_per_ms = shard.rate / shard.period_ms;
    assert!(refill_per_ms.is_finite() && refill_per_ms > 0.0, "per-shard refill {refill_per_ms} of {config:?}");
    assert!(shard.capacity.is_finite() && shard.capacity >= 0.0);
}

/// The rules a field's problem may name.
fn fits(field: Field, rule: Rule) -> bool {
    match field {
        Field::Kind => rule == Rule::KindName,
        Field::Rate => matches!(rule, Rule::Number | Rule::PositiveFinite | Rule::RefillPerShard),
        Field::Period => matches!(rule, Rule::Number | Rule::PositiveFinite | Rule::PeriodName | Rule::CalendarOfBucket),
        Field::Capacity | Field::MaxReserved => matches!(rule, Rule::Number | Rule::FiniteNonNegative),
        Field::Shards => matches!(rule, Rule::Number | Rule::ShardRange | Rule::CalendarShards),
        Field::Start => matches!(rule, Rule::StartOfBucket | Rule::StartOfWindow),
        _ => false,
    }
}

fuzz_target!(|input: Input| {
    let mut raw = match input.base {
        Some((true, rate, period)) => ConfigInput::token_bucket(rate.0, period.0),
        Some((false, rate, period)) => ConfigInput::fixed_window(rate.0, period.0),
        None => ConfigInput {
            kind: GivenKind::Other,
            rate: Given::Absent,
            period: Given::Absent,
            capacity: Given::Absent,
            max_reserved: Given::Absent,
            shards: Given::Absent,
            start: Given::Absent,
        },
    };
    for (index, value) in &input.fields {
        let value_given = given(value);
        match index % 7 {
            0 => raw.kind = given_kind(value),
            1 => raw.rate = value_given,
            2 => raw.period = value_given,
            3 => raw.capacity = value_given,
            4 => raw.max_reserved = value_given,
            5 => raw.shards = value_given,
            _ => raw.start = value_given,
        }
    }
    let outcome = Config::try_from(&raw);
    assert_eq!(outcome, Config::try_from(&raw), "validation is deterministic");
    match outcome {
        Ok(config) => {
            assert_valid(&config);
            let request = Request { count: input.count.0, reserve: input.reserve };
            match validate_request(&config, request) {
                Ok(()) => assert!(request.count.is_finite() && request.count >= 0.0, "accepted count {}", request.count),
                Err(error) => {
                    assert!(matches!(error.code(), "INVALID_REQUEST" | "COUNT_EXCEEDS_MAX"), "{error:?}");
                    assert_eq!(error.field(), Some(Field::Count));
                }
            }
        }
        Err(error) => {
            assert_eq!(error.code(), "INVALID_CONFIG", "{error:?}");
            let problem = error.problem().expect("a config error is about one field");
            assert!(fits(problem.field, problem.rule), "{problem:?}");
            // The first number is what was given for the field, or NaN when it was not a number.
            let given_for = match problem.field {
                Field::Rate => raw.rate,
                Field::Period => raw.period,
                Field::Capacity => raw.capacity,
                Field::MaxReserved => raw.max_reserved,
                Field::Shards => raw.shards,
                Field::Start => raw.start,
                _ => Given::Other,
            };
            let shown = problem.numbers[0];
            match given_for {
                Given::Number(number) => assert_eq!(shown.to_bits(), number.to_bits(), "{problem:?} for {number}"),
                _ => assert!(shown.is_nan(), "{problem:?} for {given_for:?}"),
            }
        }
    }
});
