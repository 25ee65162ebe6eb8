//! One limit's decision over any [`StateStore`]: `limit` and `check`. Each
//! reads at most two shards, decides with the pure functions, and writes only
//! what a granted limit changed. Time and randomness are arguments.

use crate::config::{Config, MIN_CHOOSE_TWO};
use crate::decision::{decide, ShardDecision};
use crate::error::{Error, Part, Problem};
use crate::request::{check_call, validate_request, Request};
use crate::result::RateLimitResult;
use crate::shard::{combine, first_shard, second_shard};
use crate::state::{State, StateRef, StateStore, WriteInfo};
use crate::random::unit_random;
use crate::transition::{full_at, initial_state};

/// One limit of a [`limit_all`] batch.
#[derive(Debug, Clone, Copy)]
pub struct BatchItem<'a> {
    /// The limit's name.
    pub name: &'a str,
    /// The key, or `None` for the shared state.
    pub key: Option<&'a str>,
    /// The limit's validated config.
    pub config: &'a Config,
    /// What is asked of it.
    pub request: Request,
}

/// A decision not yet written: the answer and up to two shard states.
pub(crate) struct Outcome {
    pub(crate) result: RateLimitResult,
    pub(crate) writes: [Option<(u32, State)>; 2],
    /// The tokens each write takes (the whole count, or two shares).
    pub(crate) shares: [f64; 2],
}

impl Outcome {
    fn single(shard: u32, decision: ShardDecision, count: f64) -> Outcome {
        if decision.ok {
            Outcome { result: RateLimitResult::allowed(decision.retry_after_ms), writes: [Some((shard, decision.next)), None], shares: [count, 0.0] }
        } else {
            Outcome::refused(decision.retry_after_ms)
        }
    }

    fn refused(retry_after_ms: Option<f64>) -> Outcome {
        Outcome { result: RateLimitResult::refused(refused_wait(retry_after_ms)), writes: [None, None], shares: [0.0, 0.0] }
    }
}

/// A refused decision always has a wait; fail closed if arithmetic ever loses it.
pub(crate) fn refused_wait(retry_after_ms: Option<f64>) -> f64 {
    retry_after_ms.filter(|wait| !wait.is_nan()).unwrap_or(f64::INFINITY)
}

pub(crate) fn draw(random: &mut impl FnMut() -> Result<f64, Error>) -> Result<f64, Error> {
    unit_random(random()?)
}

/// Never writes a state outside the finite numbers. Decisions already refuse
/// what would leave them (see `decide_as_reference`); this is the last line.
pub(crate) fn check_writes<'a>(name: &str, writes: impl IntoIterator<Item = &'a State>) -> Result<(), Error> {
    for state in writes {
        if !(state.value.is_finite() && state.ts.is_finite()) {
            let parts = vec![
                Part::Text("the limit's state would leave the range of numbers (value "),
                Part::Number(state.value),
                Part::Text(", ts "),
                Part::Number(state.ts),
                Part::Text("); nothing was written"),
            ];
            return Err(Error::request(name, Problem::parts("count", parts)));
        }
    }
    Ok(())
}

pub(crate) async fn read<S: StateStore>(store: &mut S, at: StateRef<'_>) -> Result<Option<State>, S::Error> {
    match store.read(at).await? {
        Some(state) => Ok(Some(state.checked(at)?)),
        None => Ok(None),
    }
}

/// Reads the shards the power of two choices asks for and decides, writing nothing.
///
/// Read a random shard `a`. Unsharded, decide on it. If it grants and is
/// fresh, or there are fewer than 3 shards, use it. Otherwise read a random
/// other shard `b`: if one grants, use it; if both, the one left with more;
/// if neither, try them combined.
pub(crate) async fn decide_one<S: StateStore>(
    store: &mut S,
    item: BatchItem<'_>,
    now_ms: f64,
    random: &mut impl FnMut() -> Result<f64, Error>,
) -> Result<Outcome, S::Error> {
    let BatchItem { name, key, config, request } = item;
    let divided;
    let shard_config = if config.shard_count == 1 {
        config
    } else {
        divided = config.per_shard();
        &divided
    };
    let shard_count = config.shard_count;
    let at = |shard| StateRef { name, key, shard };
    let first = if shard_count == 1 { 0 } else { first_shard(shard_count, draw(random)?) };
    let stored_first = read(store, at(first)).await?;
    let state_first = match stored_first {
        Some(state) => state,
        None => initial_state(shard_config, now_ms, || draw(random))?,
    };
    let alone_first = decide(state_first, shard_config, now_ms, request);
    // A fresh shard (or one of only two) that grants is enough. One that
    // refuses is not the last word: the request may need two shards' worth,
    // which validation allows, and refusing on one shard alone would refuse
    // it forever on a fresh limit, since refusals write nothing.
    let first_is_enough = alone_first.ok && (stored_first.is_none() || shard_count < MIN_CHOOSE_TWO);
    if shard_count == 1 || first_is_enough {
        return Ok(Outcome::single(first, alone_first, request.count));
    }
    let second = second_shard(first, shard_count, draw(random)?);
    let state_second = match read(store, at(second)).await? {
        Some(state) => state,
        None => initial_state(shard_config, now_ms, || draw(random))?,
    };
    let alone_second = decide(state_second, shard_config, now_ms, request);
    Ok(match (alone_first.ok, alone_second.ok) {
        (true, false) => Outcome::single(first, alone_first, request.count),
        (false, true) => Outcome::single(second, alone_second, request.count),
        (true, true) if alone_first.next.value > alone_second.next.value => Outcome::single(first, alone_first, request.count),
        (true, true) => Outcome::single(second, alone_second, request.count),
        (false, false) => {
            let combined = combine([state_first, state_second], [alone_first, alone_second], shard_config, now_ms, request);
            if combined.ok {
                Outcome {
                    result: RateLimitResult::allowed(combined.retry_after_ms),
                    writes: [Some((first, combined.next[0])), Some((second, combined.next[1]))],
                    shares: combined.shares,
                }
            } else {
                Outcome::refused(combined.retry_after_ms)
            }
        }
    })
}

/// Consumes `request.count` tokens of one limit if it allows, writing its new state.
///
/// ```
/// # use ratebound::*;
/// # use std::collections::HashMap;
/// # struct Memory(HashMap<u32, State>);
/// # impl StateStore for Memory {
/// #     type Error = Error;
/// #     async fn read(&mut self, at: StateRef<'_>) -> Result<Option<State>, Error> { Ok(self.0.get(&at.shard).copied()) }
/// #     async fn write(&mut self, at: StateRef<'_>, state: Option<State>, _: WriteInfo) -> Result<(), Error> {
/// #         match state { Some(s) => { self.0.insert(at.shard, s); } None => { self.0.remove(&at.shard); } } Ok(())
/// #     }
/// # }
/// # fn block_on<F: std::future::Future>(f: F) -> F::Output {
/// #     let mut f = std::pin::pin!(f);
/// #     match f.as_mut().poll(&mut std::task::Context::from_waker(std::task::Waker::noop())) {
/// #         std::task::Poll::Ready(v) => v, _ => unreachable!(),
/// #     }
/// # }
/// let config = Config::try_from(&RawConfig::token_bucket(10.0, 60_000.0).with("capacity", 3.0)).unwrap();
/// let mut store = Memory(HashMap::new());
/// let mut random = || Ok(0.5);
/// let request = Request { count: 1.0, reserve: false };
/// for _ in 0..3 {
///     assert!(block_on(limit(&mut store, "send", Some("ada"), &config, request, 0.0, &mut random)).unwrap().is_ok());
/// }
/// let refused = block_on(limit(&mut store, "send", Some("ada"), &config, request, 0.0, &mut random)).unwrap();
/// assert_eq!(refused, RateLimitResult::refused(6_000.0));
/// ```
///
/// # Errors
/// Bad `count` or `now`, a count that can never be granted, a corrupt stored
/// state, or the store's own error; in every case nothing is written.
pub async fn limit<S: StateStore>(
    store: &mut S,
    name: &str,
    key: Option<&str>,
    config: &Config,
    request: Request,
    now_ms: f64,
    random: &mut impl FnMut() -> Result<f64, Error>,
) -> Result<RateLimitResult, S::Error> {
    decide_and_maybe_write(store, BatchItem { name, key, config, request }, now_ms, random, true).await
}

/// What [`limit`] would answer now; never writes.
///
/// # Errors
/// As [`limit`].
pub async fn check<S: StateStore>(
    store: &mut S,
    name: &str,
    key: Option<&str>,
    config: &Config,
    request: Request,
    now_ms: f64,
    random: &mut impl FnMut() -> Result<f64, Error>,
) -> Result<RateLimitResult, S::Error> {
    decide_and_maybe_write(store, BatchItem { name, key, config, request }, now_ms, random, false).await
}

/// [`limit`] when `write`, else [`check`].
///
/// # Errors
/// As [`limit`].
pub async fn decide_and_maybe_write<S: StateStore>(
    store: &mut S,
    item: BatchItem<'_>,
    now_ms: f64,
    random: &mut impl FnMut() -> Result<f64, Error>,
    write: bool,
) -> Result<RateLimitResult, S::Error> {
    Ok(decide_and_write(store, item, now_ms, random, write).await?.result)
}

/// [`decide_and_maybe_write`], keeping what was written (for a grant's handle).
pub(crate) async fn decide_and_write<S: StateStore>(
    store: &mut S,
    item: BatchItem<'_>,
    now_ms: f64,
    random: &mut impl FnMut() -> Result<f64, Error>,
    write: bool,
) -> Result<Outcome, S::Error> {
    check_call(item.name, item.key, item.config, now_ms)?;
    validate_request(item.name, item.config, item.request)?;
    let outcome = decide_one(store, item, now_ms, random).await?;
    check_wait(item, &outcome.result)?;
    if write {
        check_writes(item.name, outcome.writes.iter().flatten().map(|(_, state)| state))?;
        let shard_config = item.config.per_shard();
        for (shard, state) in outcome.writes.iter().flatten() {
            let info = WriteInfo { now_ms, full_at_ms: full_at(*state, &shard_config) };
            store.write(StateRef { name: item.name, key: item.key, shard: *shard }, Some(*state), info).await?;
        }
    }
    Ok(outcome)
}

/// A wait is a promise: one that no clock can keep (a reservation of 1e308
/// tokens without `maxReserved`, say) is an error, never an "ok" whose
/// `setTimeout(work, Infinity)` would run the work at once (issue 18).
pub(crate) fn check_wait(item: BatchItem<'_>, result: &RateLimitResult) -> Result<(), Error> {
    match result.retry_after_ms() {
        Some(wait) if !wait.is_finite() => Err(Error::WaitUnbounded { limit: item.name.into(), count: item.request.count }),
        _ => Ok(()),
    }
}
