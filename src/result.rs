//! What the limiter answers: a decision's result.

/// A wait as the limiter answers it: whole milliseconds, rounded up.
///
/// A decision's wait is a float (`5973.000000000001` ms), but a caller waits
/// with a timer, and timers drop the fraction (`setTimeout` in Node and in
/// browsers truncates to whole ms), so a fractional wait scheduled as given
/// fires early and the retry is refused again. Rounded up, it is never
/// early; and with a clock of whole milliseconds (`Date.now()`, the
/// default) the first instant a retry can succeed is `now + ceil(wait)`
/// anyway, so rounding loses nothing. Only answers are rounded: the
/// transition (`calculateRateLimit`) keeps the reference's exact float.
///
/// ```
/// use ratebound::caller_wait;
/// assert_eq!(caller_wait(5973.000000000001), 5974.0);
/// assert_eq!(caller_wait(250.0), 250.0);
/// assert_eq!(caller_wait(f64::INFINITY), f64::INFINITY);
/// ```
pub fn caller_wait(wait_ms: f64) -> f64 {
    crate::math::ceil(wait_ms)
}

/// The answer to `limit` and `check`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RateLimitResult {
    /// Granted. `retryAfter` is present when the tokens were reserved: wait
    /// that many ms before doing the work.
    Allowed {
        ok: bool,
        retry_after_ms: Option<f64>,
    },
    /// Refused; nothing was written. Retry in `retryAfter` ms.
    Refused {
        ok: bool,
        retry_after_ms: f64,
    },
}

impl RateLimitResult {
    /// Granted, possibly as a reservation that is due in `retry_after_ms`
    /// (rounded up to whole ms: see [`caller_wait`]).
    pub fn allowed(retry_after_ms: Option<f64>) -> Self {
        RateLimitResult::Allowed { ok: true, retry_after_ms: retry_after_ms.map(caller_wait) }
    }

    /// Refused: retry in `retry_after_ms` (rounded up to whole ms: see [`caller_wait`]).
    pub fn refused(retry_after_ms: f64) -> Self {
        RateLimitResult::Refused { ok: false, retry_after_ms: caller_wait(retry_after_ms) }
    }

    /// Whether the tokens were granted.
    pub fn is_ok(&self) -> bool {
        matches!(self, RateLimitResult::Allowed { .. })
    }

    /// The wait in ms, when there is one.
    pub fn retry_after_ms(&self) -> Option<f64> {
        match *self {
            RateLimitResult::Allowed { retry_after_ms, .. } => retry_after_ms,
            RateLimitResult::Refused { retry_after_ms, .. } => Some(retry_after_ms),
        }
    }
}
