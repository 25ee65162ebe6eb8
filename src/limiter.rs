//! The second half of a call: one limit's decision on the states its plan
//! read, synchronously, with the writes it makes as data. And the reference
//! driver that runs plan, read, decide and write over a [`StateStore`].

use crate::config::{Config, Kind, MIN_CHOOSE_TWO};
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

/// A decision's writes, the tokens each takes, and its answer.
type Decided = ([Option<(u32, State)>; 2], [f64; 2], RateLimitResult);

impl Outcome {
    fn single(shard: u32, decision: ShardDecision, count: f64) -> Decided {
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
        let wait = match self.result {
            RateLimitResult::Refused { retry_after_ms, .. } => Some(retry_after_ms),
            RateLimitResult::Allowed { .. } => None,
        };
        if config.kind == Kind::SlidingWindow {
            return crate::sliding_window::figures(config, now_ms, [held(0).1, held(1).1], wait);
        }
        // The whole limit as `getValue` would report it from the shards read.
        let report = crate::value::value_of(config, now_ms, self.reads, held);
        let whole = State { value: report.value, ts: report.ts };
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
#[inline]
pub fn decide_planned(config: &Config, request: Request, now_ms: f64, plan: &Plan, stored: [Option<State>; 2]) -> Result<Outcome, Error> {
    if config.kind == Kind::SlidingWindow {
        return crate::sliding_window::decide(config, request, now_ms, plan, stored);
    }
    match crate::fast::granted_alone(config, request, now_ms, plan, stored) {
        Some(outcome) => Ok(outcome),
        None => decide_in_full(config, request, now_ms, plan, stored),
    }
}

/// [`decide_planned`]'s general path: every call, the common one too
/// (which [`crate::fast`] answers the same without it).
pub(crate) fn decide_in_full(config: &Config, request: Request, now_ms: f64, plan: &Plan, stored: [Option<State>; 2]) -> Result<Outcome, Error> {
    if config.kind == Kind::SlidingWindow {
        return crate::sliding_window::decide(config, request, now_ms, plan, stored);
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigInput;

    fn config(input: ConfigInput) -> Config {
        Config::try_from(&input).unwrap()
    }

    /// Shards 0 and 1 of a 4-shard limit (draws 0, 0), decided at `now_ms` on `stored`.
    fn on_shards_0_and_1(config: &Config, request: Request, now_ms: f64, stored: [Option<State>; 2]) -> Outcome {
        let planned = plan(config, now_ms, &[0.0, 0.0]).unwrap();
        assert_eq!(planned.shards, [0, 1]);
        decide_planned(config, request, now_ms, &planned, stored).unwrap()
    }

    /// Reproduces issue 24, item 11: a combined refusal waited for each
    /// share as if both shards refilled, but a shard at capacity refills
    /// nothing, so the same call on the same shards was refused again.
    /// Token bucket (10 per s per shard): shard 0 full at 10, shard 1 empty,
    /// 15 asked; the split said 250 ms, but shard 1 needs 5 tokens: 500 ms.
    /// Fixed window (10 a window per shard, capacity 20): shard 0 full, shard
    /// 1 empty, 35 asked; the split said one window, but two are needed.
    #[test]
    fn a_sharded_refusal_waits_until_both_shards_together_hold_the_count_when_one_is_full() {
        let bucket = config(ConfigInput::token_bucket(40.0, 1_000.0).with("shards", 4.0));
        let window = config(ConfigInput::fixed_window(40.0, 1_000.0).with("shards", 4.0).with("capacity", 80.0).with("start", 0.0));
        for (limit, full, count, expected_ms) in [(bucket, 10.0, 15.0, 500.0), (window, 20.0, 35.0, 2_000.0)] {
            let request = Request { count, reserve: false };
            let stored = [Some(State { value: full, ts: 0.0 }), Some(State { value: 0.0, ts: 0.0 })];
            let refused = on_shards_0_and_1(&limit, request, 0.0, stored);
            assert_eq!(refused.result, RateLimitResult::refused(expected_ms), "{:?}", limit.kind);
            let wait = refused.result.retry_after_ms().unwrap();
            assert!(on_shards_0_and_1(&limit, request, wait, stored).result.is_ok(), "{:?}", limit.kind);
            // Not padded either: a wait one ulp shorter is refused.
            assert!(!on_shards_0_and_1(&limit, request, wait.next_down(), stored).result.is_ok(), "{:?}", limit.kind);
        }
    }

    /// Issue 24, item 12, through a decision: three shards of a 30-per-second
    /// bucket each 10 in debt are the whole limit at -30, full again in 2 s.
    #[test]
    fn a_decisions_reset_figure_on_three_shards_is_when_the_limit_is_full_again() {
        let limit = config(ConfigInput::token_bucket(30.0, 1_000.0).with("shards", 3.0).with("maxReserved", 30.0));
        let in_debt = Some(State { value: -10.0, ts: 0.0 });
        let planned = plan(&limit, 0.0, &[0.0, 0.0]).unwrap();
        let outcome = decide_planned(&limit, Request { count: 0.0, reserve: false }, 0.0, &planned, [in_debt, in_debt]).unwrap();
        let shown = outcome.figures(&limit, 0.0, true);
        assert_eq!((shown.limit, shown.remaining, shown.reset, shown.sampled), (30.0, 0.0, 2.0, 2));
    }

    /// The power of two choices on exactly 3 shards (the least that decides
    /// on two): a stored first shard that grants is not enough, the fuller
    /// of the two is charged. With 2 shards, the first that grants is.
    #[test]
    fn with_three_shards_a_stored_first_shard_that_grants_yields_to_a_fuller_second() {
        for (shards, charged) in [(3.0, 1), (2.0, 0)] {
            for limit in [
                config(ConfigInput::token_bucket(30.0, 1_000.0).with("shards", shards)),
                config(ConfigInput::fixed_window(30.0, 1_000.0).with("shards", shards).with("start", 0.0)),
            ] {
                let planned = plan(&limit, 0.0, &[0.0, 0.0]).unwrap();
                assert_eq!(planned.shards, [0, 1]);
                let stored = [Some(State { value: 2.0, ts: 0.0 }), Some(State { value: 5.0, ts: 0.0 })];
                let outcome = decide_planned(&limit, Request { count: 1.0, reserve: false }, 0.0, &planned, stored).unwrap();
                let left = if charged == 1 { 4.0 } else { 1.0 };
                assert_eq!(outcome.writes, [Some((charged, State { value: left, ts: 0.0 })), None], "{shards} shards, {:?}", limit.kind);
            }
        }
    }

    /// Of two shards that both grant, the one left with more is charged; on
    /// a tie, the second (the Redis and PostgreSQL ports break ties the
    /// same way, and their answers are compared bit for bit).
    #[test]
    fn of_two_granting_shards_the_fuller_is_charged_and_a_tie_goes_to_the_second() {
        let limit = config(ConfigInput::token_bucket(40.0, 1_000.0).with("shards", 4.0));
        let planned = plan(&limit, 0.0, &[0.0, 0.0]).unwrap();
        for (first, second, charged) in [(8.0, 6.0, 0), (6.0, 8.0, 1), (7.0, 7.0, 1)] {
            let stored = [Some(State { value: first, ts: 0.0 }), Some(State { value: second, ts: 0.0 })];
            let outcome = decide_planned(&limit, Request { count: 1.0, reserve: false }, 0.0, &planned, stored).unwrap();
            let written = outcome.writes[0].map(|(shard, _)| shard);
            assert_eq!((written, outcome.writes[1]), (Some(charged), None), "{first} and {second}");
        }
    }

    #[test]
    fn a_sharded_decisions_figures_estimate_the_whole_limit_from_the_shards_read() {
        for limit in [
            config(ConfigInput::token_bucket(30.0, 1_000.0).with("shards", 3.0)),
            config(ConfigInput::fixed_window(30.0, 1_000.0).with("shards", 3.0).with("start", 0.0)),
        ] {
            let planned = plan(&limit, 0.0, &[0.0, 0.0]).unwrap();
            let stored = [Some(State { value: 4.0, ts: 0.0 }), Some(State { value: 6.0, ts: 0.0 })];
            // A check of 0: the two shards read hold 4 and 6, so the three about 15.
            let outcome = decide_planned(&limit, Request { count: 0.0, reserve: false }, 0.0, &planned, stored).unwrap();
            let shown = outcome.figures(&limit, 0.0, true);
            assert_eq!((shown.limit, shown.remaining, shown.sampled), (30.0, 15.0, 2), "{:?}", limit.kind);
            // Taking 5 from the fuller one leaves 4 and 1: about 7.5, shown as 7.
            let outcome = decide_planned(&limit, Request { count: 5.0, reserve: false }, 0.0, &planned, stored).unwrap();
            assert_eq!(outcome.writes, [Some((1, State { value: 1.0, ts: 0.0 })), None]);
            assert_eq!(outcome.figures(&limit, 0.0, true).remaining, 7.0, "{:?}", limit.kind);
        }
    }

    /// A refused reservation on two shards waits until they hold the count
    /// less the debt each may take: 4 shards of 10 a second, maxReserved 2 a
    /// shard, at -1 and 0, 15 asked: 11 must be there, 12 more tokens at 20
    /// a second: 600 ms (not 800, as for a request that may not reserve).
    #[test]
    fn a_sharded_reservation_refused_waits_until_the_two_shards_hold_the_count_less_their_debt() {
        let limit = config(ConfigInput::token_bucket(40.0, 1_000.0).with("shards", 4.0).with("maxReserved", 8.0));
        let request = Request { count: 15.0, reserve: true };
        let stored = [Some(State { value: -1.0, ts: 0.0 }), Some(State { value: 0.0, ts: 0.0 })];
        let refused = on_shards_0_and_1(&limit, request, 0.0, stored);
        assert_eq!(refused.result, RateLimitResult::refused(600.0));
        assert!(on_shards_0_and_1(&limit, request, 600.0, stored).result.is_ok());
        assert!(!on_shards_0_and_1(&limit, request, 600.0f64.next_down(), stored).result.is_ok());
    }

    /// Where the windows counted fall short (a debt of 1e-10 needs a third
    /// window, within the estimate's tolerance of two), the wait is searched
    /// up to the window that grants, exactly: 2 000 ms, not past it.
    #[test]
    fn a_sharded_refusal_one_window_past_the_estimate_waits_exactly_for_that_window() {
        let limit = config(ConfigInput::fixed_window(4.0, 1_000.0).with("shards", 4.0).with("start", 0.0));
        let request = Request { count: 2.0, reserve: false };
        let stored = [Some(State { value: 0.0, ts: 0.0 }), Some(State { value: -1e-10, ts: 0.0 })];
        let refused = on_shards_0_and_1(&limit, request, 0.0, stored);
        assert_eq!(refused.result, RateLimitResult::refused(2_000.0));
        assert!(!on_shards_0_and_1(&limit, request, 1_999.0, stored).result.is_ok());
        assert!(on_shards_0_and_1(&limit, request, 2_000.0, stored).result.is_ok());
    }

    /// Found by the promised-waits sweep while fixing item 11: the windows
    /// the pair needs were counted as `ceil(4/3 ÷ 2/3)`, which is 3 in floats
    /// (the quotient is 2.0000000000000004), so the wait was one window too
    /// long although the level split grants at the first edge.
    #[test]
    fn a_sharded_refusal_waits_no_window_longer_than_the_two_shards_need() {
        let limit = config(ConfigInput::fixed_window(2.0, 1_000.0).with("maxReserved", 5.0).with("shards", 3.0).with("start", 0.0));
        let request = Request { count: 1.0, reserve: false };
        // Draws 0.69, 0.44: shards 2 and 0.
        let planned = plan(&limit, 43.0, &[0.69, 0.44]).unwrap();
        assert_eq!(planned.shards, [2, 0]);
        let stored = [Some(State { value: 0.0, ts: 0.0 }), Some(State { value: -1.0 / 3.0, ts: 0.0 })];
        let refused = decide_planned(&limit, request, 43.0, &planned, stored).unwrap();
        assert_eq!(refused.result, RateLimitResult::refused(957.0));
        assert!(decide_planned(&limit, request, 1_000.0, &planned, stored).unwrap().result.is_ok());
    }
}
