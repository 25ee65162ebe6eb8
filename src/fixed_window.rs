//! Fixed window: `rate` tokens arrive at the start of each `period` window.

use crate::calendar::{window_at, CalendarUnit, Window};
use crate::config::Config;
use crate::decision::wait_until;
use crate::js_math::js_min;
use crate::state::{State, Transition};

/// `k = floor((now - ts) / period)` whole windows passed;
/// `value = min(value + rate × k, capacity) - count`; `ts` moves to the current window's start.
///
/// The operations run in the reference's order so results match it bit for bit.
pub(crate) fn advance(state: State, config: &Config, now_ms: f64, count: f64) -> Transition {
    if let Some(unit) = config.calendar {
        return advance_calendar(state, config, unit, now_ms, count);
    }
    let windows_passed = crate::math::floor((now_ms - state.ts) / config.period_ms);
    let windows_passed = if windows_passed > 0.0 { windows_passed } else { 0.0 };
    let value = js_min(state.value + config.rate * windows_passed, config.capacity) - count;
    let ts = state.ts + windows_passed * config.period_ms;
    let retry_after_ms = (value < 0.0).then(|| {
        let windows_needed = crate::math::ceil(-value / config.rate);
        ts + config.period_ms * windows_needed - now_ms
    });
    Transition { value, ts, retry_after_ms, window_start_ms: Some(state.ts) }
}

/// The current window's bounds for a calendar config at `now_ms`.
pub(crate) fn calendar_window(config: &Config, unit: CalendarUnit, now_ms: f64) -> Window {
    window_at(unit, config.start_ms.unwrap_or_else(|| unit.default_anchor_ms()), now_ms)
}

/// A calendar window's transition, in numbers a host's port can repeat
/// without a calendar: `window` (the one holding `now`), the unit's mean
/// length `L` and its longest window.
///
/// - Windows passed: none when `ts >= window.start` (the same window, or a
///   later one when the clock stepped back); else `max(1, floor((start - ts) / L + 0.5))`,
///   exact for a `ts` on the window grid (a whole number of windows before
///   `start` differs from that many `L` by far less than half of one), and
///   `ts` moves to `window.start`.
/// - A shortfall of `n = ceil(-value / rate)` windows is due at the current
///   window's end, plus `n - 1` longest windows (a `ts` ahead of the clock:
///   `ts` plus `n` longest windows), rounded so that `now + wait` is not
///   before it: exact for one window, late (never early) for more.
pub(crate) fn advance_calendar(state: State, config: &Config, unit: CalendarUnit, now_ms: f64, count: f64) -> Transition {
    let window = calendar_window(config, unit, now_ms);
    let windows_passed = match state.ts < window.start_ms {
        true => crate::math::floor((window.start_ms - state.ts) / config.period_ms + 0.5).max(1.0),
        false => 0.0,
    };
    let value = js_min(state.value + config.rate * windows_passed, config.capacity) - count;
    let ts = if windows_passed > 0.0 { window.start_ms } else { state.ts };
    let retry_after_ms = (value < 0.0).then(|| {
        let windows_needed = crate::math::ceil(-value / config.rate);
        let first_end = if ts == window.start_ms { window.end_ms } else { ts + unit.longest_ms() };
        wait_until(now_ms, first_end + (windows_needed - 1.0) * unit.longest_ms())
    });
    Transition { value, ts, retry_after_ms, window_start_ms: Some(state.ts) }
}

/// The first instant a calendar state holds `capacity` with no traffic, as a
/// port computes it: `ts + n` longest windows for a shortfall of `n` windows
/// (one more where rounding leaves `value + rate × n` short); `+∞` when none is finite.
pub(crate) fn calendar_filled_at(state: State, config: &Config, unit: CalendarUnit) -> f64 {
    if state.value >= config.capacity {
        return state.ts;
    }
    let windows_needed = crate::math::ceil((config.capacity - state.value) / config.rate);
    for windows in [windows_needed, windows_needed + 1.0] {
        let at = state.ts + windows * unit.longest_ms();
        if at.is_finite() && state.value + config.rate * windows >= config.capacity {
            return at;
        }
    }
    f64::INFINITY
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigInput;

    fn window(rate: f64, period_ms: f64, capacity: f64) -> Config {
        Config::try_from(&ConfigInput::fixed_window(rate, period_ms).with("capacity", capacity)).unwrap()
    }

    #[test]
    fn fixed_window_refills_at_the_next_window_start() {
        let config = window(5.0, 1000.0, 5.0);
        let empty = State { value: 0.0, ts: 0.0 };
        assert_eq!(advance(empty, &config, 999.0, 0.0).value, 0.0);
        let next = advance(empty, &config, 1000.0, 0.0);
        assert_eq!((next.value, next.ts), (5.0, 1000.0));
    }

    #[test]
    fn retry_after_counts_the_windows_needed_for_the_shortfall() {
        let config = window(5.0, 1000.0, 20.0);
        let next = advance(State { value: 0.0, ts: 0.0 }, &config, 250.0, 12.0);
        // 12 short: three more windows' worth, the third starting at 3000.
        assert_eq!(next.retry_after_ms, Some(2750.0));
    }

    /// The reference clamps the windows passed with `Math.max(0, …)`, which
    /// turns a `-0` (now -0 against a window from +0) into +0: the value a
    /// -0 state projects to is +0 there, and must be here (hosts compare
    /// answers with `Object.is`).
    #[test]
    fn a_negative_zero_elapsed_passes_no_window_and_keeps_the_sign_the_reference_gives() {
        let config = window(5.0, 1000.0, 5.0);
        let next = advance(State { value: -0.0, ts: 0.0 }, &config, -0.0, 0.0);
        assert_eq!((next.value.to_bits(), next.ts.to_bits()), (0.0f64.to_bits(), 0.0f64.to_bits()));
    }

    #[test]
    fn a_clock_stepping_back_keeps_the_window() {
        let config = window(5.0, 1000.0, 5.0);
        let next = advance(State { value: 2.0, ts: 10_000.0 }, &config, 3_000.0, 1.0);
        assert_eq!((next.value, next.ts), (1.0, 10_000.0));
    }
}
