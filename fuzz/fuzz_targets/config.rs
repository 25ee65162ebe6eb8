//! Config parsing and validation on arbitrary fields and values: never a
//! panic; a config that passes holds every invariant `Config` promises; a
//! config that fails names a field and says what is wrong; request
//! validation on any count answers without panicking.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use ratebound::{validate_request, Config, Error, Kind, RawConfig, RawValue, Request, MAX_SHARDS};
use ratebound_fuzz::Num;

const FIELDS: [&str; 7] = ["kind", "rate", "period", "capacity", "maxReserved", "shards", "start"];
const ODD_FIELDS: [&str; 6] = ["__proto__", "constructor", "", "Rate", "capcity", "toString"];

#[derive(Debug, Arbitrary)]
enum Field {
    Known(u8),
    Odd(u8),
    Any(String),
}

#[derive(Debug, Arbitrary)]
enum Value {
    Undefined,
    Null,
    Bool(bool),
    Number(Num),
    Kind(bool),
    Text(String),
    Other(String),
}

#[derive(Debug, Arbitrary)]
struct Input {
    /// A well-formed start: kind, rate and period, so most inputs reach the later checks.
    base: Option<(bool, Num, Num)>,
    fields: Vec<(Field, Value)>,
    count: Num,
    reserve: bool,
    name: String,
}

fn field_name(field: &Field) -> String {
    match field {
        Field::Known(index) => FIELDS[usize::from(*index) % FIELDS.len()].into(),
        Field::Odd(index) => ODD_FIELDS[usize::from(*index) % ODD_FIELDS.len()].into(),
        Field::Any(text) => text.clone(),
    }
}

fn raw_value(value: &Value) -> RawValue {
    match value {
        Value::Undefined => RawValue::Undefined,
        Value::Null => RawValue::Null,
        Value::Bool(flag) => RawValue::Bool(*flag),
        Value::Number(number) => RawValue::Number(number.0),
        Value::Kind(token_bucket) => RawValue::String(if *token_bucket { "token bucket" } else { "fixed window" }.into()),
        Value::Text(text) => RawValue::String(text.clone()),
        // Descriptions are the boundary's own words; any one of them will do.
        Value::Other(description) => RawValue::Other(if description.len() % 2 == 0 { "an object" } else { "a function" }),
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
    // What the limiter reports back for this config holds the same numbers.
    let _ = config.describe(Some(0.0));
}

fuzz_target!(|input: Input| {
    let mut raw = match input.base {
        Some((true, rate, period)) => RawConfig::token_bucket(rate.0, period.0),
        Some((false, rate, period)) => RawConfig::fixed_window(rate.0, period.0),
        None => RawConfig::default(),
    };
    for (field, value) in &input.fields {
        raw = raw.with(&field_name(field), raw_value(value));
    }
    let outcome = Config::try_from(&raw);
    assert_eq!(outcome, Config::try_from(&raw), "validation is deterministic");
    match outcome {
        Ok(config) => {
            assert!(raw.fields.iter().all(|(name, _)| FIELDS.contains(&name.as_str())), "accepted an unknown field: {raw:?}");
            assert_valid(&config);
            let request = Request { count: input.count.0, reserve: input.reserve };
            match validate_request(&input.name, &config, request) {
                Ok(()) => assert!(request.count.is_finite() && request.count >= 0.0, "accepted count {}", request.count),
                Err(error) => {
                    assert!(matches!(error.code(), "INVALID_REQUEST" | "COUNT_EXCEEDS_MAX"), "{error:?}");
                    assert_eq!(error.field(), Some("count"));
                    assert!(!error.to_string().is_empty());
                }
            }
        }
        Err(problem) => {
            let said = problem.clone().unnamed().to_string();
            assert!(!said.is_empty());
            assert!(
                FIELDS.contains(&problem.field.as_str()) || raw.fields.iter().any(|(name, _)| *name == problem.field),
                "the error names a field that is neither known nor given: {problem:?}"
            );
            if FIELDS.contains(&problem.field.as_str()) {
                assert!(said.contains(&problem.field), "{problem:?}");
            }
            let error: Error = problem.for_limit(&input.name);
            assert_eq!(error.code(), "INVALID_CONFIG");
            let message = error.to_string();
            assert!(message.starts_with("Rate limit \""), "{message}");
        }
    }
});
