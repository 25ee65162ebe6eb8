//! A grant's numbers, what a settle did, the writes either makes, and the
//! refund rule's bound.

use crate::config::Config;
use crate::error::{Error, Field, Problem, Rule};
use crate::state::State;
use crate::transition::{advance, filled_at};

/// What one shard gave to a grant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GrantShard {
    /// The shard.
    pub shard: u32,
    /// The tokens it gave.
    pub count: f64,
    /// The shard's value right after the charge.
    pub value: f64,
    /// The shard's `ts` right after the charge.
    pub ts: f64,
    /// The shard's refund ledger when the charge was made: all tokens settles had given back to it.
    pub refunded: f64,
}

impl GrantShard {
    pub(super) fn after(&self) -> State {
        State { value: self.value, ts: self.ts }
    }
}

/// A grant's numbers (its name, key and id are the package's): what it
/// charged, when, from which shards, and where its record lives.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Grant {
    /// The tokens charged (the estimate).
    pub count: f64,
    /// The `now` of the charge, in ms.
    pub charged_at_ms: f64,
    /// The shards the tokens came from: one, or two for a sharded request served by both.
    pub shards: [GrantShard; 2],
    /// How many of `shards` are used (1 or 2).
    pub shard_count: usize,
    /// The record's slot, from the grant's id.
    pub slot: u32,
    /// The record's tag, from the grant's id (an integer below 2^34).
    pub tag: f64,
}

impl Grant {
    /// The shards the grant took from.
    pub fn parts(&self) -> &[GrantShard] {
        &self.shards[..self.shard_count.min(2)]
    }

    /// Until when the grant may refund: once every shard it took from would be full again, nothing.
    pub(super) fn refundable_until(&self, shard_config: &Config) -> f64 {
        self.parts().iter().map(|part| filled_at(part.after(), shard_config)).fold(f64::NEG_INFINITY, f64::max)
    }
}

/// What a settle did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settled {
    /// Tokens given back (unused tokens the refund rule allowed).
    pub refunded: f64,
    /// Tokens taken beyond the estimate.
    pub charged: f64,
    /// Tokens used beyond the estimate that `maxReserved` left untaken.
    pub unpaid: f64,
    /// When the extra left the limit in debt: ms until it is paid off.
    pub retry_after_ms: Option<f64>,
}

/// At most six writes: two states, two ledgers, a grant's record.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Writes {
    items: [(u32, State, f64); 6],
    len: usize,
}

impl Default for Writes {
    fn default() -> Self {
        Writes { items: [(0, State { value: 0.0, ts: 0.0 }, 0.0); 6], len: 0 }
    }
}

impl Writes {
    pub(super) fn push(&mut self, shard: u32, state: State, full_at_ms: f64) {
        if self.len < self.items.len() {
            self.items[self.len] = (shard, state, full_at_ms);
            self.len += 1;
        }
    }

    /// `(shard, state, fullAt)` of each write, in order.
    pub fn iter(&self) -> impl Iterator<Item = &(u32, State, f64)> {
        self.items[..self.len].iter()
    }

    /// How many writes there are.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// The most a refund may give back to one shard at `now`: the room that the
/// state the charge left there (`after`) would have now with no traffic
/// since, less `refunded_since`, what other settles gave back to the shard
/// since the charge.
///
/// ```
/// use ratebound::{refund_bound, Config, ConfigInput, State};
/// let config = Config::try_from(&ConfigInput::token_bucket(10.0, 1000.0)).unwrap();
/// let after = State { value: 2.0, ts: 0.0 };
/// assert_eq!(refund_bound(after, &config, 0.0, 0.0), 8.0);
/// assert_eq!(refund_bound(after, &config, 500.0, 0.0), 3.0);
/// assert_eq!(refund_bound(after, &config, 500.0, 1.0), 2.0);
/// assert_eq!(refund_bound(after, &config, 900.0, 0.0), 0.0);
/// ```
pub fn refund_bound(after: State, shard_config: &Config, now_ms: f64, refunded_since: f64) -> f64 {
    (shard_config.capacity - advance(after, shard_config, now_ms, 0.0).value - refunded_since).max(0.0)
}

/// Checks a grant's numbers against the limit it names, and `actual`.
pub(super) fn check_grant(grant: &Grant, config: &Config, actual: f64) -> Result<(), Error> {
    let wrong = |field, rule, got| Err(Error::request(field, rule, got));
    if config.kind == crate::config::Kind::SlidingWindow {
        return Err(crate::sliding_window::two_windows());
    }
    if !(actual.is_finite() && actual >= 0.0) {
        return wrong(Field::Actual, Rule::FiniteNonNegative, actual);
    }
    if !(grant.count.is_finite() && grant.count >= 0.0) {
        return wrong(Field::GrantCount, Rule::FiniteNonNegative, grant.count);
    }
    if !grant.charged_at_ms.is_finite() {
        return wrong(Field::GrantChargedAt, Rule::FiniteMs, grant.charged_at_ms);
    }
    if !(1..=2).contains(&grant.shard_count) {
        return wrong(Field::GrantShards, Rule::OneOrTwoShards, grant.shard_count as f64);
    }
    for (index, part) in grant.parts().iter().enumerate() {
        if part.shard >= config.shard_count || (index == 1 && part.shard == grant.shards[0].shard) {
            let numbers = [f64::from(part.shard), f64::from(config.shard_count), f64::NAN];
            return Err(Error::InvalidRequest(Problem::with_numbers(Field::GrantShards, Rule::GrantShard, numbers)));
        }
        if !(part.count.is_finite() && part.count >= 0.0) {
            return wrong(Field::GrantShardCount, Rule::FiniteNonNegative, part.count);
        }
        if !(part.refunded.is_finite() && part.refunded >= 0.0) {
            return wrong(Field::GrantShardRefunded, Rule::FiniteNonNegative, part.refunded);
        }
        if !(part.value.is_finite() && part.ts.is_finite()) {
            return wrong(Field::GrantShardValue, Rule::Finite, if part.value.is_finite() { part.ts } else { part.value });
        }
    }
    Ok(())
}
