//! Settling a grant: giving back what was not used, within the refund rule,
//! or taking what was used beyond the estimate, as a reservation would.

use super::grant::{check_grant, refund_bound, Grant, Settled, Writes};
use crate::config::Config;
use crate::decision::decide;
use crate::error::Error;
use crate::limiter::{check_writes, write_info};
use crate::plan::unit_random;
use crate::records::{grant_record_shard, ledger_shard, settled_record, GrantRecord};
use crate::request::{check_now, Request};
use crate::state::State;
use crate::transition::{advance, initial_state};

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
