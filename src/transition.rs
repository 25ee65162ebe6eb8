//! `calculateRateLimit`: one state, one config, one instant → the next state.

use crate::config::{Config, Kind, MIN_CHOOSE_TWO};
use crate::state::{State, Transition};
use crate::{fixed_window, token_bucket};

/// The state a key starts in: full. A fixed window without `start` begins at a
/// random instant of the last `period` (`phase`, a number in `[0, 1)` drawn
/// before the call reads anything), so keys do not all refill together.
///
/// ```
/// use ratebound::{initial_state, Config, ConfigInput};
/// let config = Config::try_from(&ConfigInput::fixed_window(5.0, 1000.0)).unwrap();
/// let state = initial_state(&config, 10_000.0, 0.25);
/// assert_eq!((state.value, state.ts), (5.0, 9_750.0));
/// ```
pub fn initial_state(config: &Config, now_ms: f64, phase: f64) -> State {
    let ts = match (config.kind, config.start_ms) {
        (Kind::TokenBucket, _) => now_ms,
        (Kind::FixedWindow, Some(start_ms)) => start_ms,
        (Kind::FixedWindow, None) => now_ms - crate::math::floor(phase * config.period_ms),
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
    filled_at(state, config)
}

/// The first instant from which `state`, with no further traffic, holds
/// `capacity` (`+∞` when no finite instant does). Unlike [`full_at`] this
/// says nothing about whether the state may be dropped.
pub fn filled_at(state: State, config: &Config) -> f64 {
    let candidate = match config.kind {
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
