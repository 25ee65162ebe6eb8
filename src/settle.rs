//! Grants that settle to what was really used. A grant remembers what it
//! took from each shard and the state it left there; settling gives back
//! what was not used, within the refund rule, or takes what was used beyond
//! the estimate, as a reservation would.
//!
//! The refund rule: a refund to a shard is at most
//! `capacity - project(after, now) - refundedSince`: the room that the state
//! the charge left (`after`) would have now with no traffic since, less what
//! other settles gave back to that shard since the charge. Charges only lower
//! a state, refunds raise it by what they gave, and a cap only ever cuts what
//! a charge took back, so a limit that never saw the unused tokens holds at
//! least that much more than this one: a refund never raises a limit above
//! what it would have been had the unused tokens never been charged
//! (`tests/settle_properties.rs` checks it against such a model). At the
//! charge's instant (token bucket) or within its window (fixed window) with
//! no other refunds, that is the whole unused amount; once the limit would
//! have refilled since the charge it is nothing.
//!
//! What other settles gave back lives beside the state, in a running total
//! per shard (the refund ledger); a grant records the total when it is
//! charged. The ledger and the record that a grant was settled are kept only
//! while some grant could still be refunded, and stores drop them after.

use serde::Serialize;
use tsify::Tsify;

use crate::config::Config;
use crate::decision::decide;
use crate::error::{Error, Part, Problem};
use crate::limiter::{check_writes, decide_and_write, draw, read, BatchItem, Outcome};
use crate::result::RateLimitResult;
use crate::request::{check_call, Request};
use crate::state::{State, StateRef, StateStore, WriteInfo};
use crate::transition::{advance, filled_at, full_at, initial_state};

/// What one shard gave to a grant.
#[derive(Tsify, Serialize, Debug, Clone, Copy, PartialEq)]
#[tsify(rename = "GrantShard")]
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
    fn after(&self) -> State {
        State { value: self.value, ts: self.ts }
    }
}

/// A grant's serialisable form: settle it in another request, a queue
/// consumer or a scheduled function with `limiter.settle(data, actual)`.
#[derive(Tsify, Serialize, Debug, Clone, PartialEq)]
#[tsify(rename = "GrantData")]
pub struct Grant {
    /// The limit's name.
    pub name: String,
    /// The key, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[tsify(optional)]
    pub key: Option<String>,
    /// Tells this grant from others of the same key (hex: the charge's ms, then 64 random bits).
    pub id: String,
    /// The tokens charged (the estimate).
    pub count: f64,
    /// The `now` of the charge, in ms.
    #[serde(rename = "chargedAt")]
    pub charged_at_ms: f64,
    /// The shards the tokens came from (one, or two for a sharded request served by both).
    pub shards: Vec<GrantShard>,
}

/// What a settle did.
#[derive(Tsify, Serialize, Debug, Clone, Copy, PartialEq)]
#[tsify(rename = "SettleResult")]
pub struct Settled {
    /// Tokens given back (unused tokens the refund rule allowed).
    pub refunded: f64,
    /// Tokens taken beyond the estimate.
    pub charged: f64,
    /// Tokens used beyond the estimate that `maxReserved` left untaken.
    pub unpaid: f64,
    /// When the extra left the limit in debt: ms until it is paid off.
    #[serde(rename = "retryAfter", skip_serializing_if = "Option::is_none")]
    #[tsify(optional)]
    pub retry_after_ms: Option<f64>,
}

/// The most a refund may give back to one shard at `now`: the room that the
/// state the charge left there (`after`) would have now with no traffic
/// since, less `refunded_since`, what other settles gave back to the shard
/// since the charge.
///
/// ```
/// use ratebound::{refund_bound, Config, RawConfig, State};
/// let config = Config::try_from(&RawConfig::token_bucket(10.0, 1000.0)).unwrap();
/// let after = State { value: 2.0, ts: 0.0 };
/// assert_eq!(refund_bound(after, &config, 0.0, 0.0), 8.0);
/// assert_eq!(refund_bound(after, &config, 500.0, 0.0), 3.0);
/// assert_eq!(refund_bound(after, &config, 500.0, 1.0), 2.0);
/// assert_eq!(refund_bound(after, &config, 900.0, 0.0), 0.0);
/// ```
pub fn refund_bound(after: State, shard_config: &Config, now_ms: f64, refunded_since: f64) -> f64 {
    (shard_config.capacity - advance(after, shard_config, now_ms, 0.0).value - refunded_since).max(0.0)
}

/// Where a shard's refund ledger lives: `value` is every token settles gave
/// back to it, `ts` the instant until which some grant may still read it.
fn ledger_key(key: Option<&str>) -> String {
    format!("ratebound:refunded:{}", key.unwrap_or(""))
}

/// [`limit`](crate::limit), with the grant's handle when it was granted.
///
/// # Errors
/// As [`limit`](crate::limit), and the random source's (the grant's id draws two numbers).
pub async fn limit_with_grant<S: StateStore>(
    store: &mut S,
    item: BatchItem<'_>,
    now_ms: f64,
    random: &mut impl FnMut() -> Result<f64, Error>,
) -> Result<(RateLimitResult, Option<Grant>), S::Error> {
    let outcome = decide_and_write(store, item, now_ms, random, true).await?;
    let Some(mut grant) = grant_of(item, &outcome, now_ms, random)? else {
        return Ok((outcome.result, None));
    };
    let shard_config = item.config.per_shard();
    let ledger = ledger_key(item.key);
    for part in &mut grant.shards {
        let at = StateRef { name: item.name, key: Some(&ledger), shard: part.shard };
        let found = store.read(at).await?;
        part.refunded = found.map_or(0.0, |state| state.value);
        // The ledger is kept until this grant's refund window closes, at least.
        let keep_until = found.map_or(f64::NEG_INFINITY, |state| state.ts).max(filled_at(part.after(), &shard_config));
        if keep_until > now_ms && found.is_none_or(|state| state.ts < keep_until) {
            let info = WriteInfo { now_ms, full_at_ms: keep_until };
            store.write(at, Some(State { value: part.refunded, ts: keep_until }), info).await?;
        }
    }
    Ok((outcome.result, Some(grant)))
}

/// `value + give`, at most `capacity`, rounded down where rounding would
/// otherwise give back an ulp more than `give`.
fn raised(value: f64, give: f64, capacity: f64) -> f64 {
    let mut raised = (value + give).min(capacity).max(value);
    while raised - value > give {
        raised = raised.next_down();
    }
    raised
}

/// The handle of a granted decision, or `None` when it was refused.
fn grant_of(
    item: BatchItem<'_>,
    outcome: &Outcome,
    now_ms: f64,
    random: &mut impl FnMut() -> Result<f64, Error>,
) -> Result<Option<Grant>, Error> {
    if !outcome.result.is_ok() {
        return Ok(None);
    }
    let shards = outcome
        .writes
        .iter()
        .zip(outcome.shares)
        .filter_map(|(write, count)| write.map(|(shard, after)| GrantShard { shard, count, value: after.value, ts: after.ts, refunded: 0.0 }))
        .collect();
    let bits = |unit: f64| (unit * 4_294_967_296.0) as u32;
    let id = format!("{:x}.{:08x}{:08x}", now_ms.max(0.0) as u64, bits(draw(random)?), bits(draw(random)?));
    Ok(Some(Grant {
        name: item.name.into(),
        key: item.key.map(Into::into),
        id,
        count: item.request.count,
        charged_at_ms: now_ms,
        shards,
    }))
}

/// Where the record that a grant was settled lives while a second settle
/// could still give tokens back.
fn settled_key(grant: &Grant) -> String {
    format!("ratebound:settled:{}:{}", grant.id, grant.key.as_deref().unwrap_or(""))
}

/// Checks a grant's data against the limit it names.
fn check_grant(grant: &Grant, config: &Config, actual: f64) -> Result<(), Error> {
    let name = grant.name.as_str();
    let wrong = |field: &str, rule: &'static str, got: f64| Err(Error::request(name, Problem::must_be(field, rule, got)));
    if !(actual.is_finite() && actual >= 0.0) {
        return wrong("actual", "a finite number >= 0", actual);
    }
    if grant.id.is_empty() || grant.id.len() > 64 {
        return Err(Error::request(name, Problem::must_be("grant.id", "a grant's id (1 to 64 characters)", grant.id.as_str())));
    }
    if !(grant.count.is_finite() && grant.count >= 0.0) {
        return wrong("grant.count", "a finite number >= 0", grant.count);
    }
    if !grant.charged_at_ms.is_finite() {
        return wrong("grant.chargedAt", "a finite number of ms", grant.charged_at_ms);
    }
    if grant.shards.is_empty() || grant.shards.len() > 2 {
        return wrong("grant.shards", "one or two shards", grant.shards.len() as f64);
    }
    for (index, part) in grant.shards.iter().enumerate() {
        if part.shard >= config.shard_count || (index == 1 && part.shard == grant.shards[0].shard) {
            let parts = vec![
                Part::Text("the grant names shard "),
                Part::Number(f64::from(part.shard)),
                Part::Text(", which is not another shard of this limit (it has "),
                Part::Number(f64::from(config.shard_count)),
                Part::Text(")"),
            ];
            return Err(Error::request(name, Problem::parts("grant.shards", parts)));
        }
        if !(part.count.is_finite() && part.count >= 0.0) {
            return wrong("grant.shards.count", "a finite number >= 0", part.count);
        }
        if !(part.refunded.is_finite() && part.refunded >= 0.0) {
            return wrong("grant.shards.refunded", "a finite number >= 0", part.refunded);
        }
        if !(part.value.is_finite() && part.ts.is_finite()) {
            return wrong("grant.shards.value", "a finite number", if part.value.is_finite() { part.ts } else { part.value });
        }
    }
    Ok(())
}

/// Settles `grant` at `actual` tokens: gives back the unused part within
/// the refund rule ([`refund_bound`]), or takes the extra as a reservation,
/// into debt no deeper than `maxReserved`. A grant settles once: a second
/// settle is [`Error::GrantSettled`] while it could still give tokens back.
///
/// # Errors
/// A bad `actual` or grant, a grant settled already, a corrupt stored
/// state, or the store's error; in every case nothing is written.
pub async fn settle<S: StateStore>(
    store: &mut S,
    grant: &Grant,
    config: &Config,
    actual: f64,
    now_ms: f64,
    random: &mut impl FnMut() -> Result<f64, Error>,
) -> Result<Settled, S::Error> {
    let (name, key) = (grant.name.as_str(), grant.key.as_deref());
    check_call(name, key, config, now_ms)?;
    check_grant(grant, config, actual)?;
    let settled_key = settled_key(grant);
    let record = StateRef { name, key: Some(&settled_key), shard: 0 };
    if store.read(record).await?.is_some() {
        return Err(Error::GrantSettled { limit: name.into() }.into());
    }
    let shard_config = config.per_shard();
    let given: f64 = grant.shards.iter().map(|part| part.count).sum();
    let unused = (grant.count - actual).max(0.0);
    let extra = (actual - grant.count).max(0.0);
    let mut settled = Settled { refunded: 0.0, charged: 0.0, unpaid: 0.0, retry_after_ms: None };
    let mut writes = Vec::with_capacity(2);
    let mut ledgers = Vec::with_capacity(2);
    let ledger = ledger_key(key);
    for (index, part) in grant.shards.iter().enumerate() {
        let proportion = match given > 0.0 {
            true => part.count / given,
            false => f64::from(u8::from(index == 0)),
        };
        let at = StateRef { name, key, shard: part.shard };
        let current = match read(store, at).await? {
            Some(state) => state,
            None => initial_state(&shard_config, now_ms, || draw(random))?,
        };
        let now = advance(current, &shard_config, now_ms, 0.0);
        let ledger_at = StateRef { name, key: Some(&ledger), shard: part.shard };
        let ledger_state = store.read(ledger_at).await?;
        // A ledger that is gone or went back (deleted by hand) hides what
        // was given back since: give nothing rather than guess.
        let bound = match ledger_state {
            Some(state) if state.value >= part.refunded => refund_bound(part.after(), &shard_config, now_ms, state.value - part.refunded),
            _ => 0.0,
        };
        let give = (unused * proportion).min(part.count).min(bound);
        let mut next = State { value: raised(now.value, give, shard_config.capacity), ts: now.ts };
        let given_back = next.value - now.value;
        settled.refunded += given_back;
        let mut changed = given_back > 0.0;
        let wanted = extra * proportion;
        if wanted > 0.0 {
            let take = match shard_config.max_reserved {
                Some(max_reserved) => wanted.min((next.value + max_reserved).max(0.0)),
                None => wanted,
            };
            let taken = decide(next, &shard_config, now_ms, Request { count: take, reserve: true });
            if !taken.ok {
                return Err(Error::WaitUnbounded { limit: name.into(), count: actual }.into());
            }
            next = taken.next;
            changed |= take > 0.0;
            settled.charged += take;
            settled.retry_after_ms = match (settled.retry_after_ms, taken.retry_after_ms) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
        }
        if changed {
            writes.push((part.shard, next));
        }
        if let (Some(state), true) = (ledger_state, given_back > 0.0) {
            ledgers.push((part.shard, State { value: state.value + given_back, ts: state.ts }));
        }
    }
    settled.unpaid = (extra - settled.charged).max(0.0);
    check_writes(name, writes.iter().map(|(_, state)| state))?;
    for (shard, state) in writes {
        let info = WriteInfo { now_ms, full_at_ms: full_at(state, &shard_config) };
        store.write(StateRef { name, key, shard }, Some(state), info).await?;
    }
    for (shard, state) in ledgers {
        let info = WriteInfo { now_ms, full_at_ms: state.ts };
        store.write(StateRef { name, key: Some(&ledger), shard }, Some(state), info).await?;
    }
    // Kept while a second settle could still give tokens back; after that
    // the refund rule gives nothing, and the store may drop the record.
    let refundable_until = grant.shards.iter().map(|part| filled_at(part.after(), &shard_config)).fold(f64::NEG_INFINITY, f64::max);
    if refundable_until > now_ms {
        let info = WriteInfo { now_ms, full_at_ms: refundable_until };
        store.write(record, Some(State { value: 0.0, ts: now_ms }), info).await?;
    }
    Ok(settled)
}
