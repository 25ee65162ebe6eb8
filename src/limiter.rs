//! The second half of a call: one limit's decision on the states its plan
//! read, synchronously, with the writes it makes as data. And the reference
//! driver that runs plan, read, decide and write over a [`StateStore`].

use crate::config::{Config, MIN_CHOOSE_TWO};
use crate::decision::{decide, ShardDecision};
use crate::error::{Error, Field, Problem, Rule};
use crate::figures::{figures, Figures};
use crate::plan::{plan, Plan};
use crate::request::{check_now, validate_request, Request};
use crate::result::RateLimitResult;
use crate::shard::combine;
use crate::state::{State, StateRef, StateStore, WriteInfo};
use crate::transition::full_at;

/// A decision not yet written: the answer, up to two shard states to write,
/// and what each shard holds after it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outcome {
    /// The answer.
    pub result: RateLimitResult,
    /// `(shard, state)` to write, when granted.
    pub writes: [Option<(u32, State)>; 2],
    /// The tokens each write takes (the whole count, or two shares).
    pub shares: [f64; 2],
    /// The shards read, and each one's state as read (or fresh), for the answer's figures.
    pub read: [(u32, State); 2],
    /// How many shards were read (1 or 2).
    pub reads: usize,
}

impl Outcome {
    fn single(shard: u32, decision: ShardDecision, count: f64) -> ([Option<(u32, State)>; 2], [f64; 2], RateLimitResult) {
        match decision.ok {
            true => ([Some((shard, decision.next)), None], [count, 0.0], RateLimitResult::allowed(decision.retry_after_ms)),
            false => ([None, None], [0.0, 0.0], RateLimitResult::refused(refused_wait(decision.retry_after_ms))),
        }
    }

    /// The figures HTTP headers show, from this decision: what the limit
    /// holds after it (its writes when `committed`, else as it was), for a
    /// sharded limit an estimate from the shards it read.
    pub fn figures(&self, config: &Config, now_ms: f64, committed: bool) -> Figures {
        let held = |index: usize| {
            let (shard, read) = self.read[index];
            let written = self.writes.iter().flatten().find(|(written, _)| committed && *written == shard);
            (shard, Some(written.map_or(read, |(_, state)| *state)))
        };
        // The whole limit as `getValue` would report it from the shards read.
        let report = crate::value::value_of(config, now_ms, self.reads, held);
        let whole = State { value: report.value, ts: report.ts };
        let wait = match self.result {
            RateLimitResult::Refused { retry_after_ms, .. } => Some(retry_after_ms),
            RateLimitResult::Allowed { .. } => None,
        };
        figures(whole, config, now_ms, wait, self.reads as u32)
    }
}

/// A refused decision always has a wait; fail closed if arithmetic ever loses it.
pub(crate) fn refused_wait(retry_after_ms: Option<f64>) -> f64 {
    retry_after_ms.filter(|wait| !wait.is_nan()).unwrap_or(f64::INFINITY)
}

/// Never writes a state outside the finite numbers. Decisions already refuse
/// what would leave them (see `decide_as_reference`); this is the last line.
pub(crate) fn check_writes<'a>(writes: impl IntoIterator<Item = &'a State>) -> Result<(), Error> {
    for state in writes {
        if !(state.value.is_finite() && state.ts.is_finite()) {
            return Err(Error::InvalidRequest(Problem::with_numbers(Field::Count, Rule::Unstorable, [state.value, state.ts, f64::NAN])));
        }
    }
    Ok(())
}

/// A wait is a promise: one that no clock can keep (a reservation of 1e308
/// tokens without `maxReserved`, say) is an error, never an "ok" whose
/// `setTimeout(work, Infinity)` would run the work at once (issue 18).
pub(crate) fn check_wait(request: Request, result: &RateLimitResult) -> Result<(), Error> {
    match result.retry_after_ms() {
        Some(wait) if !wait.is_finite() => Err(Error::WaitUnbounded { count: request.count }),
        _ => Ok(()),
    }
}

/// Everything about a call that can be known before any read: a `now` the
/// limit's period can be kept with, a request that can ever be granted, and
/// a reservation that would be due even on a full limit. Bad input is
/// decided here, before a store is touched, whatever the failure policy.
///
/// # Errors
/// As [`check_now`] and [`validate_request`]; [`Error::WaitUnbounded`] for a
/// reservation that no state could make due.
pub fn prepare(config: &Config, request: Request, now_ms: f64) -> Result<(), Error> {
    check_now(config, now_ms)?;
    validate_request(config, request)?;
    if request.reserve && config.max_reserved.is_none() {
        let shard_config = config.per_shard();
        let full = State { value: shard_config.capacity, ts: now_ms };
        let best = decide(full, &shard_config, now_ms, request);
        check_wait(request, &RateLimitResult::allowed(best.retry_after_ms.map(|wait| if best.ok { wait } else { f64::INFINITY })))?;
    }
    Ok(())
}

/// Decides one limit on the states its [`plan`] read (`None`: no state yet).
/// Writes nothing: the writes are in the outcome.
///
/// The power of two choices: decide on the first shard. Unsharded, that is
/// the answer. If it grants and is fresh, or there are fewer than 3 shards
/// and it grants, use it. Otherwise decide on the second: if one grants, use
/// it; if both, the one left with more; if neither, try them combined.
///
/// # Errors
/// [`Error::WaitUnbounded`] for a wait no clock can keep;
/// [`Error::InvalidRequest`] for a state that would leave the numbers.
pub fn decide_planned(config: &Config, request: Request, now_ms: f64, plan: &Plan, stored: [Option<State>; 2]) -> Result<Outcome, Error> {
    let shard_config = config.per_shard();
    let [first, second] = plan.shards;
    let state_first = stored[0].unwrap_or(plan.fresh[0]);
    let alone_first = decide(state_first, &shard_config, now_ms, request);
    // A fresh shard (or one of only two) that grants is enough. One that
    // refuses is not the last word: the request may need two shards' worth,
    // which validation allows, and refusing on one shard alone would refuse
    // it forever on a fresh limit, since refusals write nothing.
    let first_is_enough = alone_first.ok && (stored[0].is_none() || config.shard_count < MIN_CHOOSE_TWO);
    let read = [(first, state_first), (second, stored[1].unwrap_or(plan.fresh[1]))];
    let (writes, shares, result) = if plan.reads == 1 || first_is_enough {
        Outcome::single(first, alone_first, request.count)
    } else {
        let state_second = stored[1].unwrap_or(plan.fresh[1]);
        let alone_second = decide(state_second, &shard_config, now_ms, request);
        match (alone_first.ok, alone_second.ok) {
            (true, false) => Outcome::single(first, alone_first, request.count),
            (false, true) => Outcome::single(second, alone_second, request.count),
            (true, true) if alone_first.next.value > alone_second.next.value => Outcome::single(first, alone_first, request.count),
            (true, true) => Outcome::single(second, alone_second, request.count),
            (false, false) => {
                let combined = combine([state_first, state_second], [alone_first, alone_second], &shard_config, now_ms, request);
                match combined.ok {
                    true => (
                        [Some((first, combined.next[0])), Some((second, combined.next[1]))],
                        combined.shares,
                        RateLimitResult::allowed(combined.retry_after_ms),
                    ),
                    false => ([None, None], [0.0, 0.0], RateLimitResult::refused(refused_wait(combined.retry_after_ms))),
                }
            }
        }
    };
    let reads = plan.reads;
    check_wait(request, &result)?;
    check_writes(writes.iter().flatten().map(|(_, state)| state))?;
    Ok(Outcome { result, writes, shares, read, reads })
}

/// What a write of `state` to a shard of `config` tells the store.
pub fn write_info(config: &Config, state: State, now_ms: f64) -> WriteInfo {
    WriteInfo { now_ms, full_at_ms: full_at(state, &config.per_shard()) }
}

/// Reads the shards `plan` names from `store`.
pub(crate) fn read_planned<S: StateStore>(store: &mut S, name: &str, key: Option<&str>, plan: &Plan) -> Result<[Option<State>; 2], S::Error> {
    let mut stored = [None, None];
    for (index, slot) in stored.iter_mut().enumerate().take(plan.reads) {
        *slot = store.read(StateRef { name, key, shard: plan.shards[index] })?;
    }
    Ok(stored)
}

/// Consumes `request.count` tokens of one limit if it allows (when `write`;
/// else only answers, as `check`), over `store`: plan, read, decide, write.
///
/// ```
/// # use ratebound::*;
/// # use std::collections::HashMap;
/// # struct Memory(HashMap<u32, State>);
/// # impl StateStore for Memory {
/// #     type Error = Error;
/// #     fn read(&mut self, at: StateRef<'_>) -> Result<Option<State>, Error> { Ok(self.0.get(&at.shard).copied()) }
/// #     fn write(&mut self, at: StateRef<'_>, state: Option<State>, _: WriteInfo) -> Result<(), Error> {
/// #         match state { Some(s) => { self.0.insert(at.shard, s); } None => { self.0.remove(&at.shard); } } Ok(())
/// #     }
/// # }
/// let config = Config::try_from(&ConfigInput::token_bucket(10.0, 60_000.0).with("capacity", 3.0)).unwrap();
/// let mut store = Memory(HashMap::new());
/// let request = Request { count: 1.0, reserve: false };
/// for _ in 0..3 {
///     assert!(decide_call(&mut store, "send", Some("ada"), &config, request, 0.0, &[], true).unwrap().result.is_ok());
/// }
/// let refused = decide_call(&mut store, "send", Some("ada"), &config, request, 0.0, &[], true).unwrap();
/// assert_eq!(refused.result, RateLimitResult::refused(6_000.0));
/// ```
///
/// # Errors
/// As [`prepare`], [`plan`] and [`decide_planned`], or the store's own; in
/// every case nothing is written.
#[allow(clippy::too_many_arguments)]
pub fn decide_call<S: StateStore>(
    store: &mut S,
    name: &str,
    key: Option<&str>,
    config: &Config,
    request: Request,
    now_ms: f64,
    draws: &[f64],
    write: bool,
) -> Result<Outcome, S::Error> {
    prepare(config, request, now_ms)?;
    let planned = plan(config, now_ms, draws)?;
    let stored = read_planned(store, name, key, &planned)?;
    let outcome = decide_planned(config, request, now_ms, &planned, stored)?;
    if write {
        for (shard, state) in outcome.writes.iter().flatten() {
            store.write(StateRef { name, key, shard: *shard }, Some(*state), write_info(config, *state, now_ms))?;
        }
    }
    Ok(outcome)
}
