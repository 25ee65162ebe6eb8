//! Properties of the limiter over random traffic, checked with proptest.
//!
//! The traffic: a random limit (either algorithm, 1–16 shards, with or
//! without `capacity`, `maxReserved` and a fixed window's `start`), a random
//! starting instant (near 0 or near today's epoch ms), and up to 80 steps,
//! each a random gap of time (occasionally backwards), then a `limit`, a
//! `check` or a two-item `limitAll` on the same key, asking a random count up
//! to what validation allows, with or without `reserve`. The random numbers
//! each call draws (before any read) come from a seeded generator, so every
//! case replays exactly.
//!
//! Native only: proptest is a native dev-dependency.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use std::collections::HashMap;

use common::SplitMix64;

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use ratebound::{
    decide_call, limit_all, BatchItem, Config, ConfigInput, Error, Kind, RateLimitResult, Request, State, StateRef,
    StateStore, WriteInfo,
};

// ---------------------------------------------------------------------------
// Harness.

type Slot = (String, Option<String>, u32);
type States = HashMap<Slot, State>;

/// An in-memory store that counts the shards each call reads and writes.
#[derive(Debug, Default, Clone)]
struct Memory {
    states: States,
    reads: Vec<Slot>,
    writes: Vec<Slot>,
}

impl StateStore for Memory {
    type Error = Error;

    fn read(&mut self, at: StateRef<'_>) -> Result<Option<State>, Error> {
        let at = (at.name.to_string(), at.key.map(Into::into), at.shard);
        self.reads.push(at.clone());
        Ok(self.states.get(&at).copied())
    }

    fn write(&mut self, at: StateRef<'_>, state: Option<State>, _info: WriteInfo) -> Result<(), Error> {
        let at = (at.name.to_string(), at.key.map(Into::into), at.shard);
        self.writes.push(at.clone());
        match state {
            Some(state) => self.states.insert(at, state),
            None => self.states.remove(&at),
        };
        Ok(())
    }
}

const NAME: &str = "prop";
const KEY: Option<&str> = Some("k");

/// A limit as the strategy draws it.
#[derive(Debug, Clone)]
struct Limit {
    kind: Kind,
    rate: f64,
    period_ms: f64,
    /// `capacity` as a multiple of `rate`; `None` leaves the default (`rate`).
    capacity_factor: Option<f64>,
    /// `maxReserved` as a multiple of the capacity (so `Some(0.0)` is "none").
    max_reserved_factor: Option<f64>,
    shards: u32,
    /// A fixed window's `start`, in periods from the first instant.
    start_periods: Option<f64>,
}

impl Limit {
    /// Whether times are whole milliseconds: yes for a fixed window.
    ///
    /// Hosts pass `Date.now()` (whole ms) and periods like `MINUTE`; then
    /// every window computation (`floor((now - ts) / period)`, `ts + k ×
    /// period`) is exact. With fractional periods and times far from `start`,
    /// `ts + k × period` can round to just before `now` while
    /// `(now - ts) / period` rounded down, so a call at the very instant of a
    /// window edge can see the edge as not yet passed and the next call at the
    /// same instant see it passed: a window's tokens arrive "twice" at once
    /// (it did with period 17286.20082803345 ms and start 10⁶ periods back).
    /// The reference computes the same floats, so that is a property of the
    /// shared formula, not of this port; these properties stay where
    /// arithmetic is exact. Token buckets are continuous and run on any float.
    fn whole_ms(&self) -> bool {
        self.kind == Kind::FixedWindow
    }

    /// The first instant of the traffic, whole for a fixed window.
    fn first_instant(&self, first_ms: f64) -> f64 {
        if self.whole_ms() { first_ms.round() } else { first_ms }
    }

    fn config(&self, first_ms: f64) -> Config {
        let mut raw = match self.kind {
            Kind::TokenBucket => ConfigInput::token_bucket(self.rate, self.period_ms),
            Kind::FixedWindow => ConfigInput::fixed_window(self.rate, self.period_ms),
            Kind::SlidingWindow => unreachable!("these limits take capacity, maxReserved and shards"),
        };
        let capacity = self.rate * self.capacity_factor.unwrap_or(1.0);
        if self.capacity_factor.is_some() {
            raw = raw.with("capacity", capacity);
        }
        if let Some(factor) = self.max_reserved_factor {
            raw = raw.with("maxReserved", capacity * factor);
        }
        raw = raw.with("shards", f64::from(self.shards));
        if let (Kind::FixedWindow, Some(periods)) = (self.kind, self.start_periods) {
            raw = raw.with("start", first_ms + (periods * self.period_ms).round());
        }
        Config::try_from(&raw).expect("the strategy draws valid configs")
    }
}

/// The largest count validation accepts, computed exactly as SPEC words it
/// (`max = capacity / shardFactor`, plus `maxReserved / shardFactor` when
/// reserving); an unlimited reservation is capped at twice the capacity here.
fn largest_count(config: &Config, reserve: bool) -> f64 {
    let shard_factor = if config.shard_count < 3 { 1.0 } else { f64::from(config.shard_count) / 2.0 };
    let max = config.capacity / shard_factor;
    match (reserve, config.max_reserved) {
        (false, _) => max,
        (true, Some(max_reserved)) => max + max_reserved / shard_factor,
        (true, None) => 2.0 * max,
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Limit,
    Check,
    /// `limitAll` of two items on the same limit and key; the second asks this fraction of the largest count.
    Batch(f64),
}

#[derive(Debug, Clone)]
struct Step {
    /// Time since the previous step, in periods (negative: the clock stepped back).
    gap_periods: f64,
    /// The count as a fraction of the largest valid one.
    count_fraction: f64,
    /// Round the count down to a whole number (when that leaves it positive).
    whole: bool,
    reserve: bool,
    op: Op,
}

impl Step {
    fn count(&self, fraction: f64, config: &Config) -> f64 {
        let count = fraction * largest_count(config, self.reserve);
        if self.whole && count >= 1.0 {
            count.floor()
        } else {
            count
        }
    }
}

/// What one step did.
#[derive(Debug, Clone)]
struct Record {
    now_ms: f64,
    op: Op,
    request: Request,
    /// All tokens asked for (both items of a batch).
    asked: f64,
    result: RateLimitResult,
    before: States,
    after: States,
    /// The numbers the call drew (the first item's, for a batch).
    drawn: Vec<f64>,
    shards_read: usize,
    shards_written: usize,
}

/// Runs `steps` from `first_ms` against a fresh store.
fn simulate(limit_under_test: &Limit, first_ms: f64, steps: &[Step], seed: u64) -> Result<Vec<Record>, TestCaseError> {
    let whole = |ms: f64| if limit_under_test.whole_ms() { ms.round() } else { ms };
    let first_ms = limit_under_test.first_instant(first_ms);
    let config = limit_under_test.config(first_ms);
    let mut store = Memory::default();
    let mut draws = SplitMix64(seed);
    let mut now_ms = first_ms;
    let mut records = Vec::with_capacity(steps.len());
    for (index, step) in steps.iter().enumerate() {
        if index > 0 {
            now_ms += whole(step.gap_periods * limit_under_test.period_ms);
        }
        let request = Request { count: step.count(step.count_fraction, &config), reserve: step.reserve };
        let before = store.states.clone();
        let drawn = draws.draws(&config);
        store.reads.clear();
        store.writes.clear();
        let decided = |store: &mut Memory, write| decide_call(store, NAME, KEY, &config, request, now_ms, &drawn, write).map(|outcome| outcome.result);
        let (asked, outcome) = match step.op {
            Op::Limit => (request.count, decided(&mut store, true)),
            Op::Check => (request.count, decided(&mut store, false)),
            Op::Batch(second_fraction) => {
                let second = Request { count: step.count(second_fraction, &config), ..request };
                let second_drawn = draws.draws(&config);
                let items = [
                    BatchItem { name: NAME, key: KEY, config: &config, request, draws: &drawn },
                    BatchItem { name: NAME, key: KEY, config: &config, request: second, draws: &second_drawn },
                ];
                (request.count + second.count, limit_all(&mut store, &items, now_ms, true))
            }
        };
        let result = outcome.map_err(|error| TestCaseError::fail(format!("step {index}: unexpected error {error:?}")))?;
        let distinct = |slots: &[Slot]| {
            let mut slots = slots.to_vec();
            slots.sort();
            slots.dedup();
            slots.len()
        };
        records.push(Record {
            now_ms,
            op: step.op,
            request,
            asked,
            result,
            before,
            after: store.states.clone(),
            drawn,
            shards_read: distinct(&store.reads),
            shards_written: distinct(&store.writes),
        });
    }
    Ok(records)
}

// ---------------------------------------------------------------------------
// Strategies.

fn a_limit(max_shards: u32) -> impl Strategy<Value = Limit> {
    (
        any::<bool>(),
        prop_oneof![(1u32..=100).prop_map(f64::from), 0.5f64..1_000.0],
        prop_oneof![(1u32..=60).prop_map(|seconds| f64::from(seconds) * 1_000.0), 1.0f64..100_000.0],
        prop_oneof![Just(None), (0.0f64..3.0).prop_map(Some)],
        prop_oneof![Just(None), Just(Some(0.0)), (0.0f64..2.0).prop_map(Some)],
        1..=max_shards,
        prop_oneof![Just(None), (-10.0f64..10.0).prop_map(Some), Just(Some(-1e6))],
    )
        .prop_map(|(fixed, rate, period_ms, capacity_factor, max_reserved_factor, shards, start_periods)| Limit {
            kind: if fixed { Kind::FixedWindow } else { Kind::TokenBucket },
            rate,
            // Fixed windows run on whole milliseconds: see `Limit::whole_ms`.
            period_ms: if fixed { period_ms.round().max(1.0) } else { period_ms },
            capacity_factor,
            max_reserved_factor,
            shards,
            start_periods,
        })
}

fn a_first_instant() -> impl Strategy<Value = f64> {
    prop_oneof![Just(0.0), Just(1_700_000_000_000.0), 0.0f64..2e12]
}

fn a_step(backwards: bool) -> impl Strategy<Value = Step> {
    let gap = if backwards {
        prop_oneof![2 => Just(0.0), 4 => 0.0f64..0.3, 3 => 0.0f64..2.0, 1 => -0.5f64..0.0].boxed()
    } else {
        prop_oneof![2 => Just(0.0), 4 => 0.0f64..0.3, 3 => 0.0f64..2.0].boxed()
    };
    (
        gap,
        prop_oneof![1 => Just(1.0), 3 => 0.5f64..=1.0, 3 => 0.0f64..=1.0],
        any::<bool>(),
        prop::bool::weighted(0.3),
        prop_oneof![6 => Just(Op::Limit), 2 => Just(Op::Check), 2 => (0.0f64..=1.0).prop_map(Op::Batch)],
    )
        .prop_map(|(gap_periods, count_fraction, whole, reserve, op)| Step { gap_periods, count_fraction, whole, reserve, op })
}

// ---------------------------------------------------------------------------
// Properties.

/// Failing cases are kept in `proptest-regressions/properties.txt` (commit
/// it): they replay first on every run.
fn settings(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct("proptest-regressions/properties.txt"))),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(settings(1000))]

    /// The whole limit never admits more than its bound, however the shards
    /// are picked: over any stretch of the traffic, not only from its start.
    ///
    /// The bound, derived per shard. Shard `s` holds `cap_s = capacity /
    /// shards` and refills at `rate_s = rate / shards`. Every state a call
    /// writes is `w_k = min(w_(k-1) + R_k, cap_s) - share_k`, where `R_k` is
    /// the refill since the shard's `ts` (a combined decision may give one
    /// shard a negative share; the shares of a request still add up to its
    /// count). Take the writes a shard gets during steps `i..=j`, whose
    /// instants lie in `[lo, hi]`. Splitting the first refill at `lo` and
    /// using `min(a + b, c) <= min(a, c) + b`,
    ///
    ///   Σ share_k <= cap_s - w_last + (refill the shard can take in over (lo, hi]).
    ///
    /// Refill over `(lo, hi]`: a token bucket's `ts` only moves forward and
    /// never past the latest `now` (a clock stepping back moves no `ts` back),
    /// so at most `rate_s × (hi - lo) / period`. A fixed window's shard takes
    /// `rate_s` per window edge of its own grid that its `ts` crosses, and any
    /// grid, whatever its phase (a random start per shard or the config's
    /// `start`), has at most `ceil((hi - lo) / period)` edges in `(lo, hi]`.
    /// Summing over shards, with `v_s` the stored values after step `j`:
    ///
    ///   admitted(i..=j) <= Σ_s (cap_s - v_s) + refill,
    ///   refill = rate × (hi - lo) / period            (token bucket)
    ///   refill = rate × ceil((hi - lo) / period)      (fixed window)
    ///
    /// And `v_s >= -maxReserved / shards` (or `>= 0` while nothing has been
    /// reserved), so `admitted(i..=j) <= capacity + maxReserved + refill`.
    /// With reservations and no `maxReserved` debt is unbounded by design;
    /// then the first form is the one that holds. Also, from the start of the
    /// traffic the shards cannot have lost more than was admitted:
    /// `Σ_s (cap_s - v_s) <= admitted(0..=j)`.
    ///
    /// Floating point: fixed windows run on whole milliseconds (see
    /// `Limit::whole_ms`), where the window arithmetic is exact; a token
    /// bucket's elapsed times add up to `hi - lo` up to rounding relative to
    /// the numbers involved. Token sums get a relative tolerance of 1e-9.
    #[test]
    fn admitted_tokens_never_exceed_capacity_plus_refill_plus_max_reserved(
        limit_under_test in a_limit(16),
        first_ms in a_first_instant(),
        steps in prop::collection::vec(a_step(true), 1..80),
        seed in any::<u64>(),
    ) {
        let first_ms = limit_under_test.first_instant(first_ms);
        let config = limit_under_test.config(first_ms);
        let shard = config.per_shard();
        let debt_floor = match shard.max_reserved {
            Some(max_reserved) => -max_reserved,
            None => 0.0,
        };
        let records = simulate(&limit_under_test, first_ms, &steps, seed)?;
        let refill_over = |span_ms: f64| match config.kind {
            Kind::TokenBucket => config.rate * span_ms / config.period_ms,
            Kind::FixedWindow => config.rate * (span_ms / config.period_ms).ceil(),
            Kind::SlidingWindow => unreachable!("not generated"),
        };
        let tolerance = |tokens: f64| 1e-9 * (tokens.abs() + config.capacity + 1.0);
        // admitted_through[k]: tokens granted by steps 0..k.
        let mut admitted_through = vec![0.0];
        let mut reserved_ever = false;
        for (j, record) in records.iter().enumerate() {
            let batch = matches!(record.op, Op::Batch(_));
            prop_assert!(record.shards_read <= if batch { 4 } else { 2 }, "step {j} read {} shards", record.shards_read);
            prop_assert!(record.shards_written <= if batch { 4 } else { 2 }, "step {j} wrote {} shards", record.shards_written);
            let granted = record.result.is_ok() && record.op != Op::Check;
            reserved_ever |= granted && record.request.reserve;
            admitted_through.push(admitted_through[j] + if granted { record.asked } else { 0.0 });

            let mut taken_out = 0.0;
            for index in 0..config.shard_count {
                let value = record.after.get(&(NAME.to_string(), KEY.map(Into::into), index)).map_or(shard.capacity, |state| state.value);
                prop_assert!(value <= shard.capacity + tolerance(value), "step {j}: shard {index} holds {value} > {}", shard.capacity);
                if shard.max_reserved.is_some() || !reserved_ever {
                    prop_assert!(value >= debt_floor - tolerance(value), "step {j}: shard {index} owes {value} < {debt_floor}");
                }
                taken_out += shard.capacity - value;
            }
            prop_assert!(taken_out <= admitted_through[j + 1] + tolerance(taken_out),
                "step {j}: the shards lost {taken_out} but only {} was admitted", admitted_through[j + 1]);

            let (mut lo_ms, mut hi_ms) = (record.now_ms, record.now_ms);
            for i in (0..=j).rev() {
                lo_ms = lo_ms.min(records[i].now_ms);
                hi_ms = hi_ms.max(records[i].now_ms);
                let admitted = admitted_through[j + 1] - admitted_through[i];
                let refill = refill_over(hi_ms - lo_ms);
                prop_assert!(admitted <= taken_out + refill + tolerance(admitted + refill),
                    "steps {i}..={j}: admitted {admitted} > lost {taken_out} + refill {refill}");
                if shard.max_reserved.is_some() || !reserved_ever {
                    let bound = config.capacity + config.max_reserved.unwrap_or(0.0) + refill;
                    prop_assert!(admitted <= bound + tolerance(bound),
                        "steps {i}..={j}: admitted {admitted} > capacity {} + maxReserved {:?} + refill {refill}",
                        config.capacity, config.max_reserved);
                }
            }
        }
    }

    /// On an unsharded limit with no other traffic, a refused request retried
    /// `retryAfter` later succeeds. One extra millisecond is allowed because
    /// near epoch milliseconds `now + retryAfter` itself rounds (by up to
    /// 0.00012 ms), which can land a hair before the refill or the window
    /// edge. A plain (non-reserving) request retried 1 ms *before*
    /// `retryAfter` (and a thousandth of a millisecond, see below) is still
    /// refused, so the wait is not padded either. The thousandth: a wait is
    /// whole milliseconds rounded up, and when the exact refill instant is a
    /// whole millisecond the reference's formula can land an ulp past it
    /// (37 tokens at 37 per 53,000 ms: 53,000.00000000001), which rounds up
    /// to the next millisecond. (A
    /// refused reservation's `retryAfter` is the wait until its count is
    /// fully covered, as in the reference; it may be granted earlier, once
    /// its debt fits `maxReserved`, so only the first half holds for it.)
    #[test]
    fn a_refused_request_retried_after_retry_after_succeeds(
        limit_under_test in a_limit(1),
        first_ms in a_first_instant(),
        steps in prop::collection::vec(a_step(false), 1..40),
        seed in any::<u64>(),
    ) {
        let first_ms = limit_under_test.first_instant(first_ms);
        let config = limit_under_test.config(first_ms);
        let records = simulate(&limit_under_test, first_ms, &steps, seed)?;
        for (index, record) in records.iter().enumerate() {
            if record.op != Op::Limit || record.result.is_ok() {
                continue;
            }
            let retry_after_ms = record.result.retry_after_ms().expect("a refusal has a wait");
            prop_assert!(retry_after_ms.is_finite() && retry_after_ms > 0.0, "step {index}: retryAfter {retry_after_ms}");
            let mut store = Memory { states: record.after.clone(), ..Memory::default() };
            let drawn = &record.drawn;
            if !record.request.reserve && retry_after_ms > 1.0 {
                let early = decide_call(&mut store, NAME, KEY, &config, record.request,
                    record.now_ms + retry_after_ms - 1.001, drawn, false).expect("check succeeds").result;
                prop_assert!(!early.is_ok(), "step {index}: granted 1.001 ms before retryAfter {retry_after_ms}");
            }
            let retried = decide_call(&mut store, NAME, KEY, &config, record.request,
                record.now_ms + retry_after_ms + 1.0, drawn, true).expect("limit succeeds").result;
            prop_assert!(retried.is_ok(), "step {index}: retried {retry_after_ms} ms later and got {retried:?}");
        }
    }

    /// `check` never changes the store and answers what `limit` would (given
    /// the same random numbers); a refused `limit` or `limitAll` changes nothing.
    #[test]
    fn check_and_refusals_never_change_the_store(
        limit_under_test in a_limit(16),
        first_ms in a_first_instant(),
        steps in prop::collection::vec(a_step(true), 1..60),
        seed in any::<u64>(),
    ) {
        let first_ms = limit_under_test.first_instant(first_ms);
        let config = limit_under_test.config(first_ms);
        let records = simulate(&limit_under_test, first_ms, &steps, seed)?;
        for (index, record) in records.iter().enumerate() {
            match (record.op, record.result.is_ok()) {
                (Op::Check, _) => {
                    prop_assert_eq!(&record.before, &record.after, "step {}: check changed the store", index);
                    let mut store = Memory { states: record.before.clone(), ..Memory::default() };
                    let limited = decide_call(&mut store, NAME, KEY, &config, record.request, record.now_ms, &record.drawn, true)
                        .expect("limit succeeds").result;
                    prop_assert_eq!(limited, record.result, "step {}: check and limit disagree", index);
                }
                (_, false) => {
                    prop_assert_eq!(record.shards_written, 0, "step {}: a refusal wrote", index);
                    prop_assert_eq!(&record.before, &record.after, "step {}: a refusal changed the store", index);
                }
                (_, true) => {}
            }
        }
    }
}
