//! Spreading retries out so that refused clients do not all return at once.

use crate::error::Error;
use crate::js_number::js_number;
use crate::transition::unit_random;

/// `retry_after_ms` plus a random delay in `[0, max_jitter_ms)`.
///
/// ```
/// assert_eq!(ratebound::with_jitter(1_000.0, 500.0, 0.5), Ok(1_250.0));
/// ```
///
/// # Errors
/// [`Error::InvalidRequest`] when a time is not a finite number `>= 0`;
/// [`Error::InvalidRandom`] when `random` is outside `[0, 1)`.
pub fn with_jitter(retry_after_ms: f64, max_jitter_ms: f64, random: f64) -> Result<f64, Error> {
    for (field, value) in [("retryAfter", retry_after_ms), ("maxJitter", max_jitter_ms)] {
        if !(value.is_finite() && value >= 0.0) {
            return Err(Error::InvalidRequest {
                limit: "withJitter".into(),
                field: field.into(),
                problem: format!("{field} must be a finite number >= 0 (got {})", js_number(value)),
            });
        }
    }
    Ok(retry_after_ms + unit_random(random)? * max_jitter_ms)
}
