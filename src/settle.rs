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
//! (`tests/settle_properties.rs` checks it against such a model).
//!
//! A refund needs proof that the charge committed: the grant's record, which
//! the charge writes in the same transaction (see [`crate::records`]). A
//! charge that rolled back left none, so its grant refunds nothing (issue 24).
//! What other settles gave back lives in the refund ledger beside the state.

use crate::config::Config;
use crate::decision::decide;
use crate::error::{Error, Field, Problem, Rule};
use crate::limiter::{check_writes, decide_planned, prepare, write_info, Outcome};
use crate::plan::{plan, unit_random, Plan};
use crate::records::{grant_record_shard, ledger_shard, open_record, settled_record, GrantRecord};
use crate::request::{check_now, Request};
use crate::state::State;
use crate::transition::{advance, filled_at, initial_state};

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
    fn after(&self) -> State {
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
    fn refundable_until(&self, shard_config: &Config) -> f64 {
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
    fn push(&mut self, shard: u32, state: State, full_at_ms: f64) {
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

/// The shards a charge reads beyond its plan's: each planned shard's ledger,
/// then the grant's record.
pub fn charge_reads(plan: &Plan, slot: u32) -> [u32; 3] {
    [ledger_shard(plan.shards[0]), ledger_shard(plan.shards[1]), grant_record_shard(slot)]
}

/// A grant's charge: the decision of [`decide_planned`], and when granted the
/// grant and every write its transaction makes (the states, each charged
/// shard's ledger kept at least until the grant's refund window closes, and
/// the grant's record).
///
/// `ledgers[i]` is the ledger of `plan.shards[i]`; `record` what the
/// grant's slot holds.
///
/// # Errors
/// As [`decide_planned`].
#[allow(clippy::too_many_arguments)]
pub fn charge_planned(
    config: &Config,
    request: Request,
    now_ms: f64,
    plan: &Plan,
    stored: [Option<State>; 2],
    ledgers: [Option<State>; 2],
    record: Option<State>,
    (slot, tag): (u32, f64),
) -> Result<(Outcome, Option<Grant>, Writes), Error> {
    let outcome = decide_planned(config, request, now_ms, plan, stored)?;
    let mut writes = Writes::default();
    if !outcome.result.is_ok() {
        return Ok((outcome, None, writes));
    }
    let shard_config = config.per_shard();
    let mut grant = Grant {
        count: request.count,
        charged_at_ms: now_ms,
        shards: [GrantShard { shard: 0, count: 0.0, value: 0.0, ts: 0.0, refunded: 0.0 }; 2],
        shard_count: 0,
        slot,
        tag,
    };
    for (write, share) in outcome.writes.iter().zip(outcome.shares) {
        let Some((shard, after)) = *write else { continue };
        writes.push(shard, after, write_info(config, after, now_ms).full_at_ms);
        let ledger = ledgers[usize::from(shard != plan.shards[0])];
        let refunded = ledger.map_or(0.0, |state| state.value);
        // The ledger is kept until this grant's refund window closes, at least.
        let keep_until = ledger.map_or(f64::NEG_INFINITY, |state| state.ts).max(filled_at(after, &shard_config));
        if keep_until > now_ms && ledger.is_none_or(|state| state.ts < keep_until) {
            writes.push(ledger_shard(shard), State { value: refunded, ts: keep_until }, keep_until);
        }
        grant.shards[grant.shard_count] = GrantShard { shard, count: share, value: after.value, ts: after.ts, refunded };
        grant.shard_count += 1;
    }
    let until = grant.refundable_until(&shard_config);
    // Another grant's live record holds the slot (one in 2^30): this grant then refunds nothing.
    let slot_free = record.is_none_or(|found| found.ts <= now_ms || GrantRecord::of(Some(found), tag) != GrantRecord::Unknown);
    if until > now_ms && slot_free {
        writes.push(grant_record_shard(slot), open_record(tag, until), until);
    }
    Ok((outcome, Some(grant), writes))
}

/// Checks a grant's numbers against the limit it names, and `actual`.
fn check_grant(grant: &Grant, config: &Config, actual: f64) -> Result<(), Error> {
    let wrong = |field, rule, got| Err(Error::request(field, rule, got));
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

/// The shards a settle reads: each of the grant's shards (`[0..parts]`),
/// their ledgers (`[2..2 + parts]`), and the grant's record (`[4]`).
pub fn settle_reads(grant: &Grant) -> [u32; 5] {
    let shard = |index: usize| grant.shards[index.min(grant.shard_count.max(1) - 1)].shard;
    [shard(0), shard(1), ledger_shard(shard(0)), ledger_shard(shard(1)), grant_record_shard(grant.slot)]
}

/// How many random numbers a settle of a grant of `config` draws: a phase per
/// shard it may find empty, for a fixed window without `start`.
pub fn settle_draws_needed(config: &Config) -> usize {
    match (config.kind, config.start_ms) {
        (crate::config::Kind::FixedWindow, None) => 2,
        _ => 0,
    }
}

/// `value + give`, at most `capacity`, rounded down where rounding would
/// otherwise give back an ulp more than `give`.
fn raised(value: f64, give: f64, capacity: f64) -> f64 {
    let give = give.max(0.0);
    let mut raised = (value + give).min(capacity).max(value);
    while raised - value > give {
        raised = raised.next_down();
    }
    raised
}

/// Settles `grant` at `actual` tokens on what [`settle_reads`] read: gives
/// back the unused part within the refund rule ([`refund_bound`]), or takes
/// the extra as a reservation, into debt no deeper than `maxReserved`. A
/// grant settles once: a second settle is [`Error::GrantSettled`] while it
/// could still give tokens back. A grant without a record (its charge rolled
/// back, or its window closed) refunds nothing.
///
/// `states[i]`, `ledgers[i]` belong to the grant's shard `i`; `record` is what
/// the grant's slot holds; `draws` place an empty fixed window ([`settle_draws_needed`]).
///
/// # Errors
/// A bad `actual` or grant, a grant settled already, an extra no clock could
/// repay ([`Error::WaitUnbounded`]); in every case nothing is written.
#[allow(clippy::too_many_arguments)]
pub fn settle_planned(
    grant: &Grant,
    config: &Config,
    actual: f64,
    now_ms: f64,
    draws: &[f64],
    states: [Option<State>; 2],
    ledgers: [Option<State>; 2],
    record: Option<State>,
) -> Result<(Settled, Writes), Error> {
    check_now(config, now_ms)?;
    check_grant(grant, config, actual)?;
    let status = GrantRecord::of(record, grant.tag);
    if status == GrantRecord::Settled {
        return Err(Error::GrantSettled);
    }
    let mut phases = [0.0; 2];
    for (phase, drawn) in phases.iter_mut().zip(draws.iter().take(settle_draws_needed(config))) {
        *phase = unit_random(*drawn)?;
    }
    let shard_config = config.per_shard();
    let given: f64 = grant.parts().iter().map(|part| part.count).sum();
    let unused = (grant.count - actual).max(0.0);
    let extra = (actual - grant.count).max(0.0);
    let mut settled = Settled { refunded: 0.0, charged: 0.0, unpaid: 0.0, retry_after_ms: None };
    let mut writes = Writes::default();
    let mut ledger_writes = Writes::default();
    for (index, part) in grant.parts().iter().enumerate() {
        let proportion = match given > 0.0 {
            true => part.count / given,
            false => f64::from(u8::from(index == 0)),
        };
        let current = states[index].unwrap_or_else(|| initial_state(&shard_config, now_ms, phases[index]));
        let projected = advance(current, &shard_config, now_ms, 0.0);
        let ledger = ledgers[index];
        // No record: the charge never committed (or its window closed). A
        // ledger that is gone or went back (deleted by hand) hides what was
        // given back since. Either way: give nothing rather than guess.
        let bound = match (status, ledger) {
            (GrantRecord::Open, Some(state)) if state.value >= part.refunded => {
                refund_bound(part.after(), &shard_config, now_ms, state.value - part.refunded)
            }
            _ => 0.0,
        };
        let give = (unused * proportion).min(part.count).min(bound);
        let mut next = State { value: raised(projected.value, give, shard_config.capacity), ts: projected.ts };
        let given_back = next.value - projected.value;
        settled.refunded += given_back;
        let mut changed = given_back > 0.0;
        let wanted = extra * proportion;
        if wanted > 0.0 {
            let take = match shard_config.max_reserved {
                Some(max_reserved) => wanted.min((next.value + max_reserved).max(0.0)),
                None => wanted,
            };
            let taken = decide(next, &shard_config, now_ms, Request { count: take, reserve: true });
            // A debt no clock could repay locks the key for good: refuse it, like the reservation it is.
            if !taken.ok || taken.retry_after_ms.is_some_and(|wait| !wait.is_finite()) {
                return Err(Error::WaitUnbounded { count: actual });
            }
            next = taken.next;
            changed |= take > 0.0;
            settled.charged += take;
            settled.retry_after_ms = match (settled.retry_after_ms, taken.retry_after_ms.map(crate::result::caller_wait)) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
        }
        if changed {
            writes.push(part.shard, next, write_info(config, next, now_ms).full_at_ms);
        }
        if let (Some(state), true) = (ledger, given_back > 0.0) {
            ledger_writes.push(ledger_shard(part.shard), State { value: state.value + given_back, ts: state.ts }, state.ts);
        }
    }
    settled.unpaid = (extra - settled.charged).max(0.0);
    check_writes(writes.iter().map(|(_, state, _)| state))?;
    for &(shard, state, full_at_ms) in ledger_writes.iter() {
        writes.push(shard, state, full_at_ms);
    }
    // Kept while a second settle could still give tokens back; after that
    // the refund rule gives nothing, and the store may drop the record.
    // Another grant's live record in the slot is left as it is.
    let until = grant.refundable_until(&shard_config);
    let ours = status == GrantRecord::Open || record.is_none_or(|found| found.ts <= now_ms);
    if until > now_ms && ours {
        writes.push(grant_record_shard(grant.slot), settled_record(grant.tag, until), until);
    }
    Ok((settled, writes))
}

/// Plans a grant's charge: as [`plan`], after [`prepare`].
///
/// # Errors
/// As [`prepare`] and [`plan`].
pub fn plan_charge(config: &Config, request: Request, now_ms: f64, draws: &[f64]) -> Result<Plan, Error> {
    prepare(config, request, now_ms)?;
    plan(config, now_ms, draws)
}

/// A grant's charge over `store`, for the reference driver: plan, read the
/// states, their ledgers and the grant's record, decide, write.
///
/// # Errors
/// As [`charge_planned`], or the store's.
#[allow(clippy::too_many_arguments)]
pub fn limit_with_grant<S: crate::state::StateStore>(
    store: &mut S,
    name: &str,
    key: Option<&str>,
    config: &Config,
    request: Request,
    now_ms: f64,
    draws: &[f64],
    id: (u32, f64),
) -> Result<(Outcome, Option<Grant>), S::Error> {
    use crate::state::StateRef;
    let planned = plan_charge(config, request, now_ms, draws)?;
    let stored = crate::limiter::read_planned(store, name, key, &planned)?;
    let [ledger_first, ledger_second, record_shard] = charge_reads(&planned, id.0);
    let mut read = |shard| store.read(StateRef { name, key, shard });
    let ledgers = [read(ledger_first)?, if planned.reads == 2 { read(ledger_second)? } else { None }];
    let record = read(record_shard)?;
    let (outcome, grant, writes) = charge_planned(config, request, now_ms, &planned, stored, ledgers, record, id)?;
    for &(shard, state, full_at_ms) in writes.iter() {
        store.write(StateRef { name, key, shard }, Some(state), crate::state::WriteInfo { now_ms, full_at_ms })?;
    }
    Ok((outcome, grant))
}

/// A settle over `store`, for the reference driver.
///
/// # Errors
/// As [`settle_planned`], or the store's.
#[allow(clippy::too_many_arguments)]
pub fn settle<S: crate::state::StateStore>(
    store: &mut S,
    name: &str,
    key: Option<&str>,
    grant: &Grant,
    config: &Config,
    actual: f64,
    now_ms: f64,
    draws: &[f64],
) -> Result<Settled, S::Error> {
    use crate::state::StateRef;
    check_now(config, now_ms)?;
    check_grant(grant, config, actual)?;
    let shards = settle_reads(grant);
    let mut read = |shard| store.read(StateRef { name, key, shard });
    let two = grant.shard_count == 2;
    let states = [read(shards[0])?, if two { read(shards[1])? } else { None }];
    let ledgers = [read(shards[2])?, if two { read(shards[3])? } else { None }];
    let record = read(shards[4])?;
    let (settled, writes) = settle_planned(grant, config, actual, now_ms, draws, states, ledgers, record)?;
    for &(shard, state, full_at_ms) in writes.iter() {
        store.write(StateRef { name, key, shard }, Some(state), crate::state::WriteInfo { now_ms, full_at_ms })?;
    }
    Ok(settled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ConfigInput, Kind};
    use crate::state::{StateRef, StateStore, WriteInfo};
    use std::collections::HashMap;

    /// One key's shards and records, with what each write said about dropping it.
    #[derive(Debug, Default, Clone, PartialEq)]
    struct Shards(HashMap<u32, (State, f64)>);

    impl StateStore for Shards {
        type Error = Error;

        fn read(&mut self, at: StateRef<'_>) -> Result<Option<State>, Error> {
            Ok(self.0.get(&at.shard).map(|(state, _)| *state))
        }

        fn write(&mut self, at: StateRef<'_>, state: Option<State>, info: WriteInfo) -> Result<(), Error> {
            match state {
                Some(state) => self.0.insert(at.shard, (state, info.full_at_ms)),
                None => self.0.remove(&at.shard),
            };
            Ok(())
        }
    }

    impl Shards {
        fn value(&self, shard: u32) -> Option<f64> {
            self.0.get(&shard).map(|(state, _)| state.value)
        }
    }

    fn config(input: ConfigInput) -> Config {
        Config::try_from(&input).unwrap()
    }

    /// Both algorithms, windows from 0.
    fn both_kinds(rate: f64, period_ms: f64, extra: &[(&str, f64)]) -> [Config; 2] {
        [ConfigInput::token_bucket(rate, period_ms), ConfigInput::fixed_window(rate, period_ms).with("start", 0.0)]
            .map(|input| config(extra.iter().fold(input, |input, (field, value)| input.with(field, *value))))
    }

    /// A grant of `count` (id `slot`) charged at `now_ms`, drawing `draws`.
    fn charge(store: &mut Shards, config: &Config, count: f64, now_ms: f64, draws: &[f64], slot: u32) -> Grant {
        let request = Request { count, reserve: false };
        limit_with_grant(store, "llm", None, config, request, now_ms, draws, (slot, f64::from(slot))).unwrap().1.expect("granted")
    }

    fn settle_at(store: &mut Shards, grant: &Grant, config: &Config, actual: f64, now_ms: f64) -> Result<Settled, Error> {
        settle(store, "llm", None, grant, config, actual, now_ms, &[])
    }

    /// Issue 24, item 8: `grant.settle(1e308)` without `maxReserved` stored
    /// -1e308 and answered `retryAfter: Infinity`, locking the key for good.
    /// An extra no clock could repay is refused like the reservation it is.
    #[test]
    fn a_settle_whose_extra_no_clock_could_repay_is_wait_unbounded_and_writes_nothing() {
        for (shards, draws) in [(1.0, &[][..]), (4.0, &[0.0, 0.0][..])] {
            for limit in both_kinds(4.0, 1_000.0, &[("shards", shards)]) {
                let mut store = Shards::default();
                if shards > 1.0 {
                    // Shards 0 and 1 hold half a shard each: 1 token takes both, combined.
                    store.0.insert(0, (State { value: 0.5, ts: 0.0 }, f64::INFINITY));
                    store.0.insert(1, (State { value: 0.5, ts: 0.0 }, f64::INFINITY));
                }
                let grant = charge(&mut store, &limit, 1.0, 0.0, draws, 7);
                assert_eq!(grant.parts().len(), if shards > 1.0 { 2 } else { 1 }, "{:?}", limit.kind);
                let before = store.clone();
                let error = settle_at(&mut store, &grant, &limit, 1e308, 0.0).unwrap_err();
                assert_eq!(error, Error::WaitUnbounded { count: 1e308 }, "{:?}, {shards} shards", limit.kind);
                assert_eq!(store, before, "{:?}, {shards} shards: a refused settle wrote", limit.kind);
                // The key is not locked and the grant can still settle.
                let settled = settle_at(&mut store, &grant, &limit, 0.0, 0.0).unwrap();
                assert_eq!(settled.refunded, 1.0, "{:?}, {shards} shards", limit.kind);
            }
        }
    }

    #[test]
    fn a_settle_whose_extra_a_clock_can_repay_is_taken_into_debt_with_a_finite_wait() {
        for limit in both_kinds(4.0, 1_000.0, &[]) {
            let mut store = Shards::default();
            let grant = charge(&mut store, &limit, 1.0, 0.0, &[], 1);
            // 1e12 tokens at 4 a second, less the 3 left: about 2.5e11 s, finite.
            let settled = settle_at(&mut store, &grant, &limit, 1e12 + 1.0, 0.0).unwrap();
            assert_eq!((settled.charged, settled.unpaid), (1e12, 0.0));
            let wait = settled.retry_after_ms.expect("in debt");
            assert!(wait.is_finite() && wait > 2.49e14, "{:?}: {wait}", limit.kind);
            assert_eq!(store.value(0), Some(3.0 - 1e12));
        }
    }

    fn full_at_of(store: &Shards, shard: u32) -> Option<f64> {
        store.0.get(&shard).map(|(_, full_at_ms)| *full_at_ms)
    }

    /// A 4-shard limit (10 a second per shard, capacity 10) whose shards 0
    /// and 1 hold 6 and 4: a grant of 8 takes 5 and 3 from them together.
    fn two_shard_grant(store: &mut Shards, kind: Kind) -> (Config, Grant) {
        let limit = match kind {
            Kind::TokenBucket => config(ConfigInput::token_bucket(40.0, 1_000.0).with("shards", 4.0)),
            Kind::FixedWindow => config(ConfigInput::fixed_window(40.0, 1_000.0).with("shards", 4.0).with("start", 0.0)),
        };
        store.0.insert(0, (State { value: 6.0, ts: 0.0 }, f64::INFINITY));
        store.0.insert(1, (State { value: 4.0, ts: 0.0 }, f64::INFINITY));
        let grant = charge(store, &limit, 8.0, 0.0, &[0.0, 0.0], 3);
        let parts: Vec<(u32, f64, f64)> = grant.parts().iter().map(|part| (part.shard, part.count, part.value)).collect();
        assert_eq!(parts, vec![(0, 5.0, 1.0), (1, 3.0, 1.0)]);
        (limit, grant)
    }

    #[test]
    fn a_grant_two_shards_served_gives_back_what_was_not_used_in_proportion_to_what_each_gave() {
        for kind in [Kind::TokenBucket, Kind::FixedWindow] {
            let mut store = Shards::default();
            let (limit, grant) = two_shard_grant(&mut store, kind);
            // 4 of 8 used: 2.5 back to shard 0 (which gave 5), 1.5 to shard 1 (which gave 3).
            let settled = settle_at(&mut store, &grant, &limit, 4.0, 0.0).unwrap();
            assert_eq!((settled.refunded, settled.charged, settled.unpaid, settled.retry_after_ms), (4.0, 0.0, 0.0, None), "{kind:?}");
            assert_eq!((store.value(0), store.value(1)), (Some(3.5), Some(2.5)), "{kind:?}");
            // Each shard's ledger says what it got back.
            assert_eq!((store.value(ledger_shard(0)), store.value(ledger_shard(1))), (Some(2.5), Some(1.5)), "{kind:?}");
        }
    }

    #[test]
    fn a_grant_two_shards_served_takes_what_was_used_beyond_it_in_the_same_proportion() {
        for kind in [Kind::TokenBucket, Kind::FixedWindow] {
            let mut store = Shards::default();
            let (limit, grant) = two_shard_grant(&mut store, kind);
            // 12 used: 4 more, 2.5 from shard 0 and 1.5 from shard 1 (no maxReserved: all taken, into debt).
            let settled = settle_at(&mut store, &grant, &limit, 12.0, 0.0).unwrap();
            assert_eq!((settled.refunded, settled.charged, settled.unpaid), (0.0, 4.0, 0.0), "{kind:?}");
            assert_eq!((store.value(0), store.value(1)), (Some(-1.5), Some(-0.5)), "{kind:?}");
            // Paid off when the deeper shard is: 150 ms at 10 a second, or the next window.
            let expected = if kind == Kind::TokenBucket { 150.0 } else { 1_000.0 };
            assert_eq!(settled.retry_after_ms, Some(expected), "{kind:?}");
            // Nothing given back: the ledgers are as the charge left them.
            assert_eq!((store.value(ledger_shard(0)), store.value(ledger_shard(1))), (Some(0.0), Some(0.0)), "{kind:?}");
        }
    }

    #[test]
    fn a_second_grants_refund_counts_what_the_first_gave_back_to_the_same_shard() {
        for limit in both_kinds(10.0, 1_000.0, &[]) {
            // Two grants of 4 at 0: 10, then 6, then 2.
            let mut store = Shards::default();
            let first = charge(&mut store, &limit, 4.0, 0.0, &[], 1);
            let second = charge(&mut store, &limit, 4.0, 0.0, &[], 2);
            assert_eq!(store.value(0), Some(2.0));
            // Settled in the order taken, both unused: each gives its 4 back, and the limit is full.
            assert_eq!(settle_at(&mut store, &first, &limit, 0.0, 0.0).unwrap().refunded, 4.0, "{:?}", limit.kind);
            assert_eq!(settle_at(&mut store, &second, &limit, 0.0, 0.0).unwrap().refunded, 4.0, "{:?}", limit.kind);
            assert_eq!((store.value(0), store.value(ledger_shard(0))), (Some(10.0), Some(8.0)), "{:?}", limit.kind);
        }
    }

    #[test]
    fn a_refund_after_a_later_grants_refund_gives_only_the_room_left() {
        for limit in both_kinds(10.0, 1_000.0, &[]) {
            let mut store = Shards::default();
            let first = charge(&mut store, &limit, 4.0, 0.0, &[], 1);
            let second = charge(&mut store, &limit, 4.0, 0.0, &[], 2);
            // The later one first: 2 back to 6. The earlier one's charge left 6 and 4 came back to
            // the shard since, so its room is 10 - 6 - 4 = 0: nothing. (A limit that charged neither
            // would hold 10; this one holds 6. The rule errs towards fewer tokens, never more.)
            assert_eq!(settle_at(&mut store, &second, &limit, 0.0, 0.0).unwrap().refunded, 4.0, "{:?}", limit.kind);
            assert_eq!(settle_at(&mut store, &first, &limit, 0.0, 0.0).unwrap().refunded, 0.0, "{:?}", limit.kind);
            assert_eq!(store.value(0), Some(6.0), "{:?}", limit.kind);
        }
    }

    #[test]
    fn a_ledger_is_kept_until_the_grants_refund_window_closes_and_never_shortened() {
        let limit = config(ConfigInput::token_bucket(10.0, 1_000.0));
        let mut store = Shards::default();
        // 4 of 10 at 0: full again at 400 ms; the ledger and the grant's record are kept until then.
        let _grant = charge(&mut store, &limit, 4.0, 0.0, &[], 1);
        assert_eq!(store.0[&ledger_shard(0)], (State { value: 0.0, ts: 400.0 }, 400.0));
        assert_eq!(full_at_of(&store, grant_record_shard(1)), Some(400.0));
        // A later, smaller grant whose window closes sooner (2 at 180 ms, full again at 380) leaves it as it is.
        store.0.insert(0, (State { value: 10.0, ts: 180.0 }, 180.0));
        let _small = charge(&mut store, &limit, 2.0, 180.0, &[], 2);
        assert_eq!(store.0[&ledger_shard(0)], (State { value: 0.0, ts: 400.0 }, 400.0));
        // A larger one that closes later extends it.
        let _large = charge(&mut store, &limit, 8.0, 180.0, &[], 3);
        assert_eq!(store.0[&ledger_shard(0)], (State { value: 0.0, ts: 1_180.0 }, 1_180.0));
    }

    #[test]
    fn a_grant_whose_ledger_was_dropped_refunds_nothing() {
        let limit = config(ConfigInput::token_bucket(10.0, 1_000.0));
        let mut store = Shards::default();
        let grant = charge(&mut store, &limit, 4.0, 0.0, &[], 1);
        store.0.remove(&ledger_shard(0));
        assert_eq!(settle_at(&mut store, &grant, &limit, 0.0, 100.0).unwrap().refunded, 0.0);
        assert_eq!(store.value(0), Some(6.0));
    }

    #[test]
    fn a_zero_token_grant_refunds_nothing_and_takes_what_was_used_from_its_shard() {
        for limit in both_kinds(10.0, 1_000.0, &[]) {
            let mut store = Shards::default();
            let grant = charge(&mut store, &limit, 0.0, 0.0, &[], 1);
            assert_eq!((grant.count, grant.parts().len(), grant.parts()[0].count), (0.0, 1, 0.0));
            // Nothing was taken from a full limit: no refund window, so no record, and settling twice is harmless.
            assert_eq!(full_at_of(&store, grant_record_shard(1)), None);
            for _ in 0..2 {
                let settled = settle_at(&mut store, &grant, &limit, 0.0, 0.0).unwrap();
                assert_eq!((settled.refunded, settled.charged), (0.0, 0.0), "{:?}", limit.kind);
            }
            assert_eq!(store.value(0), Some(10.0), "{:?}", limit.kind);
            let grant = charge(&mut store, &limit, 0.0, 0.0, &[], 2);
            let settled = settle_at(&mut store, &grant, &limit, 3.0, 0.0).unwrap();
            assert_eq!((settled.refunded, settled.charged), (0.0, 3.0), "{:?}", limit.kind);
            assert_eq!(store.value(0), Some(7.0), "{:?}", limit.kind);
        }
    }

    #[test]
    fn settling_exactly_the_estimate_on_a_shard_in_debt_changes_no_state() {
        for limit in both_kinds(10.0, 1_000.0, &[("maxReserved", 10.0)]) {
            let mut store = Shards::default();
            store.0.insert(0, (State { value: 0.0, ts: 0.0 }, f64::INFINITY));
            let request = Request { count: 5.0, reserve: true };
            let grant = limit_with_grant(&mut store, "llm", None, &limit, request, 0.0, &[], (1, 1.0)).unwrap().1.unwrap();
            let state = store.0[&0];
            assert_eq!(state.0.value, -5.0);
            let settled = settle_at(&mut store, &grant, &limit, 5.0, 100.0).unwrap();
            assert_eq!(settled, Settled { refunded: 0.0, charged: 0.0, unpaid: 0.0, retry_after_ms: None }, "{:?}", limit.kind);
            assert_eq!(store.0[&0], state, "{:?}: the state was rewritten", limit.kind);
            // Only the record changed: settled now (no state, no ledger was written).
            let ledger = store.0.get(&ledger_shard(0)).map(|(state, _)| *state);
            let record = store.0.get(&grant_record_shard(1)).map(|(state, _)| *state);
            let unsettled = Some(crate::records::open_record(1.0, record.unwrap().ts));
            let (_, writes) = settle_planned(&grant, &limit, 5.0, 100.0, &[], [Some(state.0), None], [ledger, None], unsettled).unwrap();
            assert_eq!(writes.iter().map(|(shard, _, _)| *shard).collect::<Vec<_>>(), vec![grant_record_shard(1)]);
            assert_eq!(settle_at(&mut store, &grant, &limit, 0.0, 100.0).unwrap_err(), Error::GrantSettled);
        }
    }

    #[test]
    fn a_grant_is_checked_against_the_limit_it_names_before_anything_is_read() {
        let limit = config(ConfigInput::token_bucket(40.0, 1_000.0).with("shards", 4.0));
        let mut store = Shards::default();
        store.0.insert(0, (State { value: 6.0, ts: 0.0 }, f64::INFINITY));
        store.0.insert(1, (State { value: 4.0, ts: 0.0 }, f64::INFINITY));
        let good = charge(&mut store, &limit, 8.0, 0.0, &[0.0, 0.0], 3);
        let before = store.clone();
        let part = |index: usize, change: &dyn Fn(&mut GrantShard)| {
            let mut grant = good;
            change(&mut grant.shards[index]);
            grant
        };
        let problem = |field, rule, got| Error::request(field, rule, got);
        let cases: Vec<(Grant, f64, Error)> = vec![
            (good, -1.0, problem(Field::Actual, Rule::FiniteNonNegative, -1.0)),
            (good, f64::INFINITY, problem(Field::Actual, Rule::FiniteNonNegative, f64::INFINITY)),
            (Grant { count: -8.0, ..good }, 1.0, problem(Field::GrantCount, Rule::FiniteNonNegative, -8.0)),
            (Grant { count: f64::NAN, ..good }, 1.0, problem(Field::GrantCount, Rule::FiniteNonNegative, f64::NAN)),
            (Grant { charged_at_ms: f64::INFINITY, ..good }, 1.0, problem(Field::GrantChargedAt, Rule::FiniteMs, f64::INFINITY)),
            (Grant { shard_count: 0, ..good }, 1.0, problem(Field::GrantShards, Rule::OneOrTwoShards, 0.0)),
            (Grant { shard_count: 3, ..good }, 1.0, problem(Field::GrantShards, Rule::OneOrTwoShards, 3.0)),
            (part(1, &|part| part.shard = 4), 1.0, Error::InvalidRequest(Problem::with_numbers(Field::GrantShards, Rule::GrantShard, [4.0, 4.0, f64::NAN]))),
            (part(1, &|part| part.shard = 0), 1.0, Error::InvalidRequest(Problem::with_numbers(Field::GrantShards, Rule::GrantShard, [0.0, 4.0, f64::NAN]))),
            // A negative share would have the settle give back to one shard what it takes from the other.
            (part(1, &|part| part.count = -3.0), 1.0, problem(Field::GrantShardCount, Rule::FiniteNonNegative, -3.0)),
            (part(0, &|part| part.count = f64::INFINITY), 1.0, problem(Field::GrantShardCount, Rule::FiniteNonNegative, f64::INFINITY)),
            (part(0, &|part| part.refunded = -1.0), 1.0, problem(Field::GrantShardRefunded, Rule::FiniteNonNegative, -1.0)),
            (part(1, &|part| part.refunded = f64::NAN), 1.0, problem(Field::GrantShardRefunded, Rule::FiniteNonNegative, f64::NAN)),
            (part(0, &|part| part.value = f64::NEG_INFINITY), 1.0, problem(Field::GrantShardValue, Rule::Finite, f64::NEG_INFINITY)),
            (part(1, &|part| part.ts = f64::NAN), 1.0, problem(Field::GrantShardValue, Rule::Finite, f64::NAN)),
        ];
        for (grant, actual, expected) in cases {
            assert_eq!(settle_at(&mut store, &grant, &limit, actual, 0.0), Err(expected));
            let planned = settle_planned(&grant, &limit, actual, 0.0, &[], [None, None], [None, None], None);
            assert_eq!(planned.map(|_| ()), Err(expected));
        }
        assert_eq!(store, before);
        // The first part's shard is checked too, and one shard is enough.
        let one = Grant { shard_count: 1, ..good };
        assert!(settle_at(&mut store, &one, &limit, 8.0, 0.0).is_ok());
        let outside = part(0, &|part| part.shard = 7);
        let expected = Error::InvalidRequest(Problem::with_numbers(Field::GrantShards, Rule::GrantShard, [7.0, 4.0, f64::NAN]));
        assert_eq!(settle_at(&mut store, &outside, &limit, 1.0, 0.0), Err(expected));
    }

    #[test]
    fn writes_past_six_are_dropped_rather_than_overflow() {
        let mut writes = Writes::default();
        assert!(writes.is_empty());
        for shard in 0..7 {
            writes.push(shard, State { value: 1.0, ts: 0.0 }, 0.0);
        }
        assert_eq!((writes.len(), writes.is_empty()), (6, false));
        assert_eq!(writes.iter().map(|(shard, _, _)| *shard).collect::<Vec<_>>(), vec![0, 1, 2, 3, 4, 5]);
    }

    /// Plans and charges `count` at `now_ms` on an unsharded `limit` over what `store` holds, without writing.
    fn charge_writes(store: &Shards, limit: &Config, count: f64, now_ms: f64, slot: u32, tag: f64) -> (Option<Grant>, Writes) {
        let request = Request { count, reserve: false };
        let planned = plan_charge(limit, request, now_ms, &[]).unwrap();
        let stored = store.0.get(&0).map(|(state, _)| *state);
        let ledger = store.0.get(&ledger_shard(0)).map(|(state, _)| *state);
        let record = store.0.get(&grant_record_shard(slot)).map(|(state, _)| *state);
        let (_, grant, writes) = charge_planned(limit, request, now_ms, &planned, [stored, None], [ledger, None], record, (slot, tag)).unwrap();
        (grant, writes)
    }

    fn shards_written(writes: &Writes) -> Vec<u32> {
        writes.iter().map(|(shard, _, _)| *shard).collect()
    }

    #[test]
    fn a_charge_writes_the_state_its_ledger_and_its_record_and_a_refused_one_nothing() {
        let limit = config(ConfigInput::token_bucket(10.0, 1_000.0));
        let store = Shards::default();
        let (grant, writes) = charge_writes(&store, &limit, 4.0, 0.0, 9, 9.0);
        assert!(grant.is_some());
        assert_eq!(shards_written(&writes), vec![0, ledger_shard(0), grant_record_shard(9)]);
        let mut empty = Shards::default();
        empty.0.insert(0, (State { value: 0.0, ts: 0.0 }, f64::INFINITY));
        let (grant, writes) = charge_writes(&empty, &limit, 4.0, 0.0, 9, 9.0);
        assert_eq!((grant, writes.len(), writes.is_empty()), (None, 0, true));
    }

    #[test]
    fn a_grant_that_takes_nothing_from_a_full_limit_writes_no_ledger_and_no_record() {
        let limit = config(ConfigInput::token_bucket(10.0, 1_000.0));
        let (_, writes) = charge_writes(&Shards::default(), &limit, 0.0, 0.0, 1, 1.0);
        assert_eq!(shards_written(&writes), vec![0]);
    }

    #[test]
    fn a_charge_whose_refund_window_closes_with_the_ledgers_does_not_rewrite_it() {
        let limit = config(ConfigInput::token_bucket(10.0, 1_000.0));
        let mut store = Shards::default();
        let _first = charge(&mut store, &limit, 4.0, 0.0, &[], 1);
        // Nothing more taken: full again at 400 ms, as the ledger already says.
        let (_, writes) = charge_writes(&store, &limit, 0.0, 0.0, 2, 2.0);
        assert_eq!(shards_written(&writes), vec![0, grant_record_shard(2)]);
    }

    #[test]
    fn a_grant_whose_record_slot_holds_another_live_grant_writes_no_record_and_refunds_nothing() {
        let limit = config(ConfigInput::token_bucket(10.0, 1_000.0));
        let mut store = Shards::default();
        // Another grant's open record in slot 5, live until 1 000 ms.
        store.0.insert(grant_record_shard(5), (crate::records::open_record(77.0, 1_000.0), 1_000.0));
        let (_, writes) = charge_writes(&store, &limit, 4.0, 0.0, 5, 8.0);
        assert_eq!(shards_written(&writes), vec![0, ledger_shard(0)]);
        let grant = charge(&mut store, &limit, 4.0, 0.0, &[], 5);
        assert_eq!(settle_at(&mut store, &grant, &limit, 0.0, 0.0).unwrap().refunded, 0.0);
        assert_eq!(store.0[&grant_record_shard(5)].0.value, 77.0, "the other grant's record is left as it is");
        // Once that record has lapsed, the slot is free again.
        let (_, writes) = charge_writes(&store, &limit, 1.0, 1_000.0, 5, 8.0);
        assert_eq!(shards_written(&writes), vec![0, ledger_shard(0), grant_record_shard(5)]);
        // A record with this grant's own tag (settled, say, by a replay) does not hold the slot against it.
        store.0.insert(grant_record_shard(5), (crate::records::settled_record(8.0, 5_000.0), 5_000.0));
        let (_, writes) = charge_writes(&store, &limit, 1.0, 1_000.0, 5, 8.0);
        assert_eq!(shards_written(&writes), vec![0, ledger_shard(0), grant_record_shard(5)]);
    }

    #[test]
    fn a_settle_reads_each_part_its_ledger_and_the_record_and_repeats_a_single_part() {
        let part = |shard| GrantShard { shard, count: 1.0, value: 0.0, ts: 0.0, refunded: 0.0 };
        let one = Grant { count: 1.0, charged_at_ms: 0.0, shards: [part(3), part(0)], shard_count: 1, slot: 5, tag: 5.0 };
        assert_eq!(settle_reads(&one), [3, 3, ledger_shard(3), ledger_shard(3), grant_record_shard(5)]);
        let two = Grant { shards: [part(3), part(1)], shard_count: 2, ..one };
        assert_eq!(settle_reads(&two), [3, 1, ledger_shard(3), ledger_shard(1), grant_record_shard(5)]);
    }

    #[test]
    fn a_settle_draws_a_phase_per_shard_only_for_a_fixed_window_without_start() {
        let needed = |input: ConfigInput| settle_draws_needed(&config(input));
        assert_eq!(needed(ConfigInput::fixed_window(10.0, 1_000.0)), 2);
        assert_eq!(needed(ConfigInput::fixed_window(10.0, 1_000.0).with("start", 0.0)), 0);
        assert_eq!(needed(ConfigInput::token_bucket(10.0, 1_000.0)), 0);
    }

    /// A settle that finds a shard's state gone (dropped, or reset) starts
    /// it full; for a fixed window without `start` its windows are placed by
    /// the settle's own phase, one per shard.
    #[test]
    fn a_settle_that_finds_a_windows_state_gone_places_it_by_its_own_phase() {
        let limit = config(ConfigInput::fixed_window(40.0, 1_000.0).with("shards", 4.0));
        let mut store = Shards::default();
        store.0.insert(0, (State { value: 6.0, ts: 0.0 }, f64::INFINITY));
        store.0.insert(1, (State { value: 4.0, ts: 0.0 }, f64::INFINITY));
        let grant = charge(&mut store, &limit, 8.0, 0.0, &[0.0, 0.0, 0.0, 0.0], 3);
        assert_eq!(grant.parts().len(), 2);
        store.0.remove(&0);
        store.0.remove(&1);
        // 4 used beyond the estimate, taken from fresh shards placed 250 and 750 ms back.
        settle(&mut store, "llm", None, &grant, &limit, 12.0, 10_000.0, &[0.25, 0.75]).unwrap();
        assert_eq!(store.0[&0].0, State { value: 7.5, ts: 9_750.0 });
        assert_eq!(store.0[&1].0, State { value: 8.5, ts: 9_250.0 });
    }

    #[test]
    fn a_grant_taken_after_a_refund_is_not_charged_for_that_refund() {
        for limit in both_kinds(10.0, 1_000.0, &[]) {
            let mut store = Shards::default();
            let first = charge(&mut store, &limit, 4.0, 0.0, &[], 1);
            assert_eq!(settle_at(&mut store, &first, &limit, 0.0, 0.0).unwrap().refunded, 4.0);
            // The ledger says 4 came back; the next grant records that, and its own refund is whole.
            let second = charge(&mut store, &limit, 4.0, 0.0, &[], 2);
            assert_eq!(second.parts()[0].refunded, 4.0);
            assert_eq!(settle_at(&mut store, &second, &limit, 0.0, 0.0).unwrap().refunded, 4.0, "{:?}", limit.kind);
            assert_eq!(store.value(0), Some(10.0));
        }
    }

    /// A ledger below what the grant saw when charged was deleted and started
    /// again: what was given back since is unknown, so nothing is.
    #[test]
    fn a_ledger_that_went_back_refunds_nothing() {
        let limit = config(ConfigInput::token_bucket(10.0, 1_000.0));
        let mut store = Shards::default();
        let first = charge(&mut store, &limit, 4.0, 0.0, &[], 1);
        settle_at(&mut store, &first, &limit, 0.0, 0.0).unwrap();
        let second = charge(&mut store, &limit, 4.0, 0.0, &[], 2);
        store.0.insert(ledger_shard(0), (State { value: 1.0, ts: 400.0 }, 400.0));
        assert_eq!(settle_at(&mut store, &second, &limit, 0.0, 0.0).unwrap().refunded, 0.0);
        assert_eq!(store.value(0), Some(6.0));
    }

    #[test]
    fn a_settle_whose_extra_max_reserved_leaves_no_room_for_takes_nothing_and_writes_no_state() {
        for limit in both_kinds(10.0, 1_000.0, &[("maxReserved", 5.0)]) {
            let mut store = Shards::default();
            let request = Request { count: 15.0, reserve: true };
            let grant = limit_with_grant(&mut store, "llm", None, &limit, request, 0.0, &[], (1, 1.0)).unwrap().1.unwrap();
            let state = store.0[&0];
            assert_eq!(state.0.value, -5.0);
            // Nothing to write but the settled record.
            let ledger = store.0.get(&ledger_shard(0)).map(|(state, _)| *state);
            let record = store.0.get(&grant_record_shard(1)).map(|(state, _)| *state);
            let (_, writes) = settle_planned(&grant, &limit, 20.0, 0.0, &[], [Some(state.0), None], [ledger, None], record).unwrap();
            assert_eq!(writes.iter().map(|(shard, _, _)| *shard).collect::<Vec<_>>(), vec![grant_record_shard(1)], "{:?}", limit.kind);
            let settled = settle_at(&mut store, &grant, &limit, 20.0, 0.0).unwrap();
            // Still in the reservation's debt: paid off in 500 ms, or at the next window.
            let paid_off = if limit.kind == Kind::TokenBucket { 500.0 } else { 1_000.0 };
            assert_eq!((settled.charged, settled.unpaid, settled.retry_after_ms), (0.0, 5.0, Some(paid_off)), "{:?}", limit.kind);
            assert_eq!(store.0[&0], state, "{:?}", limit.kind);
        }
    }

    #[test]
    fn a_grant_two_shards_serve_sees_what_each_shards_ledger_already_gave_back() {
        let limit = config(ConfigInput::token_bucket(40.0, 1_000.0).with("shards", 4.0));
        let mut store = Shards::default();
        // Shard 1 alone (draws 0.25 then 0.0: shards 1 and 2, shard 1 fresh and granting) gives 4 and gets them back.
        let first = charge(&mut store, &limit, 4.0, 0.0, &[0.25, 0.0], 1);
        assert_eq!(first.parts().iter().map(|part| part.shard).collect::<Vec<_>>(), vec![1]);
        settle_at(&mut store, &first, &limit, 0.0, 0.0).unwrap();
        assert_eq!(store.value(ledger_shard(1)), Some(4.0));
        // Shards 0 and 1 at 6 and 4 serve 8 together: shard 1's part knows its ledger said 4.
        store.0.insert(0, (State { value: 6.0, ts: 0.0 }, f64::INFINITY));
        store.0.insert(1, (State { value: 4.0, ts: 0.0 }, f64::INFINITY));
        let second = charge(&mut store, &limit, 8.0, 0.0, &[0.0, 0.0], 2);
        let refunded: Vec<(u32, f64)> = second.parts().iter().map(|part| (part.shard, part.refunded)).collect();
        assert_eq!(refunded, vec![(0, 0.0), (1, 4.0)]);
        assert_eq!(store.value(ledger_shard(1)), Some(4.0), "the charge kept the ledger's count");
        // And so its whole refund is allowed on both.
        assert_eq!(settle_at(&mut store, &second, &limit, 0.0, 0.0).unwrap().refunded, 8.0);
    }
}
