//! The one error type. "Limited, retry in N ms" is not an error: it is a
//! [`RateLimitResult`](crate::RateLimitResult). Errors are for requests that
//! can never succeed and for bad input; each has a stable [`Error::code`] and
//! carries the values it is about, which [`Error::message`] prints.

use std::borrow::Cow;
use std::fmt;

use crate::message::{Message, NumberFormat, RustNumbers};
use crate::raw::RawValue;

/// Why a call failed, as opposed to being refused.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// A limit's configuration is invalid (checked once, when it is defined).
    InvalidConfig {
        /// The limit's name; `None` for a config passed to `calculateRateLimit`.
        limit: Option<String>,
        /// What is wrong.
        problem: Problem,
    },
    /// An argument of one call (`count`, `key`, `sampleShards`, `now`, …) is invalid.
    InvalidRequest {
        /// The limit's name, or the function called (`"withJitter"`, `"MemoryStore"`).
        limit: String,
        /// What is wrong.
        problem: Problem,
    },
    /// An argument of a constructor or of a call is not of the shape it must
    /// have (a store without methods, limits that are not an object…).
    InvalidArgument {
        /// The constructor or function called.
        function: Cow<'static, str>,
        /// What is wrong.
        problem: Problem,
    },
    /// The request asks for more than the limit can ever grant.
    CountExceedsMax {
        /// The limit's name.
        limit: String,
        /// Tokens asked for.
        count: f64,
        /// The most one request can get (per shard factor, reservations included).
        max: f64,
        /// The limit's shard count.
        shard_count: u32,
        /// Whether the request reserved (the reference prints that bound with two decimals).
        reserve: bool,
    },
    /// A limit name that is not a well-formed string.
    InvalidName {
        /// The value given.
        got: RawValue,
    },
    /// A limit name longer than 1024 bytes of UTF-8.
    NameTooLong {
        /// Its length in UTF-8 bytes.
        bytes: usize,
    },
    /// A request whose wait, read from the state, no clock could keep: a
    /// reservation so large (without `maxReserved`) that it would never be due.
    WaitUnbounded {
        /// The limit's name.
        limit: String,
        /// Tokens asked for.
        count: f64,
    },
    /// No limit of that name was defined and no config was passed inline.
    UnknownLimit {
        /// The name that was asked for.
        limit: String,
    },
    /// A stored state is not two finite numbers.
    CorruptState {
        /// Where it was found.
        at: Place,
        /// What is wrong with it.
        problem: Problem,
    },
    /// The injected random source returned something that is not in `[0, 1)`.
    InvalidRandom {
        /// The value it returned.
        got: RawValue,
    },
    /// A MemoryStore holds `max_keys` keys and none has fully refilled, so
    /// none can be dropped without handing out tokens: the call fails closed.
    StoreFull {
        /// The store's `maxKeys`.
        max_keys: u32,
    },
    /// The runtime has no source of random numbers (and none was injected).
    RandomUnavailable,
    /// A grant was settled (or cancelled) already: a second settle would give
    /// its tokens back twice.
    GrantSettled {
        /// The limit's name.
        limit: String,
    },
}

/// Where a corrupt state was found.
#[derive(Debug, Clone, PartialEq)]
pub enum Place {
    /// In the store, at this ref.
    Stored {
        /// The limit's name.
        name: String,
        /// The key, if any.
        key: Option<String>,
        /// The shard.
        shard: u32,
    },
    /// Passed to this function.
    Passed(&'static str),
}

/// What is wrong with one field or argument.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// The offending field or argument, or `"config"` / `"options"` for the object as a whole.
    pub field: String,
    /// What the message says about it.
    pub says: Says,
}

/// The forms a problem's message takes.
#[derive(Debug, Clone, PartialEq)]
pub enum Says {
    /// `{field} must be {rule} (got {got})`.
    MustBe {
        /// What it must be: `"a finite number >= 0"`.
        rule: Cow<'static, str>,
        /// What it was.
        got: RawValue,
    },
    /// `unknown {what} "{field}"{of} (the {plural} are {known, …})`.
    Unknown {
        /// `"field"` or `"option"`.
        what: &'static str,
        /// Said after the name: `""` or `" of a limitAll item"`.
        of: &'static str,
        /// `"fields"` or `"options"`.
        plural: &'static str,
        /// The names that are known.
        known: Vec<String>,
    },
    /// Any other message, in parts.
    Parts(Vec<Part>),
}

/// A part of a [`Says::Parts`] message.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// Text as it is.
    Text(&'static str),
    /// A number, printed as JavaScript prints it.
    Number(f64),
}

impl Problem {
    /// `{field} must be {rule} (got {got})`.
    pub fn must_be(field: impl Into<String>, rule: impl Into<Cow<'static, str>>, got: impl Into<RawValue>) -> Problem {
        Problem { field: field.into(), says: Says::MustBe { rule: rule.into(), got: got.into() } }
    }

    /// `unknown {what} "{field}" (the {what}s are …)`, for an own field that is not among `known`.
    pub fn unknown(field: impl Into<String>, what: &'static str, plural: &'static str, known: &[&str]) -> Problem {
        let known = known.iter().map(|name| (*name).to_owned()).collect();
        Problem { field: field.into(), says: Says::Unknown { what, of: "", plural, known } }
    }

    /// A message in parts.
    pub fn parts(field: impl Into<String>, parts: Vec<Part>) -> Problem {
        Problem { field: field.into(), says: Says::Parts(parts) }
    }

    /// The error for the limit called `limit`.
    pub fn for_limit(self, limit: &str) -> Error {
        Error::InvalidConfig { limit: Some(limit.into()), problem: self }
    }

    /// The error for a config that belongs to no named limit.
    pub fn unnamed(self) -> Error {
        Error::InvalidConfig { limit: None, problem: self }
    }

    fn write(&self, message: &mut Message<'_>) {
        match &self.says {
            Says::MustBe { rule, got } => {
                message.text(&self.field).text(" must be ").text(rule).text(" (got ");
                got.show(message);
                message.text(")");
            }
            Says::Unknown { what, of, plural, known } => {
                message.text("unknown ").text(what).text(" ").shown(&self.field).text(of);
                message.text(" (the ").text(plural).text(" are ").text(&known.join(", ")).text(")");
            }
            Says::Parts(parts) => {
                for part in parts {
                    match part {
                        Part::Text(text) => message.text(text),
                        Part::Number(number) => message.number(*number),
                    };
                }
            }
        }
    }
}

impl Error {
    /// A bad argument of one call of the limit (or function) `limit`.
    pub fn request(limit: &str, problem: Problem) -> Error {
        Error::InvalidRequest { limit: limit.into(), problem }
    }

    /// A stable identifier for the kind of error, carried to JavaScript as `error.code`.
    ///
    /// ```
    /// use ratebound::Error;
    /// let error = Error::UnknownLimit { limit: "sendMessage".into() };
    /// assert_eq!(error.code(), "UNKNOWN_LIMIT");
    /// ```
    pub fn code(&self) -> &'static str {
        match self {
            Error::InvalidConfig { .. } => "INVALID_CONFIG",
            Error::InvalidRequest { .. } | Error::InvalidName { .. } | Error::NameTooLong { .. } => "INVALID_REQUEST",
            Error::InvalidArgument { .. } => "INVALID_ARGUMENT",
            Error::CountExceedsMax { .. } => "COUNT_EXCEEDS_MAX",
            Error::WaitUnbounded { .. } => "WAIT_UNBOUNDED",
            Error::UnknownLimit { .. } => "UNKNOWN_LIMIT",
            Error::CorruptState { .. } => "CORRUPT_STATE",
            Error::InvalidRandom { .. } => "INVALID_RANDOM",
            Error::RandomUnavailable => "RANDOM_UNAVAILABLE",
            Error::StoreFull { .. } => "STORE_FULL",
            Error::GrantSettled { .. } => "GRANT_SETTLED",
        }
    }

    /// The field or argument the error is about, for `error.field` in JavaScript.
    pub fn field(&self) -> Option<&str> {
        match self {
            Error::InvalidConfig { problem, .. } | Error::InvalidRequest { problem, .. } | Error::InvalidArgument { problem, .. } => {
                Some(&problem.field)
            }
            Error::CountExceedsMax { .. } | Error::WaitUnbounded { .. } => Some("count"),
            Error::InvalidName { .. } | Error::NameTooLong { .. } => Some("name"),
            _ => None,
        }
    }

    /// The message, with numbers printed by `numbers`.
    pub fn message(&self, numbers: &dyn NumberFormat) -> String {
        let mut message = Message::new(numbers);
        let m = &mut message;
        match self {
            Error::InvalidConfig { limit: Some(limit), problem } | Error::InvalidRequest { limit, problem } => {
                m.text("Rate limit ").shown(limit).text(": ");
                problem.write(m);
            }
            Error::InvalidConfig { limit: None, problem } => {
                m.text("Invalid rate limit config: ");
                problem.write(m);
            }
            Error::InvalidArgument { function, problem } => {
                m.text(function).text(": ");
                problem.write(m);
            }
            Error::CountExceedsMax { limit, count, max, shard_count, reserve } => {
                m.text("Rate limit ").text(limit).text(" count ").number(*count).text(" exceeds ");
                if *reserve {
                    m.fixed_2(*max);
                } else {
                    m.number(*max);
                }
                if *shard_count > 1 {
                    m.text(" per ").number(f64::from(*shard_count)).text(" shards.");
                } else {
                    m.text(".");
                }
            }
            Error::InvalidName { got } => {
                m.text("Rate limit name must be a well-formed string (got ");
                got.show(m);
                m.text(")");
            }
            Error::NameTooLong { bytes } => {
                m.text("Rate limit name must be at most 1024 bytes of UTF-8 (got ").number(*bytes as f64).text(" bytes)");
            }
            Error::WaitUnbounded { limit, count } => {
                m.text("Rate limit ").shown(limit).text(": count ").number(*count);
                m.text(" would never be due (its wait is not a finite number of ms); nothing was written");
            }
            Error::UnknownLimit { limit } => {
                m.text("Rate limit ").shown(limit).text(" is not defined: define it in the limits or pass `config` inline.");
            }
            Error::CorruptState { at, problem } => {
                m.text("Stored state for ");
                match at {
                    Place::Stored { name, key, shard } => {
                        m.text("rate limit ").quoted(name);
                        if let Some(key) = key {
                            m.text(" key ").quoted(key);
                        }
                        m.text(" shard ").number(f64::from(*shard));
                    }
                    Place::Passed(function) => {
                        m.text("the state passed to ").text(function);
                    }
                }
                m.text(" is corrupt: ");
                problem.write(m);
            }
            Error::InvalidRandom { got } => {
                m.text("random() must return a number in [0, 1) (got ");
                got.show(m);
                m.text(")");
            }
            Error::StoreFull { max_keys } => {
                m.text("The MemoryStore holds its maxKeys (").number(f64::from(*max_keys));
                m.text(") keys and none has fully refilled; dropping one would hand out tokens, so the call is refused");
            }
            Error::RandomUnavailable => {
                m.text("No random numbers are available in this runtime; pass `random` in the limiter's options");
            }
            Error::GrantSettled { limit } => {
                m.text("Rate limit ").shown(limit).text(": this grant was settled already; a grant settles (or cancels) once, and nothing was written");
            }
        }
        message.finish()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message(&RustNumbers))
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    fn exceeds(count: f64, max: f64, shard_count: u32, reserve: bool) -> String {
        Error::CountExceedsMax { limit: "simple".into(), count, max, shard_count, reserve }.to_string()
    }

    #[test]
    fn count_exceeds_reads_like_the_reference() {
        assert_eq!(exceeds(2.0, 1.0, 1, false), "Rate limit simple count 2 exceeds 1.");
    }

    #[test]
    fn count_exceeds_names_the_shards_when_sharded() {
        assert_eq!(exceeds(9000.0, 8000.0, 10, false), "Rate limit simple count 9000 exceeds 8000 per 10 shards.");
    }

    #[test]
    fn reserved_bound_is_printed_with_two_decimals_like_the_reference() {
        assert_eq!(exceeds(20.0, 15.0, 1, true), "Rate limit simple count 20 exceeds 15.00.");
    }

    #[test]
    fn a_problem_names_the_field_the_rule_and_the_value() {
        let error = Error::request("send", Problem::must_be("count", "a finite number >= 0", -1.0));
        assert_eq!(error.to_string(), "Rate limit \"send\": count must be a finite number >= 0 (got -1)");
        assert_eq!((error.code(), error.field()), ("INVALID_REQUEST", Some("count")));
    }

    #[test]
    fn a_corrupt_state_names_its_ref() {
        let at = Place::Stored { name: "chat".into(), key: Some("a:b".into()), shard: 2 };
        let error = Error::CorruptState { at, problem: Problem::must_be("value", "a finite number", f64::NAN) };
        assert_eq!(
            error.to_string(),
            "Stored state for rate limit \"chat\" key \"a:b\" shard 2 is corrupt: value must be a finite number (got NaN)"
        );
    }
}
