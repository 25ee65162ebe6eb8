//! `calculateRateLimit` at its floor: one crossing of four or five numbers.
//!
//! A caller's loop reuses one config object, so the package loads a config's
//! seven compiled numbers once ([`rb_calculate_use`]) and then passes only the
//! state, `now` and `count` ([`rb_calculate_next`]): the same transition as
//! [`rb_calculate`](super::pure::rb_calculate), which takes all twelve
//! numbers on every call. The loaded config is this module's own, apart from
//! the buffer every other export writes, so nothing between two calls can
//! change it.

use super::io::{compiled_config, io, maybe, or_nan, put_error, CALCULATED_RETRY_AFTER, CALCULATED_STATUS, CALCULATED_TS, CALCULATED_WINDOW_START, EXTRA, OUT, PURE_ANSWER};
use crate::config::{Config, Kind};
use crate::error::{Error, Field, Rule};
use crate::plan::unit_random;
use crate::request::check_count;
use crate::state::{State, Transition};
use crate::transition::{advance, calculate_rate_limit};

/// The config [`rb_calculate_next`] decides on, as [`rb_calculate_use`] loaded it.
/// (All zero bits until the first load, so it costs the module no data segment.)
static mut LOADED: Config = Config { kind: Kind::TokenBucket, rate: 0.0, period_ms: 0.0, calendar: None, capacity: 0.0, max_reserved: None, shard_count: 0, start_ms: None };

/// Loads a compiled config (its seven numbers, as `rb_compile` wrote them:
/// `maxReserved` and `start` NaN for none) for the transitions that follow.
/// Takes only numbers a compile produced; checks nothing.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn rb_calculate_use(kind: f64, rate: f64, period: f64, capacity: f64, max_reserved: f64, shards: f64, start: f64) {
    let config = compiled_config([kind, rate, period, capacity, max_reserved, shards, start]);
    // SAFETY: calls into the module run one at a time and never re-enter (see `io`).
    unsafe { *core::ptr::addr_of_mut!(LOADED) = config };
}

/// `calculateRateLimit` on the loaded config: the state (`value` NaN: none),
/// `now`, `count`, and a phase in `[0, 1)` for a fresh fixed window without
/// `start` (ignored otherwise). Returns the new value; `ts`, `retryAfter` and
/// `windowStart` (NaN: none) go to `EXTRA + PURE_ANSWER`, as
/// `rb_calculate` writes them. An error returns NaN (a valid call's value is
/// never NaN: every input is finite, and `min(…, capacity)` caps an overflow),
/// with its `-code` as the answer's status and its details at `OUT`.
#[no_mangle]
pub extern "C" fn rb_calculate_next(value: f64, ts: f64, now: f64, count: f64, phase: f64) -> f64 {
    // SAFETY: as above.
    let config = unsafe { *core::ptr::addr_of!(LOADED) };
    let io = io();
    // The common call, a state and a valid `now` and `count`, checks nothing more;
    // anything else takes the checked road below, and its errors.
    let plain_now = now.is_finite() && (config.calendar.is_none() || now.abs() <= crate::MAX_INSTANT_MS);
    let transition = if !value.is_nan() && plain_now && count.is_finite() && count >= 0.0 {
        advance(State { value, ts }, &config, now, count)
    } else {
        match checked(&config, value, ts, now, count, phase) {
            Ok(transition) => transition,
            Err(error) => {
                io[EXTRA + PURE_ANSWER + CALCULATED_STATUS] = put_error(io, OUT, &error);
                return f64::NAN;
            }
        }
    };
    io[EXTRA + PURE_ANSWER + CALCULATED_TS] = transition.ts;
    io[EXTRA + PURE_ANSWER + CALCULATED_RETRY_AFTER] = or_nan(transition.retry_after_ms);
    io[EXTRA + PURE_ANSWER + CALCULATED_WINDOW_START] = or_nan(transition.window_start_ms);
    transition.value
}

/// The transition with every check `rb_calculate` makes, in its order.
pub(super) fn checked(config: &Config, value: f64, ts: f64, now: f64, count: f64, phase: f64) -> Result<Transition, Error> {
    if !now.is_finite() {
        return Err(Error::request(Field::Now, Rule::FiniteMs, now));
    }
    if config.calendar.is_some() && now.abs() > crate::MAX_INSTANT_MS {
        return Err(Error::request(Field::Now, Rule::CalendarInstant, now));
    }
    let count = check_count(count)?;
    if config.kind == Kind::SlidingWindow {
        return Err(crate::sliding_window::two_windows());
    }
    let state = maybe(value).map(|value| State { value, ts });
    let phase = if state.is_none() && config.kind == Kind::FixedWindow && config.start_ms.is_none() { unit_random(phase)? } else { 0.0 };
    Ok(calculate_rate_limit(state, config, now, count, phase))
}
