//! Sharding by the power of two choices: which shards to read, and how two
//! shards that each fall short can serve a request together.

use crate::config::{Config, Kind};
use crate::decision::{checked, decide_as_reference, wait_until, within_reach, ShardDecision};
use crate::request::Request;
use crate::state::State;
use crate::transition::advance;

/// The first shard to read: `floor(random × shard_count)`.
///
/// ```
/// assert_eq!(ratebound::first_shard(10, 0.99), 9);
/// ```
pub fn first_shard(shard_count: u32, random: f64) -> u32 {
    (crate::math::floor(random * f64::from(shard_count)) as u32).min(shard_count - 1)
}

/// A second shard, uniformly among the others: `(first + 1 + floor(random × (n - 1))) % n`.
///
/// ```
/// assert_eq!(ratebound::second_shard(9, 10, 0.0), 0);
/// ```
pub fn second_shard(first: u32, shard_count: u32, random: f64) -> u32 {
    let offset = (crate::math::floor(random * f64::from(shard_count - 1)) as u32).min(shard_count - 2);
    (first + 1 + offset) % shard_count
}

/// The outcome of serving one request from two shards together.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Combined {
    /// Whether both shards granted their share.
    pub ok: bool,
    /// Granted: when either share went into debt, the wait until both are
    /// paid (the larger of the two). Refused: the least wait after which the
    /// same request on the same two shards is granted, by either alone or by
    /// both together.
    pub retry_after_ms: Option<f64>,
    /// The two shards' next states, to write when `ok`.
    pub next: [State; 2],
    /// The tokens each shard gives; they add up to the count.
    pub shares: [f64; 2],
}

/// Splits `request.count` across two shards that each fell short alone, so
/// that both end at the same value, and decides each share.
///
/// `states` are the shards' states before this request and `alone` their
/// decisions for the whole count. The shares add up to the count, so the
/// total consumed is exactly what was asked. Every wait is a promise (see
/// [`Combined::retry_after_ms`]).
pub fn combine(states: [State; 2], alone: [ShardDecision; 2], shard_config: &Config, now_ms: f64, request: Request) -> Combined {
    let shares = level_shares(alone, request.count);
    let share_request = |index: usize| Request { count: shares[index], ..request };
    let shared = [0, 1].map(|index| decide_as_reference(states[index], shard_config, now_ms, share_request(index)));
    let ok = shared[0].ok && shared[1].ok;
    let retry_after_ms = match ok {
        // Each share's wait a promise: its debt is paid at `now + wait`.
        true => {
            let paid = [0, 1].map(|index| checked(shared[index], states[index], shard_config, now_ms, share_request(index)).retry_after_ms);
            match paid {
                [None, None] => None,
                [first, second] => Some(first.unwrap_or(0.0).max(second.unwrap_or(0.0))),
            }
        }
        false => {
            let together = combined_wait(states, shard_config, now_ms, request);
            // A shard that can ever hold the count alone may grant it sooner (its wait is honest already).
            let reachable_alone = within_reach(shard_config, request);
            Some(alone.iter().filter(|_| reachable_alone).filter_map(|decision| decision.retry_after_ms).fold(together, f64::min))
        }
    };
    Combined { ok, retry_after_ms, next: [shared[0].next, shared[1].next], shares }
}

/// The shares of `count` that leave both shards at the same value, from
/// each one's decision for the whole count.
fn level_shares(alone: [ShardDecision; 2], count: f64) -> [f64; 2] {
    // Each value already had `count` taken off; add it back once for the balance.
    let balance = alone[0].next.value + alone[1].next.value + count;
    let share = |decision: &ShardDecision| decision.next.value + count - balance / 2.0;
    [share(&alone[0]), share(&alone[1])]
}

/// The least wait after which [`combine`] grants `request` on the same two
/// shards with no traffic in between: what a refused two-shard request is
/// told, so that a caller who retries on the same shards is granted
/// (issue 24, item 11).
///
/// The level split of [`combine`] grants once the two shards together hold
/// `count` (less the debt each may take, when reserving): `a(t) + b(t) >=
/// need`. Each shard refills only up to its capacity, so a shard already
/// full adds nothing, and the shares' own waits (each as if its shard
/// refilled) can be short. The estimate solves the pair's refill exactly
/// (`a(t) + b(t)` is the least of four lines, or window counts); the answer
/// is then checked by replaying the combined decision at `now + wait`, and
/// searched upward where rounding (or a clock behind a shard) left it short.
fn combined_wait(states: [State; 2], shard_config: &Config, now_ms: f64, request: Request) -> f64 {
    // Whether the level split grants at the instant `then` (either shard alone is [`combine`]'s to weigh).
    let grants = |then: f64| {
        let decided = |state: State, count: f64| decide_as_reference(state, shard_config, then, Request { count, ..request });
        let shares = level_shares([decided(states[0], request.count), decided(states[1], request.count)], request.count);
        decided(states[0], shares[0]).ok && decided(states[1], shares[1]).ok
    };
    let debt_each = match (request.reserve, shard_config.max_reserved) {
        (true, Some(max_reserved)) => max_reserved,
        _ => 0.0,
    };
    let need = request.count - 2.0 * debt_each;
    let held = [advance(states[0], shard_config, now_ms, 0.0), advance(states[1], shard_config, now_ms, 0.0)];
    let estimate_ms = pair_refill_ms(held, shard_config, now_ms, need);
    let estimate = wait_until(now_ms, now_ms + estimate_ms.max(0.0));
    if grants(now_ms + estimate) {
        return estimate;
    }
    // Short: gallop up from the estimate's instant (steps from one ulp of
    // the clock, doubling), then halve back to the first instant that
    // grants. Instants, not waits: many waits end at one instant.
    let mut refused = now_ms + estimate;
    let mut step = refused.abs().next_up() - refused.abs();
    let mut granted = refused + step;
    while !grants(granted) {
        (refused, step) = (granted, step * 2.0);
        granted = refused + step;
        if !granted.is_finite() {
            return f64::INFINITY;
        }
    }
    loop {
        let middle = refused + (granted - refused) / 2.0;
        if middle <= refused || middle >= granted {
            return wait_until(now_ms, granted);
        }
        match grants(middle) {
            true => granted = middle,
            false => refused = middle,
        }
    }
}

/// Ms from `now` until two shards holding `held` (each projected to `now`)
/// together hold `need`, in exact arithmetic: `min(a + r·τ, c) + min(b + r·τ,
/// c) >= need` for a token bucket, and the same with whole windows of each
/// shard's own grid for a fixed window. The sum is the least of four: both
/// refilling, either one full and the other refilling, both full; so each
/// must reach `need`. Never late where the arithmetic is exact (a shard whose
/// `ts` is ahead of a clock that stepped back refills later than this says:
/// the replay in [`combined_wait`] finds how much).
fn pair_refill_ms(held: [crate::state::Transition; 2], shard_config: &Config, now_ms: f64, need: f64) -> f64 {
    let [a, b] = [held[0].value, held[1].value];
    let capacity = shard_config.capacity;
    let (together, a_full, b_full) = (need - a - b, need - capacity - b, need - capacity - a);
    match shard_config.kind {
        Kind::TokenBucket => {
            let refill_per_ms = shard_config.rate / shard_config.period_ms;
            (together / (2.0 * refill_per_ms)).max(a_full / refill_per_ms).max(b_full / refill_per_ms).max(0.0)
        }
        Kind::FixedWindow | Kind::SlidingWindow => {
            // Whole windows of `rate` for `tokens`; a quotient an ulp above an
            // integer (2/3 + 1/3 > 1 in floats) asks one window too many, so
            // the estimate leans early and the replay moves it on if it must.
            let windows = |tokens: f64| {
                let exact = tokens / shard_config.rate;
                crate::math::ceil(exact - 1e-9 * exact.abs().max(1.0)).max(0.0)
            };
            let (both, of_b, of_a) = (windows(together), windows(a_full), windows(b_full));
            let period_ms = shard_config.period_ms;
            // Each shard's next window starts one period after the window holding `now`.
            let edges = [held[0].ts + period_ms, held[1].ts + period_ms];
            let nth_edge = |edge: f64, n: f64| if n > 0.0 { edge + (n - 1.0) * period_ms } else { f64::NEG_INFINITY };
            // The `both`-th edge of the two grids merged: they alternate, the
            // earlier first, while their first edges are within a period (a
            // shard ahead of a clock that stepped back can be further: then
            // no estimate from this, the replay finds it).
            let (early, late) = if edges[0] <= edges[1] { (edges[0], edges[1]) } else { (edges[1], edges[0]) };
            let merged = match both {
                0.0 => f64::NEG_INFINITY,
                _ if late - early > period_ms => f64::NEG_INFINITY,
                n if crate::math::fract(n / 2.0) != 0.0 => early + (n - 1.0) / 2.0 * period_ms,
                n => late + (n / 2.0 - 1.0) * period_ms,
            };
            merged.max(nth_edge(edges[0], of_a)).max(nth_edge(edges[1], of_b)).max(now_ms) - now_ms
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigInput;
    use crate::decision::decide;

    #[test]
    fn the_second_shard_is_never_the_first() {
        for first in 0..7 {
            for step in 0..100 {
                let second = second_shard(first, 7, f64::from(step) / 100.0);
                assert_ne!(second, first);
                assert!(second < 7);
            }
        }
    }

    /// Found by the promised-waits sweep (issue 24, item 9's promise on the
    /// combined path): each share's wait was the reference formula's, which
    /// can fall an ulp short, so at `now + wait` a shard still owed 4e-16.
    #[test]
    fn a_reservation_served_by_two_shards_is_due_when_both_have_paid_their_debt() {
        let shard = Config::try_from(&ConfigInput::token_bucket(10.0, 1000.0).with("shards", 2.0).with("maxReserved", 5.0)).unwrap().per_shard();
        let mut granted = 0;
        for step in 0..2_000 {
            let now_ms = 3_425.9314159499345 + f64::from(step) * 0.618_033_988_7;
            let states = [State { value: 0.3 + f64::from(step % 7) * 0.11, ts: now_ms - 1.0 }, State { value: 0.2, ts: now_ms - 13.7 }];
            let request = Request { count: 5.0 + f64::from(step % 5) * 0.37, reserve: true };
            let alone = [decide(states[0], &shard, now_ms, request), decide(states[1], &shard, now_ms, request)];
            if alone[0].ok || alone[1].ok {
                continue;
            }
            let combined = combine(states, alone, &shard, now_ms, request);
            let Some(wait) = combined.retry_after_ms.filter(|_| combined.ok) else { continue };
            granted += 1;
            for next in combined.next {
                let due = crate::transition::advance(next, &shard, now_ms + wait, 0.0).value;
                assert!(due >= 0.0, "step {step}: owes {due} at {now_ms} + {wait}");
            }
        }
        assert!(granted > 1_000, "{granted}");
    }

    /// When the wait `combine` gives a request both shards refuse alone and
    /// together at `now_ms` ends, checked to be the least: the same request on the
    /// same shards is granted (alone or together) at `now + wait`, and not at
    /// the instant before. Returned as the instant, `now + wait`.
    fn first_granted_at(limit: &Config, states: [State; 2], now_ms: f64, count: f64) -> f64 {
        let shard = limit.per_shard();
        let request = Request { count, reserve: false };
        let granted = |then: f64| {
            let alone = [decide(states[0], &shard, then, request), decide(states[1], &shard, then, request)];
            alone[0].ok || alone[1].ok || combine(states, alone, &shard, then, request).ok
        };
        assert!(!granted(now_ms), "granted at once");
        let alone = [decide(states[0], &shard, now_ms, request), decide(states[1], &shard, now_ms, request)];
        let wait = combine(states, alone, &shard, now_ms, request).retry_after_ms.expect("a wait");
        assert!(granted(now_ms + wait), "refused after {wait}");
        assert!(!granted((now_ms + wait).next_down()), "granted before {wait}");
        now_ms + wait
    }

    #[test]
    fn a_pair_of_buckets_waits_for_both_to_refill_or_for_the_one_not_yet_full() {
        // 4 shards of 10 a second, capacity 10 each.
        let limit = Config::try_from(&ConfigInput::token_bucket(40.0, 1_000.0).with("shards", 4.0)).unwrap();
        let at = |value: f64| State { value, ts: 0.0 };
        // 2 and 3, 15 asked: 10 more, both refilling at 20 a second: 500 ms.
        assert_eq!(first_granted_at(&limit, [at(2.0), at(3.0)], 0.0, 15.0), 500.0);
        // One full: only the other refills: 5 more at 10 a second, whichever it is.
        assert_eq!(first_granted_at(&limit, [at(10.0), at(0.0)], 0.0, 15.0), 500.0);
        assert_eq!(first_granted_at(&limit, [at(0.0), at(10.0)], 0.0, 15.0), 500.0);
        // One fills on the way: 8 and 0, 15 asked: together 7 more (350 ms), but 8 stops at 10: 500 ms.
        assert_eq!(first_granted_at(&limit, [at(8.0), at(0.0)], 0.0, 15.0), 500.0);
    }

    #[test]
    fn a_pair_of_fast_buckets_one_full_waits_for_the_other_at_its_own_rate() {
        // 10 tokens a millisecond per shard, capacity 10 000 each.
        let limit = Config::try_from(&ConfigInput::token_bucket(40_000.0, 1_000.0).with("shards", 4.0)).unwrap();
        let at = |value: f64| State { value, ts: 0.0 };
        assert_eq!(first_granted_at(&limit, [at(10_000.0), at(0.0)], 0.0, 15_000.0), 500.0);
        assert_eq!(first_granted_at(&limit, [at(0.0), at(10_000.0)], 0.0, 15_000.0), 500.0);
        // A shortfall smaller than a millisecond's refill: 5 tokens, half a millisecond.
        assert_eq!(first_granted_at(&limit, [at(10_000.0), at(0.0)], 0.0, 10_005.0), 0.5);
        assert_eq!(first_granted_at(&limit, [at(0.0), at(10_000.0)], 0.0, 10_005.0), 0.5);
    }

    #[test]
    fn a_pair_of_fast_buckets_both_refilling_waits_at_their_summed_rate() {
        // 10 tokens a millisecond per shard, capacity 10 000 each: 2 000 and 3 000, 15 000 asked,
        // 10 000 more at 20 a millisecond together (neither fills first): 500 ms. The estimate
        // is the pair's summed rate here; one that came out later would be a padded wait.
        let limit = Config::try_from(&ConfigInput::token_bucket(40_000.0, 1_000.0).with("shards", 4.0)).unwrap();
        let at = |value: f64| State { value, ts: 0.0 };
        assert_eq!(first_granted_at(&limit, [at(2_000.0), at(3_000.0)], 0.0, 15_000.0), 500.0);
        assert_eq!(first_granted_at(&limit, [at(3_000.0), at(2_000.0)], 0.0, 15_000.0), 500.0);
    }

    #[test]
    fn a_pair_of_buckets_with_a_period_under_a_millisecond_waits_at_their_summed_rate() {
        // 5 tokens each half millisecond per shard (10 a millisecond), capacity 5: 1 and 2, 8
        // asked, 5 more at 20 a millisecond together: a quarter of a millisecond.
        let limit = Config::try_from(&ConfigInput::token_bucket(20.0, 0.5).with("shards", 4.0)).unwrap();
        let at = |value: f64| State { value, ts: 0.0 };
        assert_eq!(first_granted_at(&limit, [at(1.0), at(2.0)], 0.0, 8.0), 0.25);
    }

    #[test]
    fn a_pair_of_buckets_one_ahead_of_a_clock_that_stepped_back_waits_for_it_to_refill_from_its_time() {
        let limit = Config::try_from(&ConfigInput::token_bucket(40.0, 1_000.0).with("shards", 4.0)).unwrap();
        // Shard 0 was written at 1 000 by a clock that has since stepped back to 0: it refills from 1 000.
        // Shard 1 fills by 700 ms; then shard 0 needs 3 more: 300 ms past 1 000.
        let granted_at = first_granted_at(&limit, [State { value: 2.0, ts: 1_000.0 }, State { value: 3.0, ts: 0.0 }], 0.0, 15.0);
        assert!((granted_at - 1_300.0).abs() < 1e-9, "{granted_at}");
    }

    #[test]
    fn a_pair_of_windows_waits_for_the_window_edges_the_count_needs_in_the_order_they_come() {
        // 4 shards of 10 a window, capacity 30 each; shard 0's windows start at 0, shard 1's at 500.
        let limit = Config::try_from(&ConfigInput::fixed_window(40.0, 1_000.0).with("shards", 4.0).with("capacity", 120.0)).unwrap();
        let states = [State { value: 2.0, ts: 0.0 }, State { value: 3.0, ts: 500.0 }];
        // At 600: one window needed (shard 0's, at 1 000), two (shard 1's, at 1 500), three (shard 0's next, at 2 000).
        assert_eq!(first_granted_at(&limit, states, 600.0, 14.0), 1_000.0);
        assert_eq!(first_granted_at(&limit, states, 600.0, 24.0), 1_500.0);
        assert_eq!(first_granted_at(&limit, states, 600.0, 34.0), 2_000.0);
    }

    /// 2 × (0.1 × 3 072) is 614.4000000000001, and 614.4000000000001 / 0.1
    /// is 6 144.000000000001: the count of windows must not round up to the
    /// next one (the estimate's tolerance is relative to the count).
    #[test]
    fn a_pair_of_windows_needing_thousands_of_windows_waits_for_exactly_the_last_one() {
        let limit = Config::try_from(&ConfigInput::fixed_window(0.4, 1_000.0).with("shards", 4.0).with("capacity", 1_600.0).with("start", 0.0)).unwrap();
        let empty = State { value: 0.0, ts: 0.0 };
        let count = 2.0 * (0.1 * 3_072.0);
        assert_eq!(first_granted_at(&limit, [empty, empty], 0.0, count), 3_072_000.0);
    }

    /// Periods below a millisecond are valid (a hot loop's limit): edges a
    /// count of periods away are that many periods, not that many over it.
    #[test]
    fn a_pair_of_half_millisecond_windows_waits_for_the_edges_it_needs() {
        let limit = Config::try_from(&ConfigInput::fixed_window(40.0, 0.5).with("shards", 4.0).with("capacity", 120.0).with("start", 0.0)).unwrap();
        let states = [State { value: 2.0, ts: 0.0 }, State { value: 3.0, ts: 0.0 }];
        // 34 of 5: three edges of the merged grids (0.5, 0.5, 1.0); 44: four (… 1.0, 1.0).
        assert_eq!(first_granted_at(&limit, states, 0.25, 34.0), 1.0);
        assert_eq!(first_granted_at(&limit, states, 0.25, 44.0), 1.0);
        // Shard 0 full at 30, shard 1 empty: 25 more from shard 1 alone, three of its windows.
        let one_full = [State { value: 30.0, ts: 0.0 }, State { value: 0.0, ts: 0.0 }];
        assert_eq!(first_granted_at(&limit, one_full, 0.25, 55.0), 1.5);
        let other_full = [State { value: 0.0, ts: 0.0 }, State { value: 30.0, ts: 0.0 }];
        assert_eq!(first_granted_at(&limit, other_full, 0.25, 55.0), 1.5);
    }

    #[test]
    fn a_pair_of_windows_one_full_waits_for_the_others_windows() {
        // Capacity 10 each: a full shard gains nothing at its edges.
        let limit = Config::try_from(&ConfigInput::fixed_window(40.0, 1_000.0).with("shards", 4.0)).unwrap();
        let full_first = [State { value: 10.0, ts: 0.0 }, State { value: 0.0, ts: 500.0 }];
        assert_eq!(first_granted_at(&limit, full_first, 600.0, 15.0), 1_500.0);
        let full_second = [State { value: 0.0, ts: 0.0 }, State { value: 10.0, ts: 500.0 }];
        assert_eq!(first_granted_at(&limit, full_second, 600.0, 15.0), 1_000.0);
    }

    #[test]
    fn a_pair_of_windows_one_ahead_of_a_clock_that_stepped_back_is_served_by_the_others_windows() {
        let limit = Config::try_from(&ConfigInput::fixed_window(40.0, 1_000.0).with("shards", 4.0).with("capacity", 120.0)).unwrap();
        // Shard 1's window was written an hour ahead: its next edge is an hour and a second away.
        for origin in [0.0, 1_700_000_000_000.0] {
            let states = [State { value: 2.0, ts: origin }, State { value: 3.0, ts: origin + 3_600_000.0 }];
            assert_eq!(first_granted_at(&limit, states, origin + 600.0, 14.0), origin + 1_000.0);
            // Two windows of shard 0 (1 000 and 2 000) serve 24 long before shard 1's first.
            assert_eq!(first_granted_at(&limit, states, origin + 600.0, 24.0), origin + 2_000.0);
        }
    }

    #[test]
    fn two_short_shards_together_serve_the_request_and_end_level() {
        let shard = Config::try_from(&ConfigInput::token_bucket(30.0, 1000.0).with("shards", 3.0)).unwrap().per_shard();
        let states = [State { value: 6.0, ts: 0.0 }, State { value: 4.0, ts: 0.0 }];
        let request = Request { count: 8.0, reserve: false };
        let alone = [decide(states[0], &shard, 0.0, request), decide(states[1], &shard, 0.0, request)];
        assert!(!alone[0].ok && !alone[1].ok);
        let combined = combine(states, alone, &shard, 0.0, request);
        assert!(combined.ok);
        assert_eq!((combined.next[0].value, combined.next[1].value), (1.0, 1.0));
    }
}
