//! The one error type. "Limited, retry in N ms" is not an error: it is a
//! [`RateLimitResult`](crate::RateLimitResult). Errors are for requests that
//! can never succeed and for bad input. They carry values, never text: each
//! has a stable [`Error::code`], and the package builds its message from the
//! code, the field, the rule and the numbers here (`ts/core/errors.ts`), so
//! the WebAssembly carries no formatter and no allocator.

/// The config field, call argument or grant field an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Field {
    Kind = 1,
    Rate = 2,
    Period = 3,
    Capacity = 4,
    MaxReserved = 5,
    Shards = 6,
    Start = 7,
    Count = 8,
    Reserve = 9,
    Now = 10,
    SampleShards = 11,
    Actual = 12,
    GrantCount = 13,
    GrantChargedAt = 14,
    GrantShards = 15,
    GrantShardCount = 16,
    GrantShardRefunded = 17,
    GrantShardValue = 18,
    RetryAfter = 19,
    MaxJitter = 20,
    Max = 21,
    Lease = 22,
    LeaseId = 23,
    LeaseSlots = 24,
}

impl Field {
    /// Every field, in the order of their numbers (from 1).
    pub const ALL: [Field; 24] = [
        Field::Kind,
        Field::Rate,
        Field::Period,
        Field::Capacity,
        Field::MaxReserved,
        Field::Shards,
        Field::Start,
        Field::Count,
        Field::Reserve,
        Field::Now,
        Field::SampleShards,
        Field::Actual,
        Field::GrantCount,
        Field::GrantChargedAt,
        Field::GrantShards,
        Field::GrantShardCount,
        Field::GrantShardRefunded,
        Field::GrantShardValue,
        Field::RetryAfter,
        Field::MaxJitter,
        Field::Max,
        Field::Lease,
        Field::LeaseId,
        Field::LeaseSlots,
    ];

    /// The field as the package's messages and `error.field` name it.
    pub fn name(self) -> &'static str {
        match self {
            Field::Kind => "kind",
            Field::Rate => "rate",
            Field::Period => "period",
            Field::Capacity => "capacity",
            Field::MaxReserved => "maxReserved",
            Field::Shards => "shards",
            Field::Start => "start",
            Field::Count => "count",
            Field::Reserve => "reserve",
            Field::Now => "now",
            Field::SampleShards => "sampleShards",
            Field::Actual => "actual",
            Field::GrantCount => "grant.count",
            Field::GrantChargedAt => "grant.chargedAt",
            Field::GrantShards => "grant.shards",
            Field::GrantShardCount => "grant.shards.count",
            Field::GrantShardRefunded => "grant.shards.refunded",
            Field::GrantShardValue => "grant.shards.value",
            Field::RetryAfter => "retryAfter",
            Field::MaxJitter => "maxJitter",
            Field::Max => "max",
            Field::Lease => "lease",
            Field::LeaseId => "lease.id",
            Field::LeaseSlots => "lease.slots",
        }
    }
}

/// What a field must be: each rule is one sentence of the package's messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Rule {
    /// "a number"
    Number = 1,
    /// "a positive finite number"
    PositiveFinite = 2,
    /// "a finite number >= 0"
    FiniteNonNegative = 3,
    /// "an integer from 1 to 1024"
    ShardRange = 4,
    /// "null or absent for a token bucket"
    StartOfBucket = 5,
    /// "a number of ms within ±9007199254740992 (2^53)"
    StartOfWindow = 6,
    /// "\"token bucket\", \"fixed window\" or \"sliding window\""
    KindName = 7,
    /// rate / period per shard is not a positive finite number (numbers: rate, period, shards)
    RefillPerShard = 8,
    /// "a finite number of ms"
    FiniteMs = 9,
    /// the period is below the clock's resolution at now (numbers: period, now, resolution)
    ClockResolution = 10,
    /// "an integer >= 1"
    IntegerAtLeastOne = 11,
    /// the state would leave the range of numbers (numbers: value, ts)
    Unstorable = 12,
    /// the grant names a shard this limit does not have (numbers: shard, shard count)
    GrantShard = 13,
    /// "one or two shards"
    OneOrTwoShards = 14,
    /// "a finite number"
    Finite = 15,
    /// "the limit's own in code" (a stored limit changes rate, period, capacity and maxReserved only)
    SameAsCode = 16,
    /// "an integer from 1 to 64" (a concurrency limit's `max`)
    ConcurrencyMax = 17,
    /// "an integer from 1 to 9007199254740992 (2^53)" (a lease's id)
    LeaseIdRange = 18,
    /// the lease is below the clock's resolution at now (numbers: lease, now, resolution)
    LeaseResolution = 19,
    /// the lease names a slot the limit does not have, or one twice (numbers: slot, max)
    LeaseSlot = 20,
    /// "absent for a sliding window"
    AbsentForSlidingWindow = 21,
    /// a sliding window decides on two windows' states: no one-state transition, no grants
    TwoWindows = 22,
    /// "a positive finite number of ms, or \"day\", \"week\", \"month\" or \"year\""
    PeriodName = 23,
    /// "a number of ms for a token bucket or a sliding window (calendar periods are for fixed windows)"
    CalendarOfBucket = 24,
    /// "1 for a calendar period"
    CalendarShards = 25,
    /// "a number of ms within ±9007199254740992 (2^53) for a calendar period"
    CalendarInstant = 26,
}

/// How a rule reads in a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wording {
    /// What the field must be: the message is "{field} must be {phrase} (got {what was given})".
    MustBe(&'static str),
    /// The whole problem, its numbers as `{0}`, `{1}`, `{2}` (shown as JavaScript shows numbers).
    Sentence(&'static str),
}

impl Rule {
    /// Every rule, in the order of their numbers (from 1).
    pub const ALL: [Rule; 26] = [
        Rule::Number,
        Rule::PositiveFinite,
        Rule::FiniteNonNegative,
        Rule::ShardRange,
        Rule::StartOfBucket,
        Rule::StartOfWindow,
        Rule::KindName,
        Rule::RefillPerShard,
        Rule::FiniteMs,
        Rule::ClockResolution,
        Rule::IntegerAtLeastOne,
        Rule::Unstorable,
        Rule::GrantShard,
        Rule::OneOrTwoShards,
        Rule::Finite,
        Rule::SameAsCode,
        Rule::ConcurrencyMax,
        Rule::LeaseIdRange,
        Rule::LeaseResolution,
        Rule::LeaseSlot,
        Rule::AbsentForSlidingWindow,
        Rule::TwoWindows,
        Rule::PeriodName,
        Rule::CalendarOfBucket,
        Rule::CalendarShards,
        Rule::CalendarInstant,
    ];

    /// The rule's words in the package's messages (`ts/core/errors.ts` has them, generated).
    pub fn wording(self) -> Wording {
        match self {
            Rule::Number => Wording::MustBe("a number"),
            Rule::PositiveFinite => Wording::MustBe("a positive finite number"),
            Rule::FiniteNonNegative => Wording::MustBe("a finite number >= 0"),
            Rule::ShardRange => Wording::MustBe("an integer from 1 to 1024"),
            Rule::StartOfBucket => Wording::MustBe("null or absent for a token bucket"),
            Rule::StartOfWindow => Wording::MustBe("a number of ms within ±9007199254740992 (2^53)"),
            Rule::KindName => Wording::MustBe("\"token bucket\", \"fixed window\" or \"sliding window\""),
            Rule::RefillPerShard => {
                Wording::Sentence("rate / period must be a positive finite number of tokens per ms for each shard (got rate {0}, period {1}, shards {2})")
            }
            Rule::FiniteMs => Wording::MustBe("a finite number of ms"),
            Rule::ClockResolution => {
                Wording::Sentence("period must be at least the clock's resolution at now (got period {0} ms, now {1}, whose resolution is {2} ms)")
            }
            Rule::IntegerAtLeastOne => Wording::MustBe("an integer >= 1"),
            Rule::Unstorable => Wording::Sentence("the limit's state would leave the range of numbers (value {0}, ts {1}); nothing was written"),
            Rule::GrantShard => Wording::Sentence("the grant names shard {0}, which is not another shard of this limit (it has {1})"),
            Rule::OneOrTwoShards => Wording::MustBe("one or two shards"),
            Rule::Finite => Wording::MustBe("a finite number"),
            Rule::SameAsCode => Wording::MustBe("the limit's own in code: a stored limit changes rate, period, capacity and maxReserved only"),
            Rule::ConcurrencyMax => Wording::MustBe("an integer from 1 to 64"),
            Rule::LeaseIdRange => Wording::MustBe("an integer from 1 to 9007199254740992 (2^53)"),
            Rule::LeaseResolution => {
                Wording::Sentence("lease must be at least the clock's resolution at now (got lease {0} ms, now {1}, whose resolution is {2} ms)")
            }
            Rule::LeaseSlot => Wording::Sentence("the lease names slot {0} twice or one this limit does not have (it has {1})"),
            Rule::AbsentForSlidingWindow => Wording::MustBe("absent for a sliding window"),
            Rule::TwoWindows => Wording::MustBe(
                "\"token bucket\" or \"fixed window\" for calculateRateLimit and grants (a sliding window decides on two windows' states: use limit, check or getValue)",
            ),
            Rule::PeriodName => Wording::MustBe("a positive finite number of ms, or \"day\", \"week\", \"month\" or \"year\""),
            Rule::CalendarOfBucket => Wording::MustBe("a number of ms for a token bucket or a sliding window (calendar periods are for fixed windows)"),
            Rule::CalendarShards => Wording::MustBe("1 for a calendar period"),
            Rule::CalendarInstant => Wording::MustBe("a number of ms within ±9007199254740992 (2^53) for a calendar period"),
        }
    }
}

/// What is wrong with one field, with up to three numbers for the message.
/// Two are equal when their numbers are the same values (NaN equals NaN:
/// what was given, not arithmetic).
#[derive(Debug, Clone, Copy)]
pub struct Problem {
    /// The field or argument.
    pub field: Field,
    /// The rule it breaks.
    pub rule: Rule,
    /// Numbers the message shows (what was given first).
    pub numbers: [f64; 3],
}

impl PartialEq for Problem {
    fn eq(&self, other: &Self) -> bool {
        let same = |a: f64, b: f64| a.to_bits() == b.to_bits();
        self.field == other.field && self.rule == other.rule && self.numbers.iter().zip(other.numbers).all(|(a, b)| same(*a, b))
    }
}

impl Problem {
    /// `field` breaks `rule`; `got` is what was given (NaN when it was not a number).
    pub fn new(field: Field, rule: Rule, got: f64) -> Problem {
        Problem { field, rule, numbers: [got, f64::NAN, f64::NAN] }
    }

    /// `field` breaks `rule`, with three numbers for the message.
    pub fn with_numbers(field: Field, rule: Rule, numbers: [f64; 3]) -> Problem {
        Problem { field, rule, numbers }
    }
}

/// Why a call failed, as opposed to being refused.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Error {
    /// A limit's configuration is invalid (checked once, when it is compiled).
    InvalidConfig(Problem),
    /// An argument of one call (`count`, `now`, `sampleShards`, a grant's data…) is invalid.
    InvalidRequest(Problem),
    /// The request asks for more than the limit can ever grant.
    CountExceedsMax {
        /// Tokens asked for.
        count: f64,
        /// The most one request can get (per shard factor, reservations included).
        max: f64,
        /// The limit's shard count.
        shard_count: u32,
        /// Whether the request reserved (the reference prints that bound with two decimals).
        reserve: bool,
    },
    /// A wait no clock could keep: a reservation (or a settle's extra) so
    /// large, without `maxReserved`, that it would never be due.
    WaitUnbounded {
        /// Tokens asked for.
        count: f64,
    },
    /// The random source returned something that is not in `[0, 1)`.
    InvalidRandom {
        /// The value it returned.
        got: f64,
    },
    /// A grant was settled (or cancelled) already: a second settle would give
    /// its tokens back twice.
    GrantSettled,
    /// A lease to extend holds no slot any more: it expired, was released,
    /// or was never this limit's. Nothing was written; the work it guarded
    /// no longer holds a slot.
    LeaseLost,
}

impl Error {
    /// A stable identifier for the kind of error, carried to JavaScript as `error.code`.
    ///
    /// ```
    /// use ratebound::Error;
    /// assert_eq!(Error::GrantSettled.code(), "GRANT_SETTLED");
    /// ```
    pub fn code(&self) -> &'static str {
        Error::CODES[usize::from(self.number())]
    }

    /// The codes by number (0: none), as `ts/core/errors.ts` has them (generated).
    pub const CODES: [&'static str; 8] =
        ["", "INVALID_CONFIG", "INVALID_REQUEST", "COUNT_EXCEEDS_MAX", "WAIT_UNBOUNDED", "INVALID_RANDOM", "GRANT_SETTLED", "LEASE_LOST"];

    /// The error's number across the boundary (its code is `CODES[number]`).
    pub fn number(&self) -> u8 {
        match self {
            Error::InvalidConfig(_) => 1,
            Error::InvalidRequest(_) => 2,
            Error::CountExceedsMax { .. } => 3,
            Error::WaitUnbounded { .. } => 4,
            Error::InvalidRandom { .. } => 5,
            Error::GrantSettled => 6,
            Error::LeaseLost => 7,
        }
    }

    /// An invalid argument of a call.
    pub fn request(field: Field, rule: Rule, got: f64) -> Error {
        Error::InvalidRequest(Problem::new(field, rule, got))
    }

    /// An invalid config field.
    pub fn config(field: Field, rule: Rule, got: f64) -> Error {
        Error::InvalidConfig(Problem::new(field, rule, got))
    }

    /// The problem, for the errors that are about one field.
    pub fn problem(&self) -> Option<Problem> {
        match self {
            Error::InvalidConfig(problem) | Error::InvalidRequest(problem) => Some(*problem),
            _ => None,
        }
    }

    /// The field the error is about, when there is one.
    pub fn field(&self) -> Option<Field> {
        match self {
            Error::InvalidConfig(problem) | Error::InvalidRequest(problem) => Some(problem.field),
            Error::CountExceedsMax { .. } | Error::WaitUnbounded { .. } => Some(Field::Count),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_has_a_distinct_code_and_number() {
        let problem = Problem::new(Field::Rate, Rule::PositiveFinite, -1.0);
        let all = [
            Error::InvalidConfig(problem),
            Error::InvalidRequest(problem),
            Error::CountExceedsMax { count: 2.0, max: 1.0, shard_count: 1, reserve: false },
            Error::WaitUnbounded { count: 1e308 },
            Error::InvalidRandom { got: 1.0 },
            Error::GrantSettled,
            Error::LeaseLost,
        ];
        for (index, error) in all.iter().enumerate() {
            for other in &all[index + 1..] {
                assert_ne!(error.code(), other.code());
                assert_ne!(error.number(), other.number());
            }
        }
    }

    #[test]
    fn every_field_and_rule_is_listed_at_its_number() {
        for (index, field) in Field::ALL.iter().enumerate() {
            assert_eq!(*field as usize, index + 1);
        }
        for (index, rule) in Rule::ALL.iter().enumerate() {
            assert_eq!(*rule as usize, index + 1);
        }
        // The last variants: nothing past the tables (a new variant must join them, or these fail).
        assert_eq!(Field::ALL.len(), Field::LeaseSlots as usize);
        assert_eq!(Rule::ALL.len(), Rule::CalendarInstant as usize);
    }

    #[test]
    fn a_problem_keeps_what_was_given_first() {
        let error = Error::request(Field::Count, Rule::FiniteNonNegative, -1.0);
        assert_eq!(error.field(), Some(Field::Count));
        assert_eq!(error.problem().map(|problem| problem.numbers[0]), Some(-1.0));
        assert_eq!(error.code(), "INVALID_REQUEST");
    }
}
