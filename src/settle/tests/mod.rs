//! The settle module's tests: a one-key store, and the grants it charges.

mod charging;
mod settling;

use super::*;
use crate::config::{Config, ConfigInput, Kind};
use crate::error::{Error, Field, Problem, Rule};
use crate::records::{grant_record_shard, ledger_shard};
use crate::request::Request;
use crate::state::{State, StateRef, StateStore, WriteInfo};
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

/// What the last write of `shard` said about when it may be dropped.
fn full_at_of(store: &Shards, shard: u32) -> Option<f64> {
    store.0.get(&shard).map(|(_, full_at_ms)| *full_at_ms)
}

/// A 4-shard limit (10 a second per shard, capacity 10) whose shards 0
/// and 1 hold 6 and 4: a grant of 8 takes 5 and 3 from them together.
fn two_shard_grant(store: &mut Shards, kind: Kind) -> (Config, Grant) {
    let limit = match kind {
        Kind::TokenBucket => config(ConfigInput::token_bucket(40.0, 1_000.0).with("shards", 4.0)),
        Kind::FixedWindow => config(ConfigInput::fixed_window(40.0, 1_000.0).with("shards", 4.0).with("start", 0.0)),
        Kind::SlidingWindow => unreachable!("a sliding window has no grants"),
    };
    store.0.insert(0, (State { value: 6.0, ts: 0.0 }, f64::INFINITY));
    store.0.insert(1, (State { value: 4.0, ts: 0.0 }, f64::INFINITY));
    let grant = charge(store, &limit, 8.0, 0.0, &[0.0, 0.0], 3);
    let parts: Vec<(u32, f64, f64)> = grant.parts().iter().map(|part| (part.shard, part.count, part.value)).collect();
    assert_eq!(parts, vec![(0, 5.0, 1.0), (1, 3.0, 1.0)]);
    (limit, grant)
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
