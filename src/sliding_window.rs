//! Sliding window, decided as `@upstash/ratelimit`'s `slidingWindow` (2.2.0,
//! `single.ts` and its Lua script) decides it.
//!
//! Windows of `period` ms are aligned to the epoch: window `i = floor(now /
//! period)` starts at `i × period`. A key keeps two states, one per window
//! parity: shard `i mod 2` holds `{ value: tokens granted in window i, ts:
//! i × period }`, so the previous window is found by its `ts` beside the
//! current one, and a state of any older window counts as nothing. At `now`:
//!
//! ```text
//! weighted = floor((1 - (now - i × period) / period) × previous)   // Upstash floors it too
//! refused  = (count > 0 and weighted + current >= rate) or rate - ((current + count) + weighted) < 0
//! ```
//!
//! Upstash's two checks, in its arithmetic order (`now % window` in Lua is
//! `now - floor(now / window) × window`). A grant writes the current window's
//! state only, `{ current + count, i × period }`, which matters until window
//! `i + 2` starts (its `fullAt`). One difference, on purpose: Upstash adds the
//! count (`INCRBY`) before its second check, so a call whose count overshoots
//! is refused and charged anyway; here a refusal writes nothing, as every
//! refusal of this library does.
//!
//! A clock that steps back never forgets counts: a decision is taken at the
//! latest of `now` and the windows its states hold.

use crate::config::Config;
use crate::error::Error;
use crate::figures::Figures;
use crate::limiter::Outcome;
use crate::math::floor;
use crate::plan::Plan;
use crate::request::Request;
use crate::result::RateLimitResult;
use crate::state::{State, Transition};

/// The error of what a sliding window does not have: a one-state transition
/// (`calculateRateLimit`) and grants.
pub(crate) fn two_windows() -> Error {
    Error::config(crate::error::Field::Kind, crate::error::Rule::TwoWindows, crate::config::Kind::SlidingWindow.code())
}

/// The start of the window holding `now_ms`: `floor(now / period) × period`.
///
/// ```
/// use ratebound::{initial_state, Config, ConfigInput};
/// let config = Config::try_from(&ConfigInput::sliding_window(10.0, 1_000.0)).unwrap();
/// assert_eq!(initial_state(&config, 2_500.0, 0.0).ts, 2_000.0);
/// ```
pub(crate) fn window_start(config: &Config, now_ms: f64) -> f64 {
    window_index(config, now_ms) * config.period_ms
}

/// `floor(now / period)`, Upstash's window index, moved by one where the
/// division rounded across a window's start as `index × period` computes it
/// (only with a period that is not whole ms): so `index × period <= now <
/// (index + 1) × period` always, and a state's `ts` is its own window's start.
fn window_index(config: &Config, now_ms: f64) -> f64 {
    let index = floor(now_ms / config.period_ms);
    if index * config.period_ms > now_ms {
        index - 1.0
    } else if (index + 1.0) * config.period_ms <= now_ms {
        index + 1.0
    } else {
        index
    }
}

/// The shard (0 or 1) that holds window `index`: its parity.
fn shard_of(index: f64) -> u32 {
    u32::from(index - 2.0 * floor(index / 2.0) != 0.0)
}

/// What a key's two windows hold at one instant.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Windows {
    /// `floor(instant / period)`.
    index: f64,
    /// Tokens granted in the current window.
    current: f64,
    /// The previous window's tokens, weighted by how much of it the sliding period still covers, floored.
    weighted: f64,
}

impl Windows {
    fn start(&self, config: &Config) -> f64 {
        self.index * config.period_ms
    }
}

/// The instant a decision on `stored` is taken at: `now_ms`, or the start of
/// a later window a state holds (a clock that stepped back).
fn decided_at(now_ms: f64, stored: [Option<State>; 2]) -> f64 {
    stored.iter().flatten().fold(now_ms, |at, state| at.max(state.ts))
}

/// The two windows at `instant` (shard 0's state first, then shard 1's).
fn windows_at(config: &Config, instant: f64, stored: [Option<State>; 2]) -> Windows {
    let index = window_index(config, instant);
    let start = index * config.period_ms;
    let count_of = |index: f64, start: f64| match stored[shard_of(index) as usize] {
        Some(state) if state.ts == start => state.value,
        _ => 0.0,
    };
    let current = count_of(index, start);
    let previous = count_of(index - 1.0, (index - 1.0) * config.period_ms);
    let in_current = (instant - start) / config.period_ms;
    // Never below 0 (an ulp past 1 where the period is not whole ms would count -1).
    Windows { index, current, weighted: floor((1.0 - in_current).max(0.0) * previous) }
}

/// Whether `count` is granted on `windows`: Upstash's two checks.
fn grants(config: &Config, windows: &Windows, count: f64) -> bool {
    let full = count > 0.0 && windows.weighted + windows.current >= config.rate;
    !full && config.rate - ((windows.current + count) + windows.weighted) >= 0.0
}

/// Whether `count` is granted at `instant` with no traffic in between.
fn grants_at(config: &Config, instant: f64, stored: [Option<State>; 2], count: f64) -> bool {
    grants(config, &windows_at(config, decided_at(instant, stored), stored), count)
}

/// The earliest instant from `now_ms` on at which `count` is granted on
/// `stored` with no traffic in between. Granting is monotone in time (the
/// weighted previous count only falls, and a window's count moves to the
/// previous one, where it weighs at most what it did), and certain once
/// both windows have passed, so the least instant is found by halving.
fn first_granted(config: &Config, now_ms: f64, stored: [Option<State>; 2], count: f64) -> f64 {
    let windows = windows_at(config, decided_at(now_ms, stored), stored);
    // Window i + 2 starts there (`window_index` holds `index × period` to its own window): both have passed.
    let (mut refused, mut granted) = (now_ms, (windows.index + 2.0) * config.period_ms);
    loop {
        let middle = refused + (granted - refused) / 2.0;
        if middle <= refused || middle >= granted {
            return granted;
        }
        match grants_at(config, middle, stored, count) {
            true => granted = middle,
            false => refused = middle,
        }
    }
}

/// Decides `request` on a sliding window's two states (`stored[0]` at shard
/// 0, `stored[1]` at shard 1, `None`: nothing). A refusal's `retryAfter` is
/// the earliest instant the same call is granted with no other traffic.
///
/// # Errors
/// [`Error::WaitUnbounded`] if no finite instant grants (a period near the
/// largest numbers).
pub(crate) fn decide(config: &Config, request: Request, now_ms: f64, plan: &Plan, stored: [Option<State>; 2]) -> Result<Outcome, Error> {
    let instant = decided_at(now_ms, stored);
    let windows = windows_at(config, instant, stored);
    let read = [(0, stored[0].unwrap_or(plan.fresh[0])), (1, stored[1].unwrap_or(plan.fresh[1]))];
    if grants(config, &windows, request.count) {
        let written = State { value: windows.current + request.count, ts: windows.start(config) };
        crate::limiter::check_writes([&written])?;
        let writes = [Some((shard_of(windows.index), written)), None];
        return Ok(Outcome { result: RateLimitResult::allowed(None), writes, shares: [request.count, 0.0], read, reads: 2 });
    }
    let wait = crate::decision::wait_until(now_ms, first_granted(config, now_ms, stored, request.count));
    let result = RateLimitResult::refused(wait);
    crate::limiter::check_wait(request, &result)?;
    Ok(Outcome { result, writes: [None, None], shares: [0.0, 0.0], read, reads: 2 })
}

/// The figures of a sliding window whose two states are `held`, at `now_ms`:
/// `remaining` is `rate` less the tokens the sliding period counts (whole,
/// never below 0: Upstash's `remaining`), `reset` is when the current window
/// ends (Upstash's `reset`).
pub(crate) fn figures(config: &Config, now_ms: f64, held: [Option<State>; 2], retry_after_ms: Option<f64>) -> Figures {
    let report = value(config, now_ms, held);
    crate::figures::figures(State { value: report.value, ts: report.ts }, config, now_ms, retry_after_ms, 1)
}

/// `getValue`'s report of a sliding window: the tokens it would grant now
/// (`rate` less what the sliding period counts), at `now` (or the later
/// window its states hold); the shard of the current window.
pub(crate) fn value(config: &Config, now_ms: f64, held: [Option<State>; 2]) -> crate::value::ValueReport {
    let instant = decided_at(now_ms, held);
    let windows = windows_at(config, instant, held);
    let value = config.rate - (windows.current + windows.weighted);
    crate::value::ValueReport { value, ts: instant, shard: shard_of(windows.index), start_ms: None }
}

/// From when a window's state no longer matters, so a store may drop it: the
/// start of window `i + 2`, for the window `i` its `ts` starts.
pub(crate) fn forgotten_at(state: State, config: &Config) -> f64 {
    (window_index(config, state.ts) + 2.0) * config.period_ms
}

/// One state alone, as `advance` takes it: the count of the window holding
/// `now` (the state's if it is that window's, else 0) plus `count`. Not a
/// decision (that reads both windows: [`decide`]); the package refuses
/// `calculateRateLimit` on a sliding window.
pub(crate) fn advance_one(state: State, config: &Config, now_ms: f64, count: f64) -> Transition {
    let start = window_start(config, decided_at(now_ms, [Some(state), None]));
    let current = if state.ts == start { state.value } else { 0.0 };
    Transition { value: current + count, ts: start, retry_after_ms: None, window_start_ms: None }
}

#[cfg(test)]
#[cfg(not(target_arch = "wasm32"))]
mod tests {
    use super::*;
    use crate::config::ConfigInput;
    use crate::plan::plan;
    use proptest::prelude::*;
    use proptest::test_runner::FileFailurePersistence;

    fn limit(rate: f64, period_ms: f64) -> Config {
        Config::try_from(&ConfigInput::sliding_window(rate, period_ms)).unwrap()
    }

    fn decided(config: &Config, count: f64, now_ms: f64, stored: [Option<State>; 2]) -> Outcome {
        let planned = plan(config, now_ms, &[]).unwrap();
        decide(config, Request { count, reserve: false }, now_ms, &planned, stored).unwrap()
    }

    fn window(value: f64, ts: f64) -> Option<State> {
        Some(State { value, ts })
    }

    #[test]
    fn a_sliding_window_reads_both_shards_and_writes_the_current_windows() {
        let config = limit(10.0, 1_000.0);
        let planned = plan(&config, 2_500.0, &[]).unwrap();
        assert_eq!((planned.shards, planned.reads), ([0, 1], 2));
        // Window 2 (even) at shard 0, window 1 at shard 1.
        let outcome = decided(&config, 3.0, 2_500.0, [window(4.0, 2_000.0), window(6.0, 1_000.0)]);
        assert!(outcome.result.is_ok());
        assert_eq!(outcome.writes, [Some((0, State { value: 7.0, ts: 2_000.0 })), None]);
    }

    /// Upstash's example: 10 a minute; 4 in the previous minute, 5 in this
    /// one, 15 s into it: floor(0.75 × 4) + 5 = 8 used, so 2 more fit and a third does not.
    #[test]
    fn the_previous_window_counts_by_the_part_the_sliding_period_still_covers_floored() {
        let config = limit(10.0, 60_000.0);
        let stored = [window(5.0, 60_000.0), window(4.0, 0.0)];
        assert_eq!(windows_at(&config, 75_000.0, [stored[1], stored[0]]).weighted, 3.0);
        assert!(decided(&config, 2.0, 75_000.0, [stored[1], stored[0]]).result.is_ok());
        assert!(!decided(&config, 3.0, 75_000.0, [stored[1], stored[0]]).result.is_ok());
    }

    #[test]
    fn a_state_of_an_older_window_counts_as_nothing() {
        let config = limit(2.0, 1_000.0);
        // Shard 0 holds window 0; at 2 500 (window 2) that is two windows back.
        assert!(decided(&config, 2.0, 2_500.0, [window(2.0, 0.0), None]).result.is_ok());
    }

    /// 10 a second, 10 granted in window 0, 5 asked at 1 000: granted once
    /// floor((1 - f) × 10) <= 5, i.e. f > 0.4. At 1 400 exactly the weight is
    /// 0.6 (6 counted): refused; the next instant grants.
    #[test]
    fn a_full_window_refuses_until_the_weighted_count_lets_the_call_in() {
        let config = limit(10.0, 1_000.0);
        let stored = [window(10.0, 0.0), None];
        let refused = decided(&config, 5.0, 1_000.0, stored);
        assert!(!decided(&config, 5.0, 1_400.0, stored).result.is_ok());
        assert!(decided(&config, 5.0, 1_400f64.next_up(), stored).result.is_ok());
        // Waits are whole ms, rounded up: 401.
        assert_eq!(refused.result, RateLimitResult::refused(401.0));
    }

    #[test]
    fn a_refusal_writes_nothing_even_where_upstash_would_charge_an_overshooting_count() {
        let config = limit(10.0, 1_000.0);
        let refused = decided(&config, 5.0, 500.0, [window(8.0, 0.0), None]);
        assert_eq!((refused.result.is_ok(), refused.writes), (false, [None, None]));
        // Its figures show what is left (2), as the state stands.
        assert_eq!(refused.figures(&config, 500.0, true).remaining, 2.0);
    }

    /// A sliding window has `maxReserved: 0`: a call that reserves is decided
    /// as one that does not, never into debt.
    #[test]
    fn a_call_that_reserves_is_decided_as_one_that_does_not() {
        let config = limit(2.0, 1_000.0);
        let planned = plan(&config, 500.0, &[]).unwrap();
        let stored = [window(2.0, 0.0), None];
        for reserve in [false, true] {
            let outcome = crate::limiter::decide_planned(&config, Request { count: 1.0, reserve }, 500.0, &planned, stored).unwrap();
            assert_eq!((outcome.result, outcome.writes), (RateLimitResult::refused(501.0), [None, None]), "reserve {reserve}");
        }
        assert!(crate::request::validate_request(&config, Request { count: 3.0, reserve: true }).is_err());
    }

    /// Found by the mutation run: where `now / period` rounds across a
    /// window's start (a period that is not whole ms), the window is still
    /// the one whose start `index × period` is at or before `now`. Both ways
    /// (cases found by a search over window starts): a call granted at that
    /// instant fills its window, and the next at the same instant sees it.
    #[test]
    fn a_window_start_is_its_own_windows_where_the_division_rounds_across_it() {
        let cases = [(40_096_923_872.142_85, 10_352.142_857_142_857, 1.0), (61_531_346_167.400_826, 12_089.435_535_600_738, -1.0)];
        for (now_ms, period_ms, moved) in cases {
            let config = limit(1.0, period_ms);
            let index = window_index(&config, now_ms);
            assert_eq!(index, floor(now_ms / period_ms) + moved, "{now_ms} / {period_ms}");
            assert!(index * period_ms <= now_ms && now_ms < (index + 1.0) * period_ms);
            let granted = decided(&config, 1.0, now_ms, [None, None]);
            let (shard, state) = granted.writes[0].expect("granted");
            let mut stored = [None, None];
            stored[shard as usize] = Some(state);
            assert!(!decided(&config, 1.0, now_ms, stored).result.is_ok(), "{now_ms} / {period_ms}: the window forgot its grant");
        }
    }

    /// From `fullAt` on, a stored window decides as a missing one, and not
    /// before: just before it, a window holding the whole rate still weighs
    /// on a call of the whole rate. Whole ms, and periods where
    /// `(i + 2) × period` and `ts + 2 × period` differ either way or
    /// `ts / period` rounds below `i` (found by a search over window starts).
    #[test]
    fn a_window_is_forgotten_exactly_when_it_stops_counting() {
        let rate = 1e20;
        for (ts, period_ms) in [(4_000.0, 1_000.0), (616_821_050_618.851_8, 63_062.776_260_215_85), (30_959_077_719.630_985, 21_470.210_734_475_753), (151_283_783_450.031_65, 19_174.814_527_477_953)] {
            let config = limit(rate, period_ms);
            let state = State { value: rate, ts };
            let mut stored = [None, None];
            stored[shard_of(window_index(&config, ts)) as usize] = Some(state);
            let forgotten = forgotten_at(state, &config);
            assert!(!decided(&config, rate, forgotten.next_down(), stored).result.is_ok(), "{ts} / {period_ms}: forgotten too late");
            for then in [forgotten, forgotten + period_ms / 3.0] {
                assert_eq!(decided(&config, rate, then, stored).result, decided(&config, rate, then, [None, None]).result, "{ts} / {period_ms}: forgotten too early");
            }
        }
    }

    /// Upstash's first check applies to a count above 0 only: a count of 0
    /// on a window holding exactly its rate is granted (remaining 0); its
    /// second check alone would grant a count of 1 where the sum rounds
    /// (2^53 + 1 is 2^53), the first refuses it.
    #[test]
    fn upstash_checks_a_full_window_before_it_adds_the_count() {
        let config = limit(4.0, 1_000.0);
        assert!(decided(&config, 0.0, 500.0, [window(4.0, 0.0), None]).result.is_ok());
        assert!(!decided(&config, 0.0, 500.0, [window(4.5, 0.0), None]).result.is_ok());
        let huge = limit(9_007_199_254_740_992.0, 1_000.0);
        assert!(!decided(&huge, 1.0, 500.0, [window(9_007_199_254_740_992.0, 0.0), None]).result.is_ok());
        assert!(decided(&huge, 1.0, 500.0, [window(9_007_199_254_740_990.0, 0.0), None]).result.is_ok());
    }

    /// The one-state transition `advance` has for a sliding window (the
    /// package refuses `calculateRateLimit` on one): the count of the window
    /// holding `now`, plus `count`.
    #[test]
    fn advance_on_one_state_counts_the_window_holding_now() {
        let config = limit(10.0, 1_000.0);
        let same = advance_one(State { value: 3.0, ts: 2_000.0 }, &config, 2_500.0, 2.0);
        assert_eq!((same.value, same.ts, same.retry_after_ms), (5.0, 2_000.0, None));
        let older = advance_one(State { value: 3.0, ts: 1_000.0 }, &config, 2_500.0, 2.0);
        assert_eq!((older.value, older.ts), (2.0, 2_000.0));
    }

    #[test]
    fn a_clock_that_steps_back_decides_on_the_later_window_its_states_hold() {
        let config = limit(2.0, 1_000.0);
        // Window 3 is full; the clock reads window 1: still refused, not a fresh window.
        let refused = decided(&config, 1.0, 1_500.0, [None, window(2.0, 3_000.0)]);
        // Window 4 weighs window 3's 2 fully at its start: granted just after 4 000.
        assert_eq!(refused.result, RateLimitResult::refused(2_501.0));
    }

    #[test]
    fn figures_show_rate_the_tokens_left_and_the_end_of_the_current_window() {
        let config = limit(10.0, 60_000.0);
        let granted = decided(&config, 2.0, 75_000.0, [window(4.0, 0.0), window(5.0, 60_000.0)]);
        let shown = granted.figures(&config, 75_000.0, true);
        assert_eq!((shown.limit, shown.remaining, shown.reset, shown.window, shown.retry_after), (10.0, 0.0, 45.0, 60.0, None));
        assert_eq!(granted.figures(&config, 75_000.0, false).remaining, 2.0);
    }

    #[test]
    fn a_state_is_forgotten_when_the_window_after_next_starts() {
        let config = limit(10.0, 1_000.0);
        assert_eq!(forgotten_at(State { value: 3.0, ts: 4_000.0 }, &config), 6_000.0);
        assert_eq!(crate::transition::full_at(State { value: 3.0, ts: 4_000.0 }, &config), 6_000.0);
    }

    fn settings() -> ProptestConfig {
        ProptestConfig {
            cases: 20_000,
            failure_persistence: Some(Box::new(FileFailurePersistence::Direct("proptest-regressions/sliding_window.txt"))),
            ..ProptestConfig::default()
        }
    }

    fn stored_window() -> impl Strategy<Value = (bool, f64, i32)> {
        // Present or not, a count (whole or not), and its window relative to now's (-3..=1).
        (any::<bool>(), prop_oneof![(0u32..40).prop_map(f64::from), 0.0..40.0f64], -3i32..=1)
    }

    proptest! {
        #![proptest_config(settings())]

        /// `retryAfter` is a promise and not padded: the same call at `now +
        /// retryAfter` is granted, and at `now + retryAfter - 1` refused (a
        /// wait is whole ms, rounded up from the first instant that grants:
        /// `caller_wait`); over whole and fractional rates, periods, clocks
        /// and counts, states of the current, previous and older windows.
        #[test]
        fn retry_after_is_the_first_instant_the_call_is_granted(
            rate in prop_oneof![(1u32..30).prop_map(f64::from), 0.5..30.0f64],
            period_ms in prop_oneof![(1u32..100_000).prop_map(f64::from), 0.5..100_000.0f64],
            now_ms in prop_oneof![0.0..1e6f64, 1.7e12..1.8e12f64, (1_700_000_000_000u64..1_800_000_000_000).prop_map(|ms| ms as f64)],
            first in stored_window(),
            second in stored_window(),
            count_part in 0.0..=1.0f64,
            whole in any::<bool>(),
        ) {
            let config = limit(rate, period_ms);
            let count = if whole { floor(count_part * rate) } else { count_part * rate };
            let index = floor(now_ms / period_ms);
            let mut stored = [None, None];
            for (present, value, offset) in [first, second] {
                let at = index + f64::from(offset);
                if present {
                    stored[shard_of(at) as usize] = Some(State { value, ts: at * period_ms });
                }
            }
            let outcome = decided(&config, count, now_ms, stored);
            let granted = |then: f64| decided(&config, count, then, stored).result.is_ok();
            if let RateLimitResult::Refused { retry_after_ms, .. } = outcome.result {
                prop_assert!(retry_after_ms >= 1.0 && retry_after_ms == floor(retry_after_ms), "{}", retry_after_ms);
                prop_assert!(granted(now_ms + retry_after_ms), "refused at now + {}", retry_after_ms);
                prop_assert!(!granted(now_ms + retry_after_ms - 1.0), "granted at now + {} - 1", retry_after_ms);
            } else {
                prop_assert!(outcome.writes[0].is_some());
            }
        }
    }
}
