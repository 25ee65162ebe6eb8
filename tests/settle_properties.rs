//! Grants that settle: the refund rule against a model that never charged.
//!
//! The traffic: a random unsharded limit (either algorithm, with or without
//! `capacity` and `maxReserved`), then up to 60 steps, each a random gap of
//! time followed by a plain `limit`, a grant (an estimate taken with a
//! handle, reserving or not), or a settle of one of the grants so far at a
//! random actual (below, at or above the estimate; 0 is a cancel), which may
//! be a grant settled already.
//!
//! The model is the same limit fed the same consumption, except that every
//! settled grant charged only what was used: it replays, from the first
//! instant, each plain request the real limiter admitted, each grant at
//! `min(estimate, actual)` (the estimate while it is open) and each extra
//! the real settle took, at the instant it took it. The property: at every
//! step the real limit holds no more than the model, so a refund never
//! raises a limit above what it would have been had the unused tokens never
//! been charged. A second settle of a grant is `GRANT_SETTLED`, or gives
//! nothing back.
//!
//! Native only: proptest is a native dev-dependency.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::HashMap;

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use ratebound::{
    calculate_rate_limit, decide_call, limit_with_grant, settle, Config, ConfigInput, Error, Field, Grant, Request, State, StateRef,
    StateStore, WriteInfo,
};

/// An in-memory store; it keeps what a write's `info` says about dropping.
#[derive(Debug, Default)]
struct Memory {
    states: HashMap<(String, Option<String>, u32), (State, f64)>,
}

impl StateStore for Memory {
    type Error = Error;

    fn read(&mut self, at: StateRef<'_>) -> Result<Option<State>, Error> {
        Ok(self.states.get(&(at.name.into(), at.key.map(Into::into), at.shard)).map(|(state, _)| *state))
    }

    fn write(&mut self, at: StateRef<'_>, state: Option<State>, info: WriteInfo) -> Result<(), Error> {
        let slot = (at.name.into(), at.key.map(Into::into), at.shard);
        match state {
            Some(state) => self.states.insert(slot, (state, info.full_at_ms)),
            None => self.states.remove(&slot),
        };
        Ok(())
    }
}

impl Memory {
    /// Drops what a write said may be dropped by `now`, as a TTL would.
    fn expire(&mut self, now_ms: f64) {
        self.states.retain(|_, (_, full_at)| *full_at > now_ms);
    }
}

const NAME: &str = "llm";
const KEY: Option<&str> = Some("team");

#[derive(Debug, Clone)]
enum Step {
    Plain { gap_ms: f64, fraction: f64 },
    Grant { gap_ms: f64, fraction: f64, reserve: bool },
    Settle { gap_ms: f64, which: f64, actual_factor: f64 },
}

fn a_step() -> impl Strategy<Value = Step> {
    let gap = prop_oneof![Just(0.0), 0.0..2_000.0f64, (0u32..5).prop_map(|w| f64::from(w) * 1_000.0)];
    prop_oneof![
        (gap.clone(), 0.0..1.0f64).prop_map(|(gap_ms, fraction)| Step::Plain { gap_ms, fraction }),
        (gap.clone(), 0.0..1.0f64, any::<bool>()).prop_map(|(gap_ms, fraction, reserve)| Step::Grant { gap_ms, fraction, reserve }),
        (gap, 0.0..1.0f64, prop_oneof![Just(0.0), Just(1.0), 0.0..1.0f64, 1.0..1.6f64])
            .prop_map(|(gap_ms, which, actual_factor)| Step::Settle { gap_ms, which, actual_factor }),
    ]
}

fn a_config() -> impl Strategy<Value = Config> {
    (any::<bool>(), 1u32..50, prop_oneof![Just(1_000.0), Just(5_000.0)], prop_oneof![Just(None), (1u32..4).prop_map(Some)], prop_oneof![Just(None), Just(Some(0.0)), Just(Some(0.5))])
        .prop_map(|(bucket, rate, period_ms, capacity_factor, max_reserved_factor)| {
            let rate = f64::from(rate);
            let mut raw = match bucket {
                true => ConfigInput::token_bucket(rate, period_ms),
                false => ConfigInput::fixed_window(rate, period_ms).with("start", 0.0),
            };
            let capacity = rate * f64::from(capacity_factor.unwrap_or(1));
            raw = raw.with("capacity", capacity);
            if let Some(factor) = max_reserved_factor {
                raw = raw.with("maxReserved", capacity * factor);
            }
            Config::try_from(&raw).expect("valid")
        })
}

/// One grant of the run, and what the model charges for it.
struct Open {
    grant: Grant,
    charged_in_model: f64,
    settled: bool,
}

/// The model's value at `now`: a full limit at `first_ms`, fed `events`.
fn model_value(config: &Config, first_ms: f64, events: &[(f64, f64)], grants: &[(f64, usize)], open: &[Open], now_ms: f64) -> f64 {
    let mut all: Vec<(f64, f64)> = events.to_vec();
    all.extend(grants.iter().map(|&(at, index)| (at, open[index].charged_in_model)));
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    // The configs here have known windows: no phase is drawn.
    let _ = first_ms;
    let mut state = None;
    for (at, count) in all {
        let next = calculate_rate_limit(state, config, at, count, 0.0);
        state = Some(State { value: next.value, ts: next.ts });
    }
    calculate_rate_limit(state, config, now_ms, 0.0, 0.0).value
}

fn real_value(store: &Memory, config: &Config, now_ms: f64) -> f64 {
    let stored = store.states.get(&(NAME.to_string(), KEY.map(Into::into), 0)).map(|(state, _)| *state);
    calculate_rate_limit(stored, config, now_ms, 0.0, 0.0).value
}

fn settings(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct("proptest-regressions/settle_properties.txt"))),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(settings(1500))]

    #[test]
    fn a_refund_never_raises_a_limit_above_a_model_that_never_charged_the_unused_tokens(
        config in a_config(),
        steps in prop::collection::vec(a_step(), 1..60),
    ) {
        let first_ms = 0.0;
        let mut store = Memory::default();
        // Unsharded limits with known windows: no call draws a random number.
        let mut now = first_ms;
        let mut events: Vec<(f64, f64)> = Vec::new();
        let mut grants: Vec<(f64, usize)> = Vec::new();
        let mut open: Vec<Open> = Vec::new();
        let capacity = config.capacity;
        for step in &steps {
            match *step {
                Step::Plain { gap_ms, fraction } => {
                    now += gap_ms;
                    store.expire(now);
                    let count = (fraction * capacity).floor();
                    let request = Request { count, reserve: false };
                    let result = decide_call(&mut store, NAME, KEY, &config, request, now, &[], true).unwrap().result;
                    if result.is_ok() { events.push((now, count)); }
                }
                Step::Grant { gap_ms, fraction, reserve } => {
                    now += gap_ms;
                    store.expire(now);
                    let count = (fraction * capacity).ceil().max(1.0);
                    // Each grant's id: its own record slot and tag.
                    let id = (open.len() as u32, open.len() as f64);
                    let request = Request { count, reserve };
                    let (outcome, grant) = limit_with_grant(&mut store, NAME, KEY, &config, request, now, &[], id).unwrap();
                    prop_assert_eq!(outcome.result.is_ok(), grant.is_some());
                    if let Some(grant) = grant {
                        prop_assert_eq!(grant.parts().len(), 1);
                        grants.push((now, open.len()));
                        open.push(Open { grant, charged_in_model: count, settled: false });
                    }
                }
                Step::Settle { gap_ms, which, actual_factor } => {
                    if open.is_empty() { continue; }
                    now += gap_ms;
                    store.expire(now);
                    let index = ((which * open.len() as f64) as usize).min(open.len() - 1);
                    let estimate = open[index].grant.count;
                    let actual = (estimate * actual_factor).round();
                    match settle(&mut store, NAME, KEY, &open[index].grant, &config, actual, now, &[]) {
                        Ok(settled) => {
                            prop_assert!(settled.refunded >= 0.0 && settled.charged >= 0.0 && settled.unpaid >= 0.0);
                            prop_assert!(settled.refunded <= (estimate - actual).max(0.0), "refunded {} of {} unused", settled.refunded, estimate - actual);
                            if open[index].settled {
                                prop_assert_eq!(settled.refunded, 0.0, "a second settle gave tokens back");
                            } else {
                                open[index].charged_in_model = estimate.min(actual);
                                open[index].settled = true;
                            }
                            if settled.charged > 0.0 { events.push((now, settled.charged)); }
                        }
                        Err(error) => {
                            prop_assert!(open[index].settled, "a first settle failed: {:?}", error);
                            prop_assert_eq!(error.code(), "GRANT_SETTLED");
                        }
                    }
                }
            }
            let real = real_value(&store, &config, now);
            let model = model_value(&config, first_ms, &events, &grants, &open, now);
            prop_assert!(real <= model + 1e-9 * capacity.max(1.0), "at {} ms the limit holds {} but a limit that never charged the unused tokens holds {}", now, real, model);
        }
    }
}

fn bucket() -> Config {
    Config::try_from(&ConfigInput::token_bucket(40_000.0, 60_000.0)).unwrap()
}

/// A grant's charge (reserving) on `NAME`/`KEY` of a limit that draws nothing; it must be granted.
fn grant(store: &mut Memory, config: &Config, count: f64, now_ms: f64, id: u32) -> Grant {
    let request = Request { count, reserve: true };
    limit_with_grant(store, NAME, KEY, config, request, now_ms, &[], (id, f64::from(id))).unwrap().1.expect("granted")
}

/// Settles `grant` on `NAME`/`KEY`.
fn settle_at(store: &mut Memory, grant: &Grant, config: &Config, actual: f64, now_ms: f64) -> Result<ratebound::Settled, Error> {
    settle(store, NAME, KEY, grant, config, actual, now_ms, &[])
}

#[test]
fn a_settle_at_the_charge_gives_back_exactly_what_was_not_used() {
    let config = bucket();
    let mut store = Memory::default();
    let handle = grant(&mut store, &config, 4_000.0, 0.0, 1);
    let settled = settle_at(&mut store, &handle, &config, 1_000.0, 0.0).unwrap();
    assert_eq!((settled.refunded, settled.charged, settled.unpaid), (3_000.0, 0.0, 0.0));
    assert_eq!(real_value(&store, &config, 0.0), 39_000.0);
}

#[test]
fn a_busy_bucket_still_gets_the_whole_refund_seconds_later() {
    // The bucket stayed low after the charge, so no token the charge took
    // would have overflowed it: the whole unused part comes back.
    let config = bucket();
    let mut store = Memory::default();
    let _drain = grant(&mut store, &config, 36_000.0, 0.0, 1);
    let handle = grant(&mut store, &config, 4_000.0, 0.0, 2);
    let settled = settle_at(&mut store, &handle, &config, 1_000.0, 5_000.0).unwrap();
    assert_eq!(settled.refunded, 3_000.0);
}

#[test]
fn once_the_limit_would_have_refilled_a_refund_gives_nothing_and_a_late_second_settle_is_allowed() {
    let config = bucket();
    let mut store = Memory::default();
    let handle = grant(&mut store, &config, 4_000.0, 0.0, 1);
    // After 6 s, 4,000 tokens would have flowed in: a full bucket would have overflowed them.
    let settled = settle_at(&mut store, &handle, &config, 0.0, 6_000.0).unwrap();
    assert_eq!(settled.refunded, 0.0);
    assert!(settle_at(&mut store, &handle, &config, 0.0, 7_000.0).unwrap().refunded == 0.0);
}

#[test]
fn a_second_settle_while_a_refund_is_possible_is_grant_settled_and_writes_nothing() {
    let config = bucket();
    let mut store = Memory::default();
    let handle = grant(&mut store, &config, 4_000.0, 0.0, 1);
    settle_at(&mut store, &handle, &config, 1_000.0, 100.0).unwrap();
    let before = store.states.clone();
    let error = settle_at(&mut store, &handle, &config, 0.0, 200.0).unwrap_err();
    assert_eq!(error, Error::GrantSettled);
    assert_eq!(error.code(), "GRANT_SETTLED");
    assert_eq!(store.states, before);
}

#[test]
fn a_negative_or_non_finite_actual_is_an_error_that_writes_nothing() {
    let config = bucket();
    let mut store = Memory::default();
    let handle = grant(&mut store, &config, 4_000.0, 0.0, 1);
    let before = store.states.clone();
    for actual in [-1.0, f64::NAN, f64::INFINITY] {
        let error = settle_at(&mut store, &handle, &config, actual, 10.0).unwrap_err();
        assert_eq!((error.code(), error.field()), ("INVALID_REQUEST", Some(Field::Actual)));
        assert_eq!(store.states, before);
    }
}

#[test]
fn using_more_than_the_estimate_goes_into_debt_no_deeper_than_max_reserved() {
    let config = Config::try_from(&ConfigInput::fixed_window(10.0, 1_000.0).with("start", 0.0).with("maxReserved", 5.0)).unwrap();
    let mut store = Memory::default();
    let handle = grant(&mut store, &config, 8.0, 0.0, 1);
    let settled = settle_at(&mut store, &handle, &config, 20.0, 10.0).unwrap();
    // 2 left, 5 of debt allowed: 7 of the 12 extra are taken, 5 stay unpaid.
    assert_eq!((settled.refunded, settled.charged, settled.unpaid), (0.0, 7.0, 5.0));
    assert_eq!(real_value(&store, &config, 10.0), -5.0);
    assert_eq!(settled.retry_after_ms, Some(990.0));
}

#[test]
fn a_sharded_grant_served_by_two_shards_settles_on_both_in_proportion() {
    let config = Config::try_from(&ConfigInput::token_bucket(30.0, 1_000.0).with("shards", 3.0)).unwrap();
    let mut store = Memory::default();
    // Shards hold 10 each; leave two of them at 6 and 4, then ask for 8.
    store.states.insert((NAME.into(), KEY.map(Into::into), 0), (State { value: 6.0, ts: 0.0 }, f64::INFINITY));
    store.states.insert((NAME.into(), KEY.map(Into::into), 1), (State { value: 4.0, ts: 0.0 }, f64::INFINITY));
    let request = Request { count: 8.0, reserve: false };
    // Draws 0.1, 0.1: shard 0 first, then shard (0 + 1 + floor(0.1 × 2)) % 3 = 1.
    let (_, handle) = limit_with_grant(&mut store, NAME, KEY, &config, request, 0.0, &[0.1, 0.1], (1, 1.0)).unwrap();
    let handle = handle.expect("granted by two shards together");
    let shares: Vec<(u32, f64)> = handle.parts().iter().map(|part| (part.shard, part.count)).collect();
    assert_eq!(shares, vec![(0, 5.0), (1, 3.0)]);
    let settled = settle_at(&mut store, &handle, &config, 0.0, 0.0).unwrap();
    assert_eq!(settled.refunded, 8.0);
    let value = |shard| store.states[&(NAME.to_string(), KEY.map(Into::into), shard)].0.value;
    assert_eq!((value(0), value(1)), (6.0, 4.0));
}

#[test]
fn fixed_window_refunds_within_the_charge_window_and_not_after_it() {
    let config = Config::try_from(&ConfigInput::fixed_window(10.0, 1_000.0).with("start", 0.0)).unwrap();
    let mut store = Memory::default();
    let handle = grant(&mut store, &config, 6.0, 100.0, 1);
    let within = settle_at(&mut store, &handle, &config, 2.0, 900.0).unwrap();
    assert_eq!(within.refunded, 4.0);
    let later = grant(&mut store, &config, 6.0, 1_100.0, 2);
    let next_window = settle_at(&mut store, &later, &config, 0.0, 2_000.0).unwrap();
    assert_eq!(next_window.refunded, 0.0);
}
