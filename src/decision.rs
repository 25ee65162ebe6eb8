//! One decision on one shard: granted, reserved or refused, with an honest wait.

use crate::config::{Config, Kind};
use crate::request::Request;
use crate::state::State;
use crate::transition::advance;

/// The outcome of deciding on one shard.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShardDecision {
    /// Whether the tokens were granted (possibly as a reservation).
    pub ok: bool,
    /// Present when `value < 0`: ms until the tokens will be there.
    pub retry_after_ms: Option<f64>,
    /// The state to write if the decision is taken.
    pub next: State,
}

/// Decides `request` on one shard whose state is `state`, under `shard_config`.
///
/// Refused when the shard would go negative and the request does not
/// reserve, or reserves past `maxReserved` (`Some(0)` allows no debt at all).
///
/// ```
/// use ratebound::{decide, Config, ConfigInput, Request, State};
/// let config = Config::try_from(&ConfigInput::fixed_window(2.0, 1000.0).with("maxReserved", 0.0)).unwrap();
/// let empty = State { value: 0.0, ts: 0.0 };
/// let refused = decide(empty, &config, 400.0, Request { count: 1.0, reserve: true });
/// assert_eq!((refused.ok, refused.retry_after_ms), (false, Some(600.0)));
/// ```
pub fn decide(state: State, shard_config: &Config, now_ms: f64, request: Request) -> ShardDecision {
    let reference = decide_as_reference(state, shard_config, now_ms, request);
    // No wait, nothing to replay: `checked` only ever lengthens a wait.
    if reference.retry_after_ms.is_none() {
        return reference;
    }
    checked(reference, state, shard_config, now_ms, request)
}

/// `decision` (the reference's, on `state`) with its wait made a promise:
/// lengthened where rounding made it short, by replaying the next call.
pub(crate) fn checked(decision: ShardDecision, state: State, shard_config: &Config, now_ms: f64, request: Request) -> ShardDecision {
    let ShardDecision { ok, next, .. } = decision;
    // What the next call will compute `wait` ms from now: the same request
    // on the same state if this one is refused; the written state taking
    // nothing if this one reserved.
    let replay = |then: f64| match (ok, request.reserve, shard_config.max_reserved) {
        (true, _, _) => advance(next, shard_config, then, 0.0).value,
        // A refused reservation succeeds once `count <= available + maxReserved`: the debt check's own form.
        (false, true, Some(max_reserved)) => advance(state, shard_config, then, 0.0).value + max_reserved - request.count,
        (false, _, _) => advance(state, shard_config, then, request.count).value,
    };
    let replayable = ok || within_reach(shard_config, request);
    let retry_after_ms = decision.retry_after_ms.map(|wait| match replayable {
        true => honest_wait(replay, shard_config, now_ms, wait),
        false => wait,
    });
    ShardDecision { retry_after_ms, ..decision }
}

/// Whether one shard alone can ever grant `request`: a full shard holds
/// `capacity`, and may go `maxReserved` into debt for a reservation.
pub(crate) fn within_reach(shard_config: &Config, request: Request) -> bool {
    match (request.reserve, shard_config.max_reserved) {
        (false, _) => request.count <= shard_config.capacity,
        (true, Some(max_reserved)) => request.count <= shard_config.capacity + max_reserved,
        (true, None) => true,
    }
}

/// The decision with the transition's own `retryAfter`, unchecked: what
/// each share of a two-shard request is decided with (the request's wait is
/// then an estimate anyway, since the next call reads shards at random).
pub(crate) fn decide_as_reference(state: State, shard_config: &Config, now_ms: f64, request: Request) -> ShardDecision {
    let transition = advance(state, shard_config, now_ms, request.count);
    // The debt check reads `count > available + maxReserved`, the same form
    // as validation's `count > capacity + maxReserved`, so a count validation
    // accepts is granted on a full shard even where rounding would make
    // `-(available - count)` exceed `maxReserved` by an ulp.
    let over_reservation = |max_reserved: f64| {
        let available = advance(state, shard_config, now_ms, 0.0).value;
        request.count > available + max_reserved
    };
    let refused = transition.value < 0.0 && (!request.reserve || shard_config.max_reserved.is_some_and(over_reservation));
    // A debt past -1.8e308 (reservations without maxReserved) cannot be
    // stored: fail closed, refuse it.
    let unstorable = !(transition.value.is_finite() && transition.ts.is_finite());
    ShardDecision {
        ok: !refused && !unstorable,
        retry_after_ms: match unstorable {
            true => Some(transition.retry_after_ms.filter(|wait| !wait.is_nan()).unwrap_or(f64::INFINITY)),
            false => transition.retry_after_ms,
        },
        next: State { value: transition.value, ts: transition.ts },
    }
}

/// `wait`, lengthened where rounding made it short: `replay(now + wait)`,
/// what the next call will compute then with no traffic in between, must not
/// be negative.
///
/// The transition's `retryAfter` is the reference's formula, bit for bit;
/// with a large debt, `ceil(-value / rate)` can round to one window too few,
/// and a token bucket's refill can fall an ulp short. A decision's wait is a
/// promise to the caller, so it is checked by replaying the next call at the
/// instant the caller will compute, `now + wait`, and every lengthening is
/// rounded so that instant can only move later (issue 24, item 9).
///
/// A calendar window's wait is already counted in whole windows from the
/// current window's end (`fixed_window::advance_calendar`), and a port
/// without a calendar could not replay it: it is kept as it is.
fn honest_wait(replay: impl Fn(f64) -> f64, config: &Config, now_ms: f64, mut wait: f64) -> f64 {
    if config.calendar.is_some() {
        return wait;
    }
    for _ in 0..8 {
        let then = now_ms + wait;
        let short_by = -replay(then);
        // Not `<= 0.0`: a NaN shortfall is no reason to wait longer.
        if short_by.is_nan() || short_by <= 0.0 {
            return wait;
        }
        let later = match config.kind {
            Kind::FixedWindow | Kind::SlidingWindow => then + config.period_ms,
            Kind::TokenBucket => (then + short_by / (config.rate / config.period_ms)).max(then.next_up()),
        };
        wait = wait_until(now_ms, later);
    }
    wait
}

/// The least wait whose end, as a caller computes it (`now + wait`), is not
/// before `later_ms`. `later - now` alone can round so that adding `now`
/// back lands an ulp before `later`.
///
/// ```text
/// 389.71457922605833 + (983.8167624630265 - 389.71457922605833) == 983.8167624630264
/// ```
pub(crate) fn wait_until(now_ms: f64, later_ms: f64) -> f64 {
    let mut wait = later_ms - now_ms;
    while now_ms + wait < later_ms {
        wait = wait.next_up();
    }
    wait
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigInput;
    use crate::request::validate_request;

    fn config(raw: ConfigInput) -> Config {
        Config::try_from(&raw).unwrap()
    }

    #[test]
    fn a_reservation_validation_accepts_is_granted_on_a_full_bucket() {
        // Found by the property tests: 0.5 + 0.15108… rounds so that
        // `count <= capacity + maxReserved` held while a debt check of
        // `count - capacity > maxReserved` refused it, forever.
        let limit = config(ConfigInput::token_bucket(0.5, 1000.0).with("maxReserved", 0.3021644355286205 * 0.5));
        let max_reserved = limit.max_reserved.unwrap();
        for count in [limit.capacity + max_reserved, 0.5 + 0.15108221776431025] {
            match validate_request(&limit, Request { count, reserve: true }) {
                Ok(()) => {
                    let full = State { value: limit.capacity, ts: 0.0 };
                    assert!(decide(full, &limit, 0.0, Request { count, reserve: true }).ok, "count {count}");
                }
                Err(error) => assert_eq!(error.code(), "COUNT_EXCEEDS_MAX"),
            }
        }
    }

    #[test]
    fn max_reserved_zero_means_no_reservation_at_all() {
        let limit = config(ConfigInput::token_bucket(10.0, 1000.0).with("maxReserved", 0.0));
        let empty = State { value: 0.0, ts: 0.0 };
        assert!(!decide(empty, &limit, 0.0, Request { count: 1.0, reserve: true }).ok);
        assert!(validate_request(&limit, Request { count: 11.0, reserve: true }).is_err());
    }

    /// Reproduces issue 24, item 9 (found natively by
    /// `tests/reliability_core.rs`'s promised waits): near clock 0 a wait
    /// lengthened to `later - now` could round so that `now + wait` fell
    /// back before `later`, so the lengthening made no progress and a client
    /// that waited exactly `retryAfter` was refused again (`retryAfter`
    /// 2.3e-13 here).
    #[test]
    fn waiting_exactly_retry_after_is_granted_where_now_plus_the_wait_rounds_down() {
        let cases = [
            // (rate, period, capacity, maxReserved, state, now, count, reserve)
            (10.0, 2970.510916184841, 10.0, None, (0.0, 389.71457922605833), 389.71457922605833, 2.0, false),
            (1.0, 1000.0, 1.0, Some(5.0), (-4.10522919807752, 2497.7399636202626), 2497.739963620263, 1.0, false),
            (0.5, 60_000.0, 0.5, Some(0.0), (0.0, 604.121274500716), 14722.237035540693, 0.5, true),
        ];
        for (rate, period_ms, capacity, max_reserved, (value, ts), now_ms, count, reserve) in cases {
            let mut input = ConfigInput::token_bucket(rate, period_ms).with("capacity", capacity);
            if let Some(max_reserved) = max_reserved {
                input = input.with("maxReserved", max_reserved);
            }
            let limit = config(input);
            let state = State { value, ts };
            let request = Request { count, reserve };
            let refused = decide(state, &limit, now_ms, request);
            let wait = refused.retry_after_ms.expect("refused with a wait");
            assert!(!refused.ok);
            let retried = decide(state, &limit, now_ms + wait, request);
            assert!(retried.ok, "waited {wait} from {now_ms}: {retried:?}");
            // And the wait is not padded: a wait one ulp shorter is still refused.
            let earlier = now_ms + wait.next_down();
            assert!(!decide(state, &limit, earlier, request).ok, "granted at {now_ms} + {}", wait.next_down());
        }
    }

    #[test]
    fn a_reservation_whose_debt_would_leave_the_numbers_is_refused_with_an_infinite_wait() {
        for limit in [config(ConfigInput::token_bucket(1.0, 1000.0)), config(ConfigInput::fixed_window(1.0, 1000.0).with("start", 0.0))] {
            let deep = State { value: -f64::MAX, ts: 0.0 };
            let decided = decide(deep, &limit, 0.0, Request { count: f64::MAX, reserve: true });
            assert_eq!((decided.ok, decided.retry_after_ms), (false, Some(f64::INFINITY)), "{:?}", limit.kind);
            // A debt of 1e300 is still a number, and a wait of 1e303 ms: granted.
            let decided = decide(State { value: -1e300, ts: 0.0 }, &limit, 0.0, Request { count: 1.0, reserve: true });
            assert!(decided.ok && decided.retry_after_ms.is_some_and(f64::is_finite), "{:?}: {decided:?}", limit.kind);
        }
    }

    #[test]
    fn reservation_goes_into_debt_and_says_when_to_run() {
        let limit = config(ConfigInput::token_bucket(10.0, 1000.0));
        let empty = State { value: 0.0, ts: 0.0 };
        let reserved = decide(empty, &limit, 0.0, Request { count: 5.0, reserve: true });
        assert_eq!((reserved.ok, reserved.retry_after_ms, reserved.next.value), (true, Some(500.0), -5.0));
    }
}
