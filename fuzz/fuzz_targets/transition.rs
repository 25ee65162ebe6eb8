//! The transitions on arbitrary `f64`: NaN, ±∞, subnormals, 2^53 and
//! beyond, clocks far behind or ahead. Never a panic; on finite inputs never
//! a NaN; a stepped-back clock neither mints nor burns; nothing above
//! capacity; and a decision that grants leaves a state of two finite numbers.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use ratebound::{
    calculate_rate_limit, decide, draws_needed, first_shard, initial_state, plan, plan_value, second_shard, unit_random, with_jitter,
    Config, ConfigInput, Kind, Request, State,
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
        ConfigInput::token_bucket(input.rate.0, input.period.0)
    } else {
        ConfigInput::fixed_window(input.rate.0, input.period.0)
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
    let transition = calculate_rate_limit(state, &shard, now, count, random);
    let _ = with_jitter(now, count, random);
    let valid_random = unit_random(random).is_ok();
    // A plan checks every number it draws, before anything is read.
    let planned = plan(&config, now, &[random; 4]);
    assert_eq!(planned.is_err(), draws_needed(&config) > 0 && !valid_random, "a plan drawing {random}: {planned:?}");
    if let Ok(drawn) = unit_random(random) {
        let first = first_shard(config.shard_count, drawn);
        assert!(first < config.shard_count);
        if config.shard_count >= 2 {
            let second = second_shard(first, config.shard_count, drawn);
            assert!(second < config.shard_count && second != first);
            let planned = planned.expect("valid draws");
            assert_eq!((planned.reads, planned.shards[0]), (2, first));
            assert_ne!(planned.shards[0], planned.shards[1]);
        }
        let wanted = f64::from(input.shards.unwrap_or(1).max(1));
        let mut into = [f64::NAN; 1024];
        if let Ok(sampled) = plan_value(&config, Some(wanted), 0.0, &[drawn; 1024], &mut into) {
            assert!(sampled <= config.shard_count as usize);
            assert!(into[..sampled].iter().all(|&shard| shard.fract() == 0.0), "{:?}", &into[..sampled]);
            let mut chosen: Vec<u32> = into[..sampled].iter().map(|&shard| shard as u32).collect();
            assert!(chosen.iter().all(|&shard| shard < config.shard_count), "{chosen:?}");
            chosen.sort_unstable();
            chosen.dedup();
            assert_eq!(chosen.len(), sampled, "getValue sampled a shard twice");
        }
    }
    if !valid_random && state.is_none() && config.kind == Kind::FixedWindow && config.start_ms.is_none() {
        // The plan refused this phase (above); the transition is never run with it.
        return;
    }

    // The domain the limiter passes in: a finite state, a finite now, a finite count >= 0.
    let state_finite = state.is_none_or(|s| s.value.is_finite() && s.ts.is_finite());
    let in_domain = state_finite && now.is_finite() && count.is_finite() && count >= 0.0;
    if !in_domain {
        return;
    }
    let start = match state {
        Some(state) => state,
        None => initial_state(&shard, now, random),
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
