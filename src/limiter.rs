//! The calls of a limiter — limit, check, limitAll, getValue, reset — run
//! against any [`StateStore`]. Each reads at most two shards per limit,
//! decides with the pure functions, and writes only what a granted limit
//! changed. Time and randomness are arguments.

use serde::Serialize;
use tsify::Tsify;

use crate::config::{Config, Kind, RateLimitConfig};
use crate::decision::{decide, validate_request, Request, ShardDecision};
use crate::error::Error;
use crate::js_number::js_number;
use crate::shard::{combine, first_shard, sample_shards, second_shard, MIN_CHOOSE_TWO};
use crate::state::{State, StateRef, StateStore, WriteInfo};
use crate::transition::{advance, full_at, initial_state, unit_random};

/// The answer to `limit` and `check`.
#[derive(Tsify, Serialize, Debug, Clone, Copy, PartialEq)]
#[serde(untagged)]
pub enum RateLimitResult {
    /// Granted. `retryAfter` is present when the tokens were reserved: wait
    /// that many ms before doing the work.
    Allowed {
        #[tsify(type = "true")]
        ok: bool,
        #[serde(rename = "retryAfter", skip_serializing_if = "Option::is_none")]
        #[tsify(optional)]
        retry_after_ms: Option<f64>,
    },
    /// Refused; nothing was written. Retry in `retryAfter` ms.
    Refused {
        #[tsify(type = "false")]
        ok: bool,
        #[serde(rename = "retryAfter")]
        retry_after_ms: f64,
    },
}

impl RateLimitResult {
    /// Granted, possibly as a reservation that is due in `retry_after_ms`.
    pub fn allowed(retry_after_ms: Option<f64>) -> Self {
        RateLimitResult::Allowed { ok: true, retry_after_ms }
    }

    /// Refused: retry in `retry_after_ms`.
    pub fn refused(retry_after_ms: f64) -> Self {
        RateLimitResult::Refused { ok: false, retry_after_ms }
    }

    /// Whether the tokens were granted.
    pub fn is_ok(&self) -> bool {
        matches!(self, RateLimitResult::Allowed { .. })
    }

    /// The wait in ms, when there is one.
    pub fn retry_after_ms(&self) -> Option<f64> {
        match *self {
            RateLimitResult::Allowed { retry_after_ms, .. } => retry_after_ms,
            RateLimitResult::Refused { retry_after_ms, .. } => Some(retry_after_ms),
        }
    }
}

/// `getValue`'s report: `calculateRateLimit({ value, ts }, config, now)` projects the whole limit forward.
#[derive(Tsify, Serialize, Debug, Clone, PartialEq)]
#[tsify(rename = "RateLimitValue")]
pub struct ValueReport {
    /// Tokens available in the whole limit at `ts` (negative: reserved debt).
    pub value: f64,
    /// When `value` was true, in ms since the epoch.
    pub ts: f64,
    /// The best sampled shard.
    pub shard: u32,
    /// The limit's config with `capacity`, `shards` and a fixed window's `start` filled in.
    pub config: RateLimitConfig,
}

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
struct Outcome {
    result: RateLimitResult,
    writes: [Option<(u32, State)>; 2],
}

impl Outcome {
    fn single(shard: u32, decision: ShardDecision) -> Outcome {
        if decision.ok {
            Outcome { result: RateLimitResult::allowed(decision.retry_after_ms), writes: [Some((shard, decision.next)), None] }
        } else {
            Outcome { result: RateLimitResult::refused(refused_wait(decision.retry_after_ms)), writes: [None, None] }
        }
    }
}

/// A refused decision always has a wait; fail closed if arithmetic ever loses it.
fn refused_wait(retry_after_ms: Option<f64>) -> f64 {
    retry_after_ms.filter(|wait| !wait.is_nan()).unwrap_or(f64::INFINITY)
}

fn draw(random: &mut impl FnMut() -> Result<f64, Error>) -> Result<f64, Error> {
    unit_random(random()?)
}

/// The longest limit name or key, in UTF-8 bytes. Hosts cap their keys
/// (Deno KV at 2048 bytes for the whole key), so the limiter refuses longer
/// ones up front with a clear error rather than failing inside a host.
pub const MAX_KEY_BYTES: usize = 1024;

/// Checks what every call shares: a finite `now`, and a name and key within [`MAX_KEY_BYTES`].
fn check_call(name: &str, key: Option<&str>, now_ms: f64) -> Result<(), Error> {
    if name.len() > MAX_KEY_BYTES {
        return Err(Error::InvalidName {
            got: format!("a name of {} bytes; the most is {MAX_KEY_BYTES}", name.len()),
        });
    }
    if let Some(key) = key.filter(|key| key.len() > MAX_KEY_BYTES) {
        return Err(Error::request(
            name,
            "key",
            format!("key must be at most {MAX_KEY_BYTES} bytes of UTF-8 (got {} bytes)", key.len()),
        ));
    }
    if !now_ms.is_finite() {
        return Err(Error::request(name, "now", format!("now must be a finite number of ms (got {})", js_number(now_ms))));
    }
    Ok(())
}

/// Never writes a state outside the finite numbers. Decisions already refuse
/// what would leave them (see `decide_as_reference`); this is the last line.
fn check_writes<'a>(name: &str, writes: impl IntoIterator<Item = &'a State>) -> Result<(), Error> {
    for state in writes {
        if !(state.value.is_finite() && state.ts.is_finite()) {
            return Err(Error::request(
                name,
                "count",
                format!(
                    "the limit's state would leave the range of numbers (value {}, ts {}); nothing was written",
                    js_number(state.value),
                    js_number(state.ts)
                ),
            ));
        }
    }
    Ok(())
}

async fn read<S: StateStore>(store: &mut S, at: StateRef<'_>) -> Result<Option<State>, S::Error> {
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
async fn decide_one<S: StateStore>(
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
        return Ok(Outcome::single(first, alone_first));
    }
    let second = second_shard(first, shard_count, draw(random)?);
    let state_second = match read(store, at(second)).await? {
        Some(state) => state,
        None => initial_state(shard_config, now_ms, || draw(random))?,
    };
    let alone_second = decide(state_second, shard_config, now_ms, request);
    Ok(match (alone_first.ok, alone_second.ok) {
        (true, false) => Outcome::single(first, alone_first),
        (false, true) => Outcome::single(second, alone_second),
        (true, true) if alone_first.next.value > alone_second.next.value => Outcome::single(first, alone_first),
        (true, true) => Outcome::single(second, alone_second),
        (false, false) => {
            let combined = combine([state_first, state_second], [alone_first, alone_second], shard_config, now_ms, request);
            if combined.ok {
                Outcome {
                    result: RateLimitResult::allowed(combined.retry_after_ms),
                    writes: [Some((first, combined.next[0])), Some((second, combined.next[1]))],
                }
            } else {
                Outcome { result: RateLimitResult::refused(refused_wait(combined.retry_after_ms)), writes: [None, None] }
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
    check_call(item.name, item.key, now_ms)?;
    validate_request(item.name, item.config, item.request)?;
    let outcome = decide_one(store, item, now_ms, random).await?;
    if write {
        check_writes(item.name, outcome.writes.iter().flatten().map(|(_, state)| state))?;
        let shard_config = item.config.per_shard();
        for (shard, state) in outcome.writes.into_iter().flatten() {
            let info = WriteInfo { now_ms, full_at_ms: full_at(state, &shard_config) };
            store.write(StateRef { name: item.name, key: item.key, shard }, Some(state), info).await?;
        }
    }
    Ok(outcome.result)
}

/// Reads through to a store, but keeps writes to itself so that later
/// decisions of a batch see the earlier ones before anything is written.
struct Pending<'s, S> {
    store: &'s mut S,
    writes: Vec<(String, Option<String>, u32, State, WriteInfo)>,
}

impl<S: StateStore> StateStore for Pending<'_, S> {
    type Error = S::Error;

    async fn read(&mut self, at: StateRef<'_>) -> Result<Option<State>, S::Error> {
        let pending = self.writes.iter().rev().find(|(name, key, shard, _, _)| {
            name == at.name && key.as_deref() == at.key && *shard == at.shard
        });
        match pending {
            Some((_, _, _, state, _)) => Ok(Some(*state)),
            None => self.store.read(at).await,
        }
    }

    async fn write(&mut self, at: StateRef<'_>, state: Option<State>, info: WriteInfo) -> Result<(), S::Error> {
        if let Some(state) = state {
            self.writes.push((at.name.into(), at.key.map(Into::into), at.shard, state, info));
        }
        Ok(())
    }
}

/// Decides several limits together: all are consumed, or none is.
///
/// Every item is decided against the states the earlier items would leave
/// (two items on the same limit and key add up). When any is refused nothing
/// is written and the answer is refused with the largest wait of the batch,
/// so a caller never holds some limits while waiting for others. When all are
/// granted, `retryAfter` is the largest reservation wait, if any. With
/// `write = false` this is `checkAll`.
///
/// # Errors
/// As [`limit`], for any item; validation runs for all items before any read.
pub async fn limit_all<S: StateStore>(
    store: &mut S,
    items: &[BatchItem<'_>],
    now_ms: f64,
    random: &mut impl FnMut() -> Result<f64, Error>,
    write: bool,
) -> Result<RateLimitResult, S::Error> {
    for item in items {
        check_call(item.name, item.key, now_ms)?;
        validate_request(item.name, item.config, item.request)?;
    }
    let mut pending = Pending { store, writes: Vec::new() };
    let mut all_ok = true;
    let mut longest_wait: Option<f64> = None;
    for item in items {
        let outcome = decide_one(&mut pending, *item, now_ms, random).await?;
        all_ok &= outcome.result.is_ok();
        if let Some(wait) = outcome.result.retry_after_ms() {
            longest_wait = Some(longest_wait.map_or(wait, |longest| longest.max(wait)));
        }
        let shard_config = item.config.per_shard();
        for (shard, state) in outcome.writes.into_iter().flatten() {
            let info = WriteInfo { now_ms, full_at_ms: full_at(state, &shard_config) };
            pending.write(StateRef { name: item.name, key: item.key, shard }, Some(state), info).await?;
        }
    }
    if !all_ok {
        return Ok(RateLimitResult::refused(refused_wait(longest_wait)));
    }
    if write {
        let Pending { store, writes } = pending;
        for (name, _, _, state, _) in &writes {
            check_writes(name, [state])?;
        }
        for (name, key, shard, state, info) in &writes {
            store.write(StateRef { name, key: key.as_deref(), shard: *shard }, Some(*state), *info).await?;
        }
    }
    Ok(RateLimitResult::allowed(longest_wait))
}

/// The limit's current value, for dashboards and client previews.
///
/// Unsharded: the stored state, or a full one when there is none (for a
/// fixed window without `start`, one whose window starts at `now`: the
/// latest its first write can pick).
/// Sharded: `min(sample_shards, shards)` distinct shards (a missing one is
/// full) projected to the latest sampled `ts`; `value` is their mean times
/// the shard count, `shard` the best one sampled.
///
/// # Errors
/// `sampleShards` that is not an integer `>= 1`, a bad `now`, a corrupt
/// stored state, or the store's error.
pub async fn get_value<S: StateStore>(
    store: &mut S,
    name: &str,
    key: Option<&str>,
    config: &Config,
    sample_shards_wanted: Option<f64>,
    now_ms: f64,
    random: &mut impl FnMut() -> Result<f64, Error>,
) -> Result<ValueReport, S::Error> {
    check_call(name, key, now_ms)?;
    let wanted = match sample_shards_wanted {
        None => 1,
        Some(wanted) if wanted.fract() == 0.0 && wanted >= 1.0 => wanted.min(f64::from(config.shard_count)) as u32,
        Some(wanted) => {
            return Err(Error::request(
                name,
                "sampleShards",
                format!("sampleShards must be an integer >= 1 (got {})", js_number(wanted)),
            )
            .into())
        }
    };
    let shard_config = config.per_shard();
    let shards = if config.shard_count == 1 { vec![0] } else { sample_shards(config.shard_count, wanted, || draw(random))? };
    let mut sampled = Vec::with_capacity(shards.len());
    for shard in shards {
        let state = match read(store, StateRef { name, key, shard }).await? {
            Some(state) => state,
            // A fixed window with a random start picks it on its first
            // write. Until then report the latest start it can pick, `now`:
            // its real windows end no later than these, so a projection from
            // this report never promises a refill before the limiter gives it.
            None if config.kind == Kind::FixedWindow && config.start_ms.is_none() => {
                State { value: shard_config.capacity, ts: now_ms }
            }
            None => initial_state(&shard_config, now_ms, || draw(random))?,
        };
        sampled.push((shard, state));
    }
    if let [(shard, state)] = sampled[..] {
        if config.shard_count == 1 {
            return Ok(ValueReport { value: state.value, ts: state.ts, shard, config: config.describe(Some(state.ts)) });
        }
    }
    let latest_ts = sampled.iter().map(|(_, state)| state.ts).fold(f64::NEG_INFINITY, f64::max);
    let projected: Vec<(u32, State)> = sampled
        .iter()
        .map(|&(shard, state)| {
            let at_latest = advance(state, &shard_config, latest_ts, 0.0);
            (shard, State { value: at_latest.value, ts: at_latest.ts })
        })
        .collect();
    // `wanted >= 1` and `shard_count >= 1`, so `projected` is never empty;
    // were it, the report would be the empty shard 0 rather than a panic.
    let (best_shard, best) = projected
        .iter()
        .copied()
        .reduce(|best, candidate| if candidate.1.value > best.1.value { candidate } else { best })
        .unwrap_or((0, State { value: 0.0, ts: now_ms }));
    let mean = projected.iter().map(|(_, state)| state.value).sum::<f64>() / projected.len() as f64;
    let value = mean * f64::from(config.shard_count);
    Ok(ValueReport { value, ts: best.ts, shard: best_shard, config: config.describe(Some(best.ts)) })
}

/// Deletes the state of every shard of `name` and `key`.
///
/// # Errors
/// The store's error; shards deleted before it stay deleted (a reset that is
/// repeated completes it).
pub async fn reset<S: StateStore>(store: &mut S, name: &str, key: Option<&str>, config: &Config, now_ms: f64) -> Result<(), S::Error> {
    check_call(name, key, now_ms)?;
    for shard in 0..config.shard_count {
        store.write(StateRef { name, key, shard }, None, WriteInfo::delete(now_ms)).await?;
    }
    Ok(())
}
