//! The common call, decided without the general path's machinery: one
//! unsharded limit whose shard covers the count. Most calls a limiter sees
//! are granted, and most limits are unsharded; for those the power of two
//! choices, the combined search and the replays that make a wait a promise
//! (`honest_wait`) have nothing to do, since a grant that leaves the shard
//! at or above zero has no wait and its write is two finite numbers.
//!
//! [`granted_alone`] answers exactly what [`crate::limiter::decide_planned`]'s
//! general path answers, bit for bit, or `None` when the call is not the
//! common one (sharded, refused, reserved into debt, unstorable); the tests
//! below compare the two over random limits, states, clocks and counts.

use crate::config::Config;
use crate::limiter::Outcome;
use crate::plan::Plan;
use crate::request::Request;
use crate::result::RateLimitResult;
use crate::state::State;
use crate::transition::advance;

/// The decision on an unsharded limit's one shard when it grants with no
/// wait: `Some(outcome)` equal to the general path's, else `None`.
///
/// The general path decides a shard with `decide`: refused when the value
/// goes below zero (unless a reservation within `maxReserved`), refused when
/// the next state leaves the finite numbers, and a wait only when below
/// zero. A value at or above zero, finite, at a finite `ts` is therefore a
/// grant with no wait, whatever the request reserves, and the general path's
/// checks of the wait and the writes pass it unchanged.
#[inline]
pub(crate) fn granted_alone(config: &Config, request: Request, now_ms: f64, plan: &Plan, stored: [Option<State>; 2]) -> Option<Outcome> {
    // A hand-made plan may read one shard of a sharded limit: that shard's
    // config is not the limit's, so the general path decides it.
    if plan.reads != 1 || config.shard_count != 1 {
        return None;
    }
    let state = match stored[0] {
        Some(state) => state,
        None => plan.fresh[0],
    };
    let next = advance(state, config, now_ms, request.count);
    if !(next.value >= 0.0 && next.value.is_finite() && next.ts.is_finite()) {
        return None;
    }
    let [first, second] = plan.shards;
    let written = State { value: next.value, ts: next.ts };
    Some(Outcome {
        result: RateLimitResult::Allowed { ok: true, retry_after_ms: None },
        writes: [Some((first, written)), None],
        shares: [request.count, 0.0],
        read: [(first, state), (second, stored[1].unwrap_or(plan.fresh[1]))],
        reads: 1,
    })
}

/// The fast paths against the general ones they stand in for, number for
/// number (`to_bits`: `-0` is not `0`), over random limits (either
/// algorithm, 1 to 4 shards, with and without `capacity`, `maxReserved` and
/// `start`), states (none, full, in debt, above capacity, ahead of the clock,
/// and numbers no host stores: NaN and the infinities), clocks (near 0 and
/// near today, stepping back) and counts (0, fractions, past capacity),
/// reserving or not, on the plans `plan` makes and on hand-made ones.
#[cfg(test)]
#[cfg(not(target_arch = "wasm32"))] // proptest is a native dev-dependency
mod tests {
    use super::*;
    use crate::config::ConfigInput;
    use crate::decision::{checked, decide, decide_as_reference, ShardDecision};
    use crate::error::Error;
    use crate::limiter::{decide_in_full, decide_planned};
    use crate::plan::{plan, plan_in_full};
    use proptest::prelude::*;
    use proptest::test_runner::FileFailurePersistence;

    fn settings() -> ProptestConfig {
        ProptestConfig {
            cases: 20_000,
            failure_persistence: Some(Box::new(FileFailurePersistence::Direct("proptest-regressions/fast.txt"))),
            ..ProptestConfig::default()
        }
    }

    /// Every number of an outcome (or the error), as bits.
    fn bits(decided: &Result<Outcome, Error>) -> Vec<u64> {
        let Ok(outcome) = decided else { return Vec::new() };
        let state = |state: &State| [state.value.to_bits(), state.ts.to_bits()];
        let mut numbers = vec![u64::from(outcome.result.is_ok()), outcome.result.retry_after_ms().map_or(1, f64::to_bits)];
        for write in outcome.writes {
            numbers.extend(write.map_or([u64::MAX; 3], |(shard, written)| [u64::from(shard), state(&written)[0], state(&written)[1]]));
        }
        numbers.extend(outcome.shares.map(f64::to_bits));
        for (shard, read) in &outcome.read {
            numbers.extend([u64::from(*shard), state(read)[0], state(read)[1]]);
        }
        numbers.push(outcome.reads as u64);
        numbers
    }

    fn decision_bits(decision: &ShardDecision) -> [u64; 4] {
        [u64::from(decision.ok), decision.retry_after_ms.map_or(1, f64::to_bits), decision.next.value.to_bits(), decision.next.ts.to_bits()]
    }

    /// A number, now and then one no host would store.
    fn a_number(usual: impl Strategy<Value = f64>) -> impl Strategy<Value = f64> {
        prop_oneof![8 => usual, 1 => prop_oneof![Just(f64::NAN), Just(f64::INFINITY), Just(f64::NEG_INFINITY), Just(-0.0), Just(0.0)]]
    }

    fn a_limit() -> impl Strategy<Value = Config> {
        let rate = prop_oneof![Just(1.0), Just(10.0), Just(1e12), 1e-3..1e4f64];
        // A negative period: the calendar unit of that code (day, week, month, year).
        let period = prop_oneof![Just(1_000.0), Just(60_000.0), Just(0.5), 1.0..1e7f64, (1..=4u8).prop_map(|code| -f64::from(code))];
        let shards = prop_oneof![6 => Just(1.0), 1 => Just(2.0), 1 => Just(3.0), 1 => Just(4.0)];
        let start = prop_oneof![Just(None), Just(Some(0.0)), (-1e13..1e13f64).prop_map(Some)];
        (any::<bool>(), rate, period, prop::option::of(0.0..3.0f64), prop::option::of(0.0..2.0f64), shards, start).prop_filter_map(
            "a valid limit",
            |(bucket, rate, period, capacity, max_reserved, shards, start)| {
                let mut input = match crate::calendar::CalendarUnit::from_code(-period) {
                    Some(unit) => ConfigInput::calendar(rate, unit),
                    None if bucket => ConfigInput::token_bucket(rate, period),
                    None => ConfigInput::fixed_window(rate, period),
                };
                input = input.with("shards", shards);
                if let Some(factor) = capacity {
                    input = input.with("capacity", rate * factor);
                }
                if let Some(factor) = max_reserved {
                    input = input.with("maxReserved", rate * factor);
                }
                if let (false, Some(start)) = (bucket, start) {
                    input = input.with("start", start);
                }
                Config::try_from(&input).ok()
            },
        )
    }

    fn a_call() -> impl Strategy<Value = (f64, Option<(f64, f64)>, f64, f64, bool)> {
        let base = prop_oneof![Just(0.0), Just(1_750_000_000_000.0), 0.0..1e13f64];
        let value = a_number(prop_oneof![Just(0.0), -2.0..3.0f64, -1e6..1e6f64]);
        let ts = a_number(prop_oneof![Just(0.0), -1e7..1e7f64]);
        // Counts `prepare` would refuse too: the decision alone must still agree.
        let count = prop_oneof![8 => prop_oneof![Just(0.0), Just(1.0), 0.0..3.5f64], 1 => prop_oneof![Just(f64::NAN), Just(f64::NEG_INFINITY), Just(-1.0)]];
        (base, prop::option::of((value, ts)), -1e7..1e7f64, count, any::<bool>())
    }

    proptest! {
        #![proptest_config(settings())]

        #[test]
        fn the_fast_paths_decide_exactly_what_the_general_paths_decide(
            limit in a_limit(),
            (base, state, offset, fraction, reserve) in a_call(),
            draws in prop::array::uniform4(0.0..1.0f64),
            hand_made in any::<bool>(),
        ) {
            let now_ms = base + offset;
            // `count` as a share of one shard's capacity (NaN, -1 and -∞ as they are).
            let shard = limit.per_shard();
            let count = if fraction >= 0.0 { fraction * shard.capacity.max(1.0) } else { fraction };
            let request = Request { count, reserve };
            let stored = [state.map(|(value, ts)| State { value, ts: base + ts }), None];
            // `prepare`'s bound with no division on one or two shards: `capacity / 1` is `capacity`.
            let factor = if limit.shard_count < 3 { 1.0 } else { f64::from(limit.shard_count) / 2.0 };
            let bound = limit.capacity / factor + if reserve { limit.max_reserved.map_or(f64::INFINITY, |max| max / factor) } else { 0.0 };
            let checked_count = crate::request::validate_request(&limit, request);
            prop_assert_eq!(checked_count.is_ok(), !(count.is_nan() || count < 0.0 || count > bound));
            if let Err(Error::CountExceedsMax { max, .. }) = checked_count {
                prop_assert_eq!(max.to_bits(), bound.to_bits());
            }
            let planned = plan(&limit, now_ms, &draws);
            prop_assert_eq!(format!("{planned:?}"), format!("{:?}", plan_in_full(&limit, now_ms, &draws)));
            let Ok(mut planned) = planned else { return Ok(()) };
            if hand_made {
                // One shard read of any limit, sharded ones too.
                planned.reads = 1;
            }
            let fast = decide_planned(&limit, request, now_ms, &planned, stored);
            let full = decide_in_full(&limit, request, now_ms, &planned, stored);
            prop_assert_eq!(bits(&fast), bits(&full), "{:?} {:?}", fast, full);
            // Errors as data (their numbers may be NaN, which `==` never matches).
            prop_assert_eq!(format!("{:?}", fast.err()), format!("{:?}", full.err()));
            let state = stored[0].unwrap_or(planned.fresh[0]);
            let reference = decide_as_reference(state, &shard, now_ms, request);
            let short = decide(state, &shard, now_ms, request);
            prop_assert_eq!(decision_bits(&short), decision_bits(&checked(reference, state, &shard, now_ms, request)));
        }
    }

    /// The fast path is taken where it should be: the property above would
    /// hold trivially if it never were.
    #[test]
    fn an_unsharded_grant_is_decided_fast_and_everything_else_is_not() {
        let config = |input: ConfigInput| Config::try_from(&input).unwrap();
        let request = Request { count: 1.0, reserve: false };
        for limit in [config(ConfigInput::token_bucket(10.0, 1_000.0)), config(ConfigInput::fixed_window(10.0, 1_000.0).with("start", 0.0))] {
            let planned = plan(&limit, 500.0, &[]).unwrap();
            // Fresh, stored with room, and exactly at zero after the call: granted, fast.
            for stored in [None, Some(State { value: 4.0, ts: 0.0 }), Some(State { value: 1.0, ts: 500.0 })] {
                let fast = granted_alone(&limit, request, 500.0, &planned, [stored, None]).expect("the common call");
                assert_eq!(Ok(fast), decide_in_full(&limit, request, 500.0, &planned, [stored, None]), "{:?}", limit.kind);
            }
            // Refused, or reserved into debt: the general path.
            let empty = [Some(State { value: 0.5, ts: 500.0 }), None];
            assert_eq!(granted_alone(&limit, request, 500.0, &planned, empty), None);
            assert_eq!(granted_alone(&limit, Request { reserve: true, ..request }, 500.0, &planned, empty), None);
            // A stored state no host keeps: the general path refuses it.
            assert_eq!(granted_alone(&limit, request, 500.0, &planned, [Some(State { value: 5.0, ts: f64::INFINITY }), None]), None);
        }
        let sharded = config(ConfigInput::token_bucket(20.0, 1_000.0).with("shards", 2.0));
        let mut planned = plan(&sharded, 0.0, &[0.0, 0.0]).unwrap();
        assert_eq!(granted_alone(&sharded, request, 0.0, &planned, [None, None]), None);
        planned.reads = 1;
        assert_eq!(granted_alone(&sharded, request, 0.0, &planned, [None, None]), None);
    }
}
