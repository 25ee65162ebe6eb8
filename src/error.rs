//! The one error type. "Limited, retry in N ms" is not an error: it is a
//! [`RateLimitResult`](crate::RateLimitResult). Errors are for requests that
//! can never succeed and for bad input, and each has a stable [`Error::code`].

use std::fmt;

use crate::js_number::{js_fixed_2, js_number};

/// Why a call failed, as opposed to being refused.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// A limit's configuration is invalid (checked once, when it is defined).
    InvalidConfig {
        /// The limit's name; `None` for a config passed to `calculateRateLimit`.
        limit: Option<String>,
        /// The offending field, or `"config"` for the object as a whole.
        field: String,
        /// What is wrong, naming the value that was given.
        problem: String,
    },
    /// An option of one call (`count`, `key`, `sampleShards`, `now`, …) is invalid.
    InvalidRequest {
        /// The limit's name.
        limit: String,
        /// The offending option.
        field: String,
        /// What is wrong, naming the value that was given.
        problem: String,
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
        /// The value given, described.
        got: String,
    },
    /// No limit of that name was defined and no config was passed inline.
    UnknownLimit {
        /// The name that was asked for.
        limit: String,
    },
    /// A stored state is not two finite numbers.
    CorruptState {
        /// The state's reference, described for people.
        reference: String,
        /// What is wrong, naming the value that was found.
        problem: String,
    },
    /// The injected random source returned something that is not in `[0, 1)`.
    InvalidRandom {
        /// The value it returned, described.
        got: String,
    },
    /// A MemoryStore holds `max_keys` keys and none has fully refilled, so
    /// none can be dropped without handing out tokens: the call fails closed.
    StoreFull {
        /// The store's `maxKeys`.
        max_keys: u32,
    },
    /// The runtime has no source of random numbers (and none was injected).
    RandomUnavailable {
        /// What the runtime said.
        reason: String,
    },
}

impl Error {
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
            Error::InvalidRequest { .. } => "INVALID_REQUEST",
            Error::CountExceedsMax { .. } => "COUNT_EXCEEDS_MAX",
            Error::UnknownLimit { .. } => "UNKNOWN_LIMIT",
            Error::InvalidName { .. } => "INVALID_REQUEST",
            Error::CorruptState { .. } => "CORRUPT_STATE",
            Error::InvalidRandom { .. } => "INVALID_RANDOM",
            Error::RandomUnavailable { .. } => "RANDOM_UNAVAILABLE",
            Error::StoreFull { .. } => "STORE_FULL",
        }
    }

    /// The limit's name or the config field the error is about, for `error.field` in JavaScript.
    pub fn field(&self) -> Option<&str> {
        match self {
            Error::InvalidConfig { field, .. } | Error::InvalidRequest { field, .. } => Some(field),
            Error::CountExceedsMax { .. } => Some("count"),
            Error::InvalidName { .. } => Some("name"),
            _ => None,
        }
    }

    pub(crate) fn request(limit: &str, field: &str, problem: impl Into<String>) -> Error {
        Error::InvalidRequest { limit: limit.into(), field: field.into(), problem: problem.into() }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidConfig { limit: Some(limit), problem, .. } => {
                write!(f, "Rate limit {}: {problem}", shown(limit))
            }
            Error::InvalidConfig { limit: None, problem, .. } => write!(f, "Invalid rate limit config: {problem}"),
            Error::InvalidRequest { limit, problem, .. } => {
                write!(f, "Rate limit {}: {problem}", shown(limit))
            }
            Error::CountExceedsMax { limit, count, max, shard_count, reserve } => {
                let max = if *reserve { js_fixed_2(*max) } else { js_number(*max) };
                write!(f, "Rate limit {limit} count {} exceeds {max}", js_number(*count))?;
                if *shard_count > 1 {
                    write!(f, " per {shard_count} shards.")
                } else {
                    write!(f, ".")
                }
            }
            Error::InvalidName { got } => write!(f, "Rate limit name must be a well-formed string (got {got})"),
            Error::UnknownLimit { limit } => write!(
                f,
                "Rate limit {} is not defined: define it in the limits or pass `config` inline.",
                shown(limit)
            ),
            Error::CorruptState { reference, problem } => {
                write!(f, "Stored state for {reference} is corrupt: {problem}")
            }
            Error::InvalidRandom { got } => {
                write!(f, "random() must return a number in [0, 1) (got {got})")
            }
            Error::StoreFull { max_keys } => write!(
                f,
                "The MemoryStore holds its maxKeys ({max_keys}) keys and none has fully refilled; dropping one would hand out tokens, so the call is refused"
            ),
            Error::RandomUnavailable { reason } => {
                write!(f, "No random numbers are available in this runtime ({reason}); pass `random` in the limiter's options")
            }
        }
    }
}

impl std::error::Error for Error {}

/// A caller's name as an error message shows it: quoted, and cut after 64
/// characters so that a huge name never makes a huge message.
pub(crate) fn shown(text: &str) -> String {
    let length = text.chars().count();
    if length <= 64 {
        return quoted(text);
    }
    let head: String = text.chars().take(64).collect();
    format!("{}… ({length} characters)", quoted(&head))
}

/// A string as a JSON string literal, so that empty names and odd characters stay visible.
pub(crate) fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_exceeds_reads_like_the_reference() {
        let error = Error::CountExceedsMax {
            limit: "simple".into(),
            count: 2.0,
            max: 1.0,
            shard_count: 1,
            reserve: false,
        };
        assert_eq!(error.to_string(), "Rate limit simple count 2 exceeds 1.");
    }

    #[test]
    fn count_exceeds_names_the_shards_when_sharded() {
        let error = Error::CountExceedsMax {
            limit: "llm".into(),
            count: 9000.0,
            max: 8000.0,
            shard_count: 10,
            reserve: false,
        };
        assert_eq!(error.to_string(), "Rate limit llm count 9000 exceeds 8000 per 10 shards.");
    }

    #[test]
    fn reserved_bound_is_printed_with_two_decimals_like_the_reference() {
        let error = Error::CountExceedsMax {
            limit: "r".into(),
            count: 20.0,
            max: 15.0,
            shard_count: 1,
            reserve: true,
        };
        assert_eq!(error.to_string(), "Rate limit r count 20 exceeds 15.00.");
    }

    #[test]
    fn quoting_keeps_empty_and_control_characters_visible() {
        assert_eq!(quoted(""), "\"\"");
        assert_eq!(quoted("a\"b\n"), "\"a\\\"b\\n\"");
    }
}
