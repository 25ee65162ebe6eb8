//! The exports of the package's pure functions, on numbers the caller holds:
//! `calculateRateLimit`, `decideRateLimit`, `rateLimitFigures`, `withJitter`.
//! Their answers sit at `EXTRA + PURE_ANSWER`.

use super::decide::put_figures;
use super::io::{compiled_config, 
    config_at, io, maybe, or_nan, put_error, CALCULATED_RETRY_AFTER, CALCULATED_STATUS, CALCULATED_TS, CALCULATED_WINDOW_START, DECIDED_OK, DECIDED_RETRY_AFTER,
    DECIDED_TS, DECIDED_VALUE, EXTRA, OUT, PURE_ANSWER, PURE_CONFIG,
};
use crate::decision::decide;
use crate::figures::figures;
use crate::plan::unit_random;
use crate::random::with_jitter;
use crate::request::{check_now, validate_request, Request};
use crate::result::caller_wait;
use crate::state::State;
use crate::transition::initial_state;

/// `calculateRateLimit` on a compiled config (its seven numbers), the state
/// (`value` NaN: none), `now`, `count`, and a phase for a fresh fixed window.
/// Returns the new value; `ts`, `retryAfter` and `windowStart` (NaN: none)
/// go to `EXTRA + PURE_ANSWER`, then the status (0, or `-code`).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn rb_calculate(kind: f64, rate: f64, period: f64, capacity: f64, max_reserved: f64, shards: f64, start: f64, value: f64, ts: f64, now: f64, count: f64, phase: f64) -> f64 {
    let io = io();
    let config = compiled_config([kind, rate, period, capacity, max_reserved, shards, start]);
    let checked = super::calculate::checked(&config, value, ts, now, count, phase);
    let at = EXTRA + PURE_ANSWER;
    match checked {
        Ok(transition) => {
            io[at + CALCULATED_TS] = transition.ts;
            io[at + CALCULATED_RETRY_AFTER] = or_nan(transition.retry_after_ms);
            io[at + CALCULATED_WINDOW_START] = or_nan(transition.window_start_ms);
            io[at + CALCULATED_STATUS] = 0.0;
            transition.value
        }
        Err(error) => {
            io[at + CALCULATED_STATUS] = put_error(io, OUT, &error);
            f64::NAN
        }
    }
}

/// `decideRateLimit`: the decision `limit` makes on one state the caller
/// holds (a sharded limit's state taken as a whole), on the config at
/// `EXTRA + PURE_CONFIG`. Answers at `EXTRA + PURE_ANSWER`: ok, retryAfter
/// (NaN: none), value, ts.
#[no_mangle]
pub extern "C" fn rb_decide_state(value: f64, ts: f64, now: f64, count: f64, reserve: u32, phase: f64) -> f64 {
    let io = io();
    let config = config_at(io, EXTRA + PURE_CONFIG);
    let request = Request { count, reserve: reserve != 0 };
    let decided = validate_request(&config, request).and_then(|()| check_now(&config, now)).and_then(|()| {
        let state = match maybe(value) {
            Some(value) => State { value, ts },
            None => initial_state(&config, now, unit_random(phase)?),
        };
        Ok(decide(state, &config, now, request))
    });
    match decided {
        Ok(decision) => {
            let at = EXTRA + PURE_ANSWER;
            io[at + DECIDED_OK] = f64::from(u8::from(decision.ok));
            // An answer's wait, as the limiter's: whole ms, rounded up.
            io[at + DECIDED_RETRY_AFTER] = match decision.ok {
                true => or_nan(decision.retry_after_ms.map(caller_wait)),
                false => caller_wait(decision.retry_after_ms.unwrap_or(f64::INFINITY)),
            };
            io[at + DECIDED_VALUE] = decision.next.value;
            io[at + DECIDED_TS] = decision.next.ts;
            0.0
        }
        Err(error) => put_error(io, OUT, &error),
    }
}

/// `rateLimitFigures` from a whole limit's `{ value, ts }` on the config at
/// `EXTRA + PURE_CONFIG`, at `now`, with a refusal's wait (NaN: none) and how
/// many shards were sampled. Answers the figures at `EXTRA + PURE_ANSWER`.
#[no_mangle]
pub extern "C" fn rb_figures(value: f64, ts: f64, now: f64, retry_after: f64, sampled: u32) -> f64 {
    let io = io();
    let config = config_at(io, EXTRA + PURE_CONFIG);
    let shown = figures(State { value, ts }, &config, now, maybe(retry_after), sampled.min(config.shard_count));
    put_figures(io, EXTRA + PURE_ANSWER, &shown);
    0.0
}

/// `withJitter`: `retryAfter` plus a random delay below `maxJitter`.
#[no_mangle]
pub extern "C" fn rb_jitter(retry_after: f64, max_jitter: f64, random: f64) -> f64 {
    match with_jitter(retry_after, max_jitter, random) {
        Ok(jittered) => jittered,
        Err(error) => {
            let io = io();
            put_error(io, OUT, &error);
            f64::NAN
        }
    }
}
