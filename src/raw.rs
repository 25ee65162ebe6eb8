//! Inputs as callers gave them, before validation: one value, and a config's
//! fields. Error messages show them as JavaScript would.

use crate::message::Message;

/// One value as the caller gave it, before validation. Two are equal when
/// they are the same value (`NaN` equals `NaN`: what was given, not arithmetic).
#[derive(Debug, Clone)]
pub enum RawValue {
    /// JavaScript `undefined`: treated as absent.
    Undefined,
    /// JavaScript `null`.
    Null,
    /// A boolean.
    Bool(bool),
    /// A number, including `NaN`, the infinities and `-0`.
    Number(f64),
    /// A string.
    String(String),
    /// Anything else, by what it is: `"an object"`, `"a function"`, `"a bigint"`…
    Other(&'static str),
}

impl PartialEq for RawValue {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (RawValue::Number(a), RawValue::Number(b)) => a.to_bits() == b.to_bits(),
            (RawValue::Bool(a), RawValue::Bool(b)) => a == b,
            (RawValue::String(a), RawValue::String(b)) => a == b,
            (RawValue::Other(a), RawValue::Other(b)) => a == b,
            (RawValue::Undefined, RawValue::Undefined) | (RawValue::Null, RawValue::Null) => true,
            _ => false,
        }
    }
}

impl RawValue {
    /// Appends the value as an error message shows it: `-1`, `NaN`, `"10"`, `null`, `an object`.
    pub fn show(&self, message: &mut Message<'_>) {
        match self {
            RawValue::Undefined => message.text("undefined"),
            RawValue::Null => message.text("null"),
            RawValue::Bool(true) => message.text("true"),
            RawValue::Bool(false) => message.text("false"),
            RawValue::Number(number) => message.number(*number),
            RawValue::String(text) => message.shown(text),
            RawValue::Other(description) => message.text(description),
        };
    }

    /// The number, if this is one.
    pub fn as_number(&self) -> Option<f64> {
        match self {
            RawValue::Number(number) => Some(*number),
            _ => None,
        }
    }
}

impl From<f64> for RawValue {
    fn from(number: f64) -> Self {
        RawValue::Number(number)
    }
}

impl From<&str> for RawValue {
    fn from(text: &str) -> Self {
        RawValue::String(text.into())
    }
}

/// A configuration as the caller wrote it: fields in their given order, unchecked.
///
/// ```
/// use ratebound::{Config, RawConfig};
/// let raw = RawConfig::token_bucket(10.0, 60_000.0).with("capacity", 3.0);
/// let config = Config::try_from(&raw).unwrap();
/// assert_eq!(config.capacity, 3.0);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawConfig {
    /// `(field, value)` pairs: the object's own enumerable properties.
    pub fields: Vec<(String, RawValue)>,
}

impl RawConfig {
    /// `{ kind: "token bucket", rate, period }`.
    pub fn token_bucket(rate: f64, period_ms: f64) -> Self {
        Self::default().with("kind", "token bucket").with("rate", rate).with("period", period_ms)
    }

    /// `{ kind: "fixed window", rate, period }`.
    pub fn fixed_window(rate: f64, period_ms: f64) -> Self {
        Self::default().with("kind", "fixed window").with("rate", rate).with("period", period_ms)
    }

    /// The same configuration with `field` set (replaced if present).
    pub fn with(mut self, field: &str, value: impl Into<RawValue>) -> Self {
        let value = value.into();
        match self.fields.iter_mut().find(|(name, _)| name == field) {
            Some(slot) => slot.1 = value,
            None => self.fields.push((field.into(), value)),
        }
        self
    }

    /// The value of `field`, `Undefined` when absent.
    pub fn get(&self, field: &str) -> &RawValue {
        self.fields.iter().find(|(name, _)| name == field).map_or(&RawValue::Undefined, |(_, value)| value)
    }
}
