//! What the limiter answers: a decision's result.

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
    /// Granted, possibly as a reservation that is due in `retry_after_ms`.
    pub fn allowed(retry_after_ms: Option<f64>) -> Self {
        RateLimitResult::Allowed { ok: true, retry_after_ms }
    }

    /// Refused: retry in `retry_after_ms`.
    pub fn refused(retry_after_ms: f64) -> Self {
        RateLimitResult::Refused { ok: false, retry_after_ms }
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
