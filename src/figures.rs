//! The figures HTTP headers show (IETF RateLimit, Retry-After): a limit's
//! quota, what remains of it, when it resets, and how long to wait, in the
//! whole units headers use and rounded so that no client is told too early.

use crate::config::{Config, Kind};
use crate::state::State;
use crate::transition::{advance, filled_at};

/// A limit's figures at one instant, for headers.
///
/// Whole-limit figures: for a sharded limit they rest on the shards sampled
/// (`getValue`'s report), so they are an estimate, and `sampled` says of how many.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figures {
    /// The quota `q`: the most tokens the limit holds (its capacity).
    pub limit: f64,
    /// `r`: whole tokens available now, never below 0.
    pub remaining: f64,
    /// `t`: whole seconds until the limit is full again (token bucket) or
    /// its current window ends (fixed window), rounded up; 0 when full.
    pub reset: f64,
    /// `w`: the period in whole seconds, rounded up.
    pub window: f64,
    /// `Retry-After`: whole seconds until a refused request can succeed,
    /// rounded up (never early); absent when nothing was refused.
    pub retry_after: Option<f64>,
    /// How many shards the figures rest on (the limit's shard count when all were read).
    pub sampled: u32,
    /// draft-11's `t`, the effective window: whole seconds within which no
    /// more than `remaining` tokens can be spent, rounded up (a client that
    /// keeps to it is never refused for spending early). A token bucket: until
    /// its next whole token (spending at once starts its refill, so this holds
    /// from a full bucket too); a fixed or sliding window: until its window ends. Never
    /// past `retry_after`.
    pub effective_window: f64,
}

/// Whole seconds from a wait in ms, rounded up: never shorter than the wait.
///
/// ```
/// assert_eq!(ratebound::whole_seconds(1.0), 1.0);
/// assert_eq!(ratebound::whole_seconds(2000.0), 2.0);
/// assert_eq!(ratebound::whole_seconds(0.0), 0.0);
/// ```
pub fn whole_seconds(wait_ms: f64) -> f64 {
    let seconds = crate::math::ceil(wait_ms.max(0.0) / 1000.0);
    // Division may round down across a whole second: never report a shorter wait.
    if seconds * 1000.0 < wait_ms { seconds + 1.0 } else { seconds }
}

/// The figures of a limit whose whole state is `state` under its (whole, not
/// per-shard) `config`, at `now_ms`; `retry_after_ms` is a refusal's wait.
///
/// ```
/// use ratebound::{figures, Config, ConfigInput, State};
/// let config = Config::try_from(&ConfigInput::token_bucket(10.0, 60_000.0)).unwrap();
/// let shown = figures(State { value: 4.5, ts: 0.0 }, &config, 0.0, Some(1_500.0), 1);
/// assert_eq!((shown.limit, shown.remaining, shown.reset, shown.window, shown.retry_after), (10.0, 4.0, 33.0, 60.0, Some(2.0)));
/// ```
pub fn figures(state: State, config: &Config, now_ms: f64, retry_after_ms: Option<f64>, sampled: u32) -> Figures {
    if config.kind == Kind::SlidingWindow {
        // `state` is `getValue`'s report: the tokens it grants at `ts`.
        let window_end = crate::sliding_window::window_start(config, now_ms.max(state.ts)) + config.period_ms;
        return Figures {
            limit: config.rate,
            remaining: crate::math::floor(state.value.max(0.0)),
            reset: whole_seconds(window_end - now_ms),
            window: whole_seconds(config.period_ms),
            retry_after: retry_after_ms.map(whole_seconds),
            sampled: 1,
            // What a sliding window counts only falls as time passes: `remaining` may be spent any
            // time before its window ends (never past a refusal's wait, as for the other kinds).
            effective_window: whole_seconds(retry_after_ms.map_or(window_end - now_ms, |wait| (window_end - now_ms).min(wait))),
        };
    }
    let now = advance(state, config, now_ms, 0.0);
    // A calendar window's length varies: the one that holds the state's window start.
    let window = config.calendar.map(|unit| crate::fixed_window::calendar_window(config, unit, now.ts));
    let window_ms = window.map_or(config.period_ms, |window| window.end_ms - window.start_ms);
    let reset_at_ms = match config.kind {
        // Until full, whatever may drop the state: a 3+-shard bucket's shards are never
        // dropped, but they still fill (issue 24: its reset read one period).
        Kind::TokenBucket => filled_at(State { value: now.value, ts: now.ts }, config),
        // The window that holds `now` ends one period after its start.
        Kind::FixedWindow => window.map_or(now.ts + config.period_ms, |window| window.end_ms),
        Kind::SlidingWindow => now.ts + config.period_ms,
    };
    let reset = match now.value >= config.capacity && config.kind == Kind::TokenBucket {
        true => 0.0,
        false if reset_at_ms.is_finite() => whole_seconds(reset_at_ms - now_ms),
        false => whole_seconds(window_ms),
    };
    let remaining = crate::math::floor(now.value.max(0.0));
    let effective_ms = match config.kind {
        // The next whole token: `remaining + 1` reached at the bucket's rate.
        Kind::TokenBucket => (remaining + 1.0 - now.value) / (config.rate / config.period_ms),
        Kind::FixedWindow | Kind::SlidingWindow => reset_at_ms - now_ms,
    };
    let effective_ms = if effective_ms.is_finite() { effective_ms } else { config.period_ms };
    let effective_ms = retry_after_ms.map_or(effective_ms, |wait| effective_ms.min(wait));
    Figures {
        limit: config.capacity,
        remaining,
        reset,
        window: whole_seconds(window_ms),
        retry_after: retry_after_ms.map(whole_seconds),
        sampled,
        effective_window: whole_seconds(effective_ms),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigInput;

    #[test]
    fn a_fixed_window_resets_when_its_window_ends() {
        let config = Config::try_from(&ConfigInput::fixed_window(5.0, 10_000.0).with("start", 0.0)).unwrap();
        let shown = figures(State { value: 2.0, ts: 0.0 }, &config, 2_500.0, None, 1);
        assert_eq!((shown.remaining, shown.reset, shown.window), (2.0, 8.0, 10.0));
    }

    #[test]
    fn a_debt_shows_zero_remaining_and_retry_after_is_never_early() {
        let config = Config::try_from(&ConfigInput::token_bucket(1.0, 1_000.0)).unwrap();
        let shown = figures(State { value: -0.5, ts: 0.0 }, &config, 0.0, Some(1_000.001), 1);
        assert_eq!((shown.remaining, shown.retry_after), (0.0, Some(2.0)));
    }

    /// Issue 24, item 12: with 3 or more shards a token bucket's shards are
    /// never dropped (`full_at` is ∞ for them), and `reset` read that as
    /// "one period": a 30-per-second bucket at -30 said 1 s with 3 shards
    /// but 2 s with 1, telling clients too early.
    #[test]
    fn a_token_bucket_resets_when_it_is_full_again_whatever_its_shard_count() {
        for shards in [1.0, 2.0, 3.0, 8.0] {
            let config = Config::try_from(&ConfigInput::token_bucket(30.0, 1_000.0).with("shards", shards)).unwrap();
            let shown = figures(State { value: -30.0, ts: 0.0 }, &config, 0.0, None, 1);
            assert_eq!((shown.remaining, shown.reset), (0.0, 2.0), "{shards} shards");
            // Half full: half a second, rounded up to 1.
            assert_eq!(figures(State { value: 15.0, ts: 0.0 }, &config, 0.0, None, 1).reset, 1.0, "{shards} shards");
        }
    }

    #[test]
    fn a_wait_too_small_to_survive_a_division_by_1000_still_shows_one_second() {
        // 5e-324 / 1000 underflows to 0: the wait is not 0.
        for wait in [5e-324, 1e-320, f64::MIN_POSITIVE] {
            assert_eq!(whole_seconds(wait), 1.0, "{wait:e}");
        }
        assert_eq!(whole_seconds(-5.0), 0.0);
    }

    #[test]
    fn a_full_token_bucket_resets_now_and_a_full_fixed_window_when_its_window_ends() {
        let bucket = Config::try_from(&ConfigInput::token_bucket(5.0, 10_000.0)).unwrap();
        let window = Config::try_from(&ConfigInput::fixed_window(5.0, 10_000.0).with("start", 0.0)).unwrap();
        let full = State { value: 5.0, ts: 0.0 };
        assert_eq!(figures(full, &bucket, 2_500.0, None, 1).reset, 0.0);
        // The window from 0 ends at 10 000: 7.5 s, shown as 8.
        let shown = figures(full, &window, 2_500.0, None, 1);
        assert_eq!((shown.remaining, shown.reset), (5.0, 8.0));
    }

    /// A state no decision stores (a debt whose refill no clock reaches, say
    /// after the limit's rate was lowered) still shows a finite reset.
    #[test]
    fn a_reset_no_clock_reaches_is_shown_as_one_period_not_infinity() {
        let bucket = Config::try_from(&ConfigInput::token_bucket(1.0, 1_000.0)).unwrap();
        let shown = figures(State { value: -1e308, ts: 0.0 }, &bucket, 0.0, None, 1);
        assert_eq!((shown.remaining, shown.reset), (0.0, 1.0));
    }

    #[test]
    fn a_token_buckets_effective_window_lasts_until_its_next_whole_token() {
        // 10 a minute: a token every 6 s. 4.5 tokens: the fifth whole one in 3 s.
        let bucket = Config::try_from(&ConfigInput::token_bucket(10.0, 60_000.0)).unwrap();
        assert_eq!(figures(State { value: 4.5, ts: 0.0 }, &bucket, 0.0, None, 1).effective_window, 3.0);
        // Full: spending at once starts the refill, the next token comes 6 s later.
        assert_eq!(figures(State { value: 10.0, ts: 0.0 }, &bucket, 0.0, None, 1).effective_window, 6.0);
        // In debt: nothing can be spent until one whole token is there again.
        assert_eq!(figures(State { value: -2.0, ts: 0.0 }, &bucket, 0.0, None, 1).effective_window, 18.0);
    }

    #[test]
    fn a_fixed_windows_effective_window_ends_with_its_window() {
        let window = Config::try_from(&ConfigInput::fixed_window(5.0, 10_000.0).with("start", 0.0)).unwrap();
        let shown = figures(State { value: 2.0, ts: 0.0 }, &window, 2_500.0, None, 1);
        assert_eq!((shown.remaining, shown.effective_window), (2.0, 8.0));
    }

    #[test]
    fn the_effective_window_never_ends_after_retry_after() {
        // A refused count of 0.5 at 0.25 tokens waits 1.5 s, before the next whole token (4.5 s).
        let bucket = Config::try_from(&ConfigInput::token_bucket(1.0, 6_000.0)).unwrap();
        let shown = figures(State { value: 0.25, ts: 0.0 }, &bucket, 0.0, Some(1_500.0), 1);
        assert_eq!((shown.effective_window, shown.retry_after), (2.0, Some(2.0)));
        assert!(shown.effective_window <= shown.retry_after.unwrap());
    }

    #[test]
    fn whole_seconds_never_rounds_a_wait_down() {
        for wait in [0.001, 999.999, 1000.0, 1000.0000000001, 123_456.7] {
            assert!(whole_seconds(wait) * 1000.0 >= wait, "{wait}");
        }
    }
}
