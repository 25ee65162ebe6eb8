//! `limitAll` and `checkAll`: several limits decided together, all consumed or none.

use crate::error::Error;
use crate::limiter::{check_wait, check_writes, decide_one, refused_wait, BatchItem};
use crate::request::{check_call, validate_request};
use crate::result::RateLimitResult;
use crate::state::{State, StateRef, StateStore, WriteInfo};
use crate::transition::full_at;

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
        check_call(item.name, item.key, item.config, now_ms)?;
        validate_request(item.name, item.config, item.request)?;
    }
    let mut pending = Pending { store, writes: Vec::new() };
    let mut all_ok = true;
    let mut longest_wait: Option<f64> = None;
    for item in items {
        let outcome = decide_one(&mut pending, *item, now_ms, random).await?;
        check_wait(*item, &outcome.result)?;
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
