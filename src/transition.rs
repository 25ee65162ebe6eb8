//! `calculateRateLimit`: one state, one config, one instant → the next state.

use crate::config::{Config, Kind, MIN_CHOOSE_TWO};
use crate::state::{State, Transition};
use crate::{fixed_window, token_bucket};

/// The state a key starts in: full. A fixed window without `start` begins at a
/// random instant of the last `period` (`phase`, a number in `[0, 1)` drawn
/// before the call reads anything), so keys do not all refill together; a
/// calendar window (a `period` of `"day"`, `"week"`, `"month"` or `"year"`)
/// at the start of the window that holds `now`, never at random.
///
/// ```
/// use ratebound::{initial_state, Config, ConfigInput};
/// let config = Config::try_from(&ConfigInput::fixed_window(5.0, 1000.0)).unwrap();
/// let state = initial_state(&config, 10_000.0, 0.25);
/// assert_eq!((state.value, state.ts), (5.0, 9_750.0));
/// ```
pub fn initial_state(config: &Config, now_ms: f64, phase: f64) -> State {
    let ts = match (config.kind, config.calendar, config.start_ms) {
        (Kind::TokenBucket, _, _) => now_ms,
        (Kind::FixedWindow, Some(unit), _) => fixed_window::calendar_window(config, unit, now_ms).start_ms,
        (Kind::FixedWindow, None, Some(start_ms)) => start_ms,
        (Kind::FixedWindow, None, None) => now_ms - crate::math::floor(phase * config.period_ms),
        // A window with no count yet: the one holding `now`.
        (Kind::SlidingWindow, _, _) => return State { value: 0.0, ts: crate::sliding_window::window_start(config, now_ms) },
    };
    State { value: config.capacity, ts }
}

/// Projects `state` (or a fresh one) to `now_ms` and consumes `count` tokens.
///
/// Where `now_ms >= state.ts` this is bit for bit the reference's
/// `calculateRateLimit`; a clock that stepped backwards neither mints nor
/// burns tokens. `config` is used as given (pass [`Config::per_shard`] for a shard).
///
/// `phase` places a fresh fixed window without `start` (see [`initial_state`]).
///
/// ```
/// use ratebound::{calculate_rate_limit, Config, ConfigInput, State};
/// let config = Config::try_from(&ConfigInput::token_bucket(10.0, 60_000.0)).unwrap();
/// let state = State { value: 0.0, ts: 0.0 };
/// let next = calculate_rate_limit(Some(state), &config, 3_000.0, 1.0, 0.5);
/// assert_eq!(next.value, -0.5);
/// assert_eq!(next.retry_after_ms, Some(3_000.0));
/// ```
pub fn calculate_rate_limit(state: Option<State>, config: &Config, now_ms: f64, count: f64, phase: f64) -> Transition {
    let state = state.unwrap_or_else(|| initial_state(config, now_ms, phase));
    advance(state, config, now_ms, count)
}

/// The transition from an existing state (no randomness needed).
pub fn advance(state: State, config: &Config, now_ms: f64, count: f64) -> Transition {
    match config.kind {
        Kind::TokenBucket => token_bucket::advance(state, config, now_ms, count),
        Kind::FixedWindow => fixed_window::advance(state, config, now_ms, count),
        Kind::SlidingWindow => crate::sliding_window::advance_one(state, config, now_ms, count),
    }
}

/// The first instant from which `state` is full again with no further
/// traffic: from then on a missing state decides exactly as this one would,
/// so a store may drop it. `+∞` when no such instant is certain, as for a
/// fixed window with a random start, whose windows a fresh state would
/// place elsewhere.
///
/// ```
/// use ratebound::{full_at, Config, ConfigInput, State};
/// let config = Config::try_from(&ConfigInput::token_bucket(10.0, 1000.0)).unwrap();
/// assert_eq!(full_at(State { value: 5.0, ts: 0.0 }, &config), 500.0);
/// ```
pub fn full_at(state: State, config: &Config) -> f64 {
    // With 3+ shards, whether a shard is stored decides whether a second
    // shard is read (a fresh first shard that grants is decided alone), so
    // dropping even a full one would change decisions (found by issue 18's
    // bounded-store property).
    if config.shard_count >= MIN_CHOOSE_TWO {
        return f64::INFINITY;
    }
    // Even a full one: its `ts` holds the phase of its windows, which a
    // fresh state would draw anew (found by issue 18: a dropped, full
    // window came back with new windows and admitted twice its rate).
    if config.kind == Kind::FixedWindow && config.start_ms.is_none() {
        return f64::INFINITY;
    }
    // A window's count matters while it is the current or the previous window.
    if config.kind == Kind::SlidingWindow {
        return crate::sliding_window::forgotten_at(state, config);
    }
    filled_at(state, config)
}

/// The first instant from which `state`, with no further traffic, holds
/// `capacity` (`+∞` when no finite instant does). Unlike [`full_at`] this
/// says nothing about whether the state may be dropped.
pub fn filled_at(state: State, config: &Config) -> f64 {
    if let Some(unit) = config.calendar {
        return fixed_window::calendar_filled_at(state, config, unit);
    }
    let candidate = match config.kind {
        Kind::SlidingWindow => return crate::sliding_window::forgotten_at(state, config),
        _ if state.value >= config.capacity => state.ts,
        Kind::TokenBucket => state.ts + (config.capacity - state.value) / (config.rate / config.period_ms),
        Kind::FixedWindow => state.ts + crate::math::ceil((config.capacity - state.value) / config.rate) * config.period_ms,
    };
    // Rounding may leave the projection an ulp short: step past it, and
    // never call a state full that the transition would not fill.
    for instant in [candidate, crate::math::ceil(candidate) + 1.0] {
        if instant.is_finite() && advance(state, config, instant, 0.0).value >= config.capacity {
            return instant;
        }
    }
    f64::INFINITY
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigInput;

    fn config(input: ConfigInput) -> Config {
        Config::try_from(&input).unwrap()
    }

    #[test]
    fn a_bucket_is_filled_when_its_shortfall_has_flowed_in_and_a_window_at_the_window_that_covers_it() {
        let bucket = config(ConfigInput::token_bucket(10.0, 1_000.0));
        assert_eq!(filled_at(State { value: 5.0, ts: 100.0 }, &bucket), 600.0);
        assert_eq!(filled_at(State { value: -5.0, ts: 100.0 }, &bucket), 1_600.0);
        let window = config(ConfigInput::fixed_window(4.0, 1_000.0).with("capacity", 10.0).with("start", 0.0));
        // 7 short at 4 a window: two windows, the second starting at 3 000.
        assert_eq!(filled_at(State { value: 3.0, ts: 1_000.0 }, &window), 3_000.0);
    }

    /// A state above capacity (the limit was lowered since) is full from
    /// its `ts`, not before: it must not be dropped as if full in the past.
    #[test]
    fn a_state_already_full_is_filled_at_its_own_time() {
        for limit in [config(ConfigInput::token_bucket(10.0, 1_000.0)), config(ConfigInput::fixed_window(10.0, 1_000.0).with("start", 0.0))] {
            for value in [10.0, 25.0] {
                assert_eq!(filled_at(State { value, ts: 700.0 }, &limit), 700.0, "{:?} {value}", limit.kind);
            }
        }
    }

    /// Found by a search over random states: `ts + shortfall / rate` can
    /// round to an instant where the projection is still an ulp short of
    /// capacity. Then the next whole millisecond past it, plus one.
    #[test]
    fn where_rounding_leaves_the_projection_short_the_fill_is_the_next_whole_ms_past_it() {
        let bucket = config(ConfigInput::token_bucket(7.0, 1_000.0).with("capacity", 21.0));
        let state = State { value: -19.632980577335676, ts: 625_902.231012569 };
        let formula = state.ts + (21.0 - state.value) / (7.0 / 1_000.0);
        assert!(advance(state, &bucket, formula, 0.0).value < 21.0, "the formula's instant is short");
        assert_eq!(filled_at(state, &bucket), 631_708.0);
        assert_eq!(advance(state, &bucket, 631_708.0, 0.0).value, 21.0);
        let window = config(ConfigInput::fixed_window(0.5, 3_448.1237510081933).with("capacity", 0.25).with("start", 0.0));
        assert_eq!(filled_at(State { value: 0.05971037411321084, ts: 954_704.0 }, &window), 958_154.0);
    }

    #[test]
    fn a_fill_no_finite_instant_reaches_is_never() {
        let bucket = config(ConfigInput::token_bucket(1.0, 1_000.0));
        assert_eq!(filled_at(State { value: -f64::MAX, ts: 0.0 }, &bucket), f64::INFINITY);
    }

    /// `full_at` says when a store may drop a state: when it is filled,
    /// unless dropping it would change a decision.
    #[test]
    fn a_state_may_be_dropped_once_filled_unless_its_windows_or_its_shard_count_say_otherwise() {
        let state = State { value: 5.0, ts: 0.0 };
        // One or two shards of a bucket, or windows from a known start: once filled.
        for shards in [1.0, 2.0] {
            let bucket = config(ConfigInput::token_bucket(10.0 * shards, 1_000.0).with("shards", shards)).per_shard();
            assert_eq!(full_at(state, &bucket), 500.0, "{shards} shards");
        }
        let window = config(ConfigInput::fixed_window(10.0, 1_000.0).with("start", 0.0));
        assert_eq!(full_at(state, &window), 1_000.0);
        // Windows without start: a fresh state would draw other windows, so never, even when full.
        let drawn = config(ConfigInput::fixed_window(10.0, 1_000.0));
        assert_eq!(full_at(State { value: 10.0, ts: 0.0 }, &drawn), f64::INFINITY);
        // Three or more shards: whether a shard is stored changes which are read, so never.
        for shards in [3.0, 8.0] {
            let bucket = config(ConfigInput::token_bucket(10.0 * shards, 1_000.0).with("shards", shards)).per_shard();
            assert_eq!(full_at(State { value: 10.0, ts: 0.0 }, &bucket), f64::INFINITY, "{shards} shards");
        }
    }
}
