//! Token bucket: tokens flow in continuously at `rate / period` per ms.

use crate::config::Config;
use crate::js_math::js_min;
use crate::state::{State, Transition};

/// `value = min(value + elapsed × rate / period, capacity) - count`, `ts = max(now, ts)`.
///
/// The operations run in the reference's order so results match it bit for bit.
pub(crate) fn advance(state: State, config: &Config, now_ms: f64, count: f64) -> Transition {
    let refill_per_ms = config.rate / config.period_ms;
    let since_last_ms = now_ms - state.ts;
    let elapsed_ms = if since_last_ms > 0.0 { since_last_ms } else { 0.0 };
    let value = js_min(state.value + elapsed_ms * refill_per_ms, config.capacity) - count;
    let clock_stepped_back = state.ts > now_ms;
    let ts = if clock_stepped_back { state.ts } else { now_ms };
    let retry_after_ms = (value < 0.0).then(|| {
        let refill_ms = -value / refill_per_ms;
        if clock_stepped_back { refill_ms + (ts - now_ms) } else { refill_ms }
    });
    Transition { value, ts, retry_after_ms, window_start_ms: None }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigInput;

    fn bucket(rate: f64, period_ms: f64, capacity: f64) -> Config {
        Config::try_from(&ConfigInput::token_bucket(rate, period_ms).with("capacity", capacity)).unwrap()
    }

    #[test]
    fn refills_continuously_up_to_capacity() {
        let config = bucket(10.0, 1000.0, 3.0);
        let drained = State { value: 0.0, ts: 0.0 };
        assert_eq!(advance(drained, &config, 100.0, 0.0).value, 1.0);
        assert_eq!(advance(drained, &config, 60_000.0, 0.0).value, 3.0);
    }

    #[test]
    fn retry_after_is_the_time_to_refill_the_shortfall() {
        let config = bucket(10.0, 1000.0, 10.0);
        let next = advance(State { value: 0.0, ts: 0.0 }, &config, 0.0, 2.0);
        assert_eq!((next.value, next.retry_after_ms), (-2.0, Some(200.0)));
    }

    /// The reference takes `Math.max(0, now - ts)` and `ts = now`; with
    /// signed zeros that is +0 elapsed and `now`'s own zero (hosts compare
    /// answers with `Object.is`).
    #[test]
    fn signed_zero_clocks_give_the_references_zeros() {
        let config = bucket(10.0, 1000.0, 10.0);
        let next = advance(State { value: -0.0, ts: 0.0 }, &config, -0.0, 0.0);
        assert_eq!((next.value.to_bits(), next.ts.to_bits()), (0.0f64.to_bits(), (-0.0f64).to_bits()));
        let next = advance(State { value: 1.0, ts: -0.0 }, &config, 0.0, 0.0);
        assert_eq!(next.ts.to_bits(), 0.0f64.to_bits());
    }

    #[test]
    fn a_clock_stepping_back_neither_mints_nor_burns_tokens() {
        let config = bucket(10.0, 1000.0, 10.0);
        let state = State { value: 4.0, ts: 5_000.0 };
        let next = advance(state, &config, 1_000.0, 1.0);
        assert_eq!((next.value, next.ts), (3.0, 5_000.0));
        let short = advance(State { value: 0.0, ts: 5_000.0 }, &config, 1_000.0, 1.0);
        assert_eq!(short.retry_after_ms, Some(100.0 + 4_000.0));
    }
}
