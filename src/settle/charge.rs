//! A grant's charge: the decision of a plain `limit`, and the records that
//! let it settle later (each charged shard's ledger, the grant's record).

use super::grant::{Grant, GrantShard, Writes};
use crate::config::Config;
use crate::error::Error;
use crate::limiter::{decide_planned, prepare, write_info, Outcome};
use crate::plan::{plan, Plan};
use crate::records::{grant_record_shard, ledger_shard, open_record, GrantRecord};
use crate::request::Request;
use crate::state::State;
use crate::transition::filled_at;

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

/// Plans a grant's charge: as [`plan`], after [`prepare`].
///
/// # Errors
/// As [`prepare`] and [`plan`].
pub fn plan_charge(config: &Config, request: Request, now_ms: f64, draws: &[f64]) -> Result<Plan, Error> {
    if config.kind == crate::config::Kind::SlidingWindow {
        return Err(crate::sliding_window::two_windows());
    }
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
