//! The transitions on arbitrary `f64`: NaN, ±∞, subnormals, 2^53 and
//! beyond, clocks far behind or ahead. Never a panic; on finite inputs never
//! a NaN; a stepped-back clock neither mints nor burns; nothing above
//! capacity; and a decision that grants leaves a state of two finite numbers.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use ratebound::{
    calculate_rate_limit, decide, first_shard, initial_state, sample_shards, second_shard, unit_random, with_jitter, Config,
    Kind, RawConfig, Request, State,
};
use ratebound_fuzz::{tokens_at, Num, Param};

#[derive(Debug, Arbitrary)]
struct Input {
    token_bucket: bool,
    rate: Param,
    period: Param,
    capacity: Option<Param>,
    max_reserved: Option<Param>,
    shards: Option<u16>,
    start: Option<Num>,
    state: Option<(Num, Num)>,
    now: Num,
    count: Num,
    reserve: bool,
    random: Num,
}

fuzz_target!(|input: Input| {
    let mut raw = if input.token_bucket {
        RawConfig::token_bucket(input.rate.0, input.period.0)
    } else {
        RawConfig::fixed_window(input.rate.0, input.period.0)
    };
    if let Some(capacity) = input.capacity {
        raw = raw.with("capacity", capacity.0);
    }
    if let Some(max_reserved) = input.max_reserved {
        raw = raw.with("maxReserved", max_reserved.0);
    }
    if let Some(shards) = input.shards {
        raw = raw.with("shards", f64::from(shards % 1100));
    }
    if let (false, Some(start)) = (input.token_bucket, input.start) {
        raw = raw.with("start", start.0);
    }
    let Ok(config) = Config::try_from(&raw) else { return };
    let shard = config.per_shard();
    let (now, count, random) = (input.now.0, input.count.0, input.random.0);
    let state = input.state.map(|(value, ts)| State { value: value.0, ts: ts.0 });

    // Anything at all: no panic.
    let transition = calculate_rate_limit(state, &shard, now, count, || Ok(random));
    let _ = with_jitter(now, count, random);
    let valid_random = unit_random(random).is_ok();
    if let Ok(drawn) = unit_random(random) {
        let first = first_shard(config.shard_count, drawn);
        assert!(first < config.shard_count);
        if config.shard_count >= 2 {
            let second = second_shard(first, config.shard_count, drawn);
            assert!(second < config.shard_count && second != first);
        }
        let sampled = sample_shards(config.shard_count, u32::from(input.shards.unwrap_or(1)), || Ok::<_, ()>(drawn)).unwrap();
        assert!(sampled.len() <= config.shard_count as usize);
    }
    if !valid_random && state.is_none() && config.kind == Kind::FixedWindow && config.start_ms.is_none() {
        assert!(transition.is_err(), "a random draw of {random} was accepted");
        return;
    }
    let transition = transition.expect("only the random source can make a transition fail");

    // The domain the limiter passes in: a finite state, a finite now, a finite count >= 0.
    let state_finite = state.is_none_or(|s| s.value.is_finite() && s.ts.is_finite());
    let in_domain = state_finite && now.is_finite() && count.is_finite() && count >= 0.0;
    if !in_domain {
        return;
    }
    let start = match state {
        Some(state) => state,
        None => initial_state(&shard, now, || Ok(random)).expect("the draw was valid"),
    };
    if start.ts.is_finite() {
        assert!(!transition.value.is_nan(), "NaN value from {start:?} at {now} taking {count}: {transition:?}");
        assert!(!transition.ts.is_nan(), "NaN ts from {start:?} at {now}: {transition:?}");
        assert!(transition.retry_after_ms.is_none_or(|wait| !wait.is_nan()), "NaN wait: {transition:?}");
    }
    // Never above capacity: min(…, capacity) - count.
    assert!(!(transition.value > shard.capacity - count), "{transition:?} above capacity {} - {count}", shard.capacity);
    assert_eq!(transition.retry_after_ms.is_some(), transition.value < 0.0, "{transition:?}");
    // A clock behind the state's time neither mints nor burns, and the state keeps its time.
    if now < start.ts {
        let held = if start.value < shard.capacity { start.value } else { shard.capacity };
        assert_eq!(transition.value, held - count, "clock stepped back from {} to {now}", start.ts);
        assert_eq!(transition.ts, start.ts);
    } else if transition.ts.is_finite() {
        assert!(transition.ts >= start.ts, "{transition:?} moved before {start:?}");
        if config.kind == Kind::TokenBucket {
            assert_eq!(transition.ts, now);
        }
    }
    // The oracle, written apart, agrees on the tokens held before the count.
    let held = tokens_at(start, &shard, now);
    if held.is_finite() && count.is_finite() {
        let expected = held - count;
        assert!(
            transition.value == expected || (transition.value - expected).abs() <= 1e-12 * (held.abs() + count),
            "core {} vs oracle {expected} from {start:?} at {now}",
            transition.value
        );
    }

    // A decision: a grant leaves two finite numbers, or the limiter would store them.
    let request = Request { count, reserve: input.reserve };
    let decision = decide(start, &shard, now, request);
    if decision.ok && start.ts.is_finite() {
        assert!(
            decision.next.value.is_finite() && decision.next.ts.is_finite(),
            "a grant would store {:?}: {config:?}, state {start:?}, now {now}, count {count}, reserve {}",
            decision.next,
            input.reserve
        );
        if !input.reserve {
            assert!(decision.next.value >= 0.0, "granted into debt without reserve: {decision:?}");
        }
    }
});
