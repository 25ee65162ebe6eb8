//! Spreading retries out so that refused clients do not all return at once.

use crate::error::{Error, Field, Rule};
use crate::plan::unit_random;

/// `retry_after_ms` plus a random delay in `[0, max_jitter_ms)`: never
/// `max_jitter_ms` itself, even where rounding would reach it.
///
/// ```
/// assert_eq!(ratebound::with_jitter(1_000.0, 500.0, 0.5), Ok(1_250.0));
/// assert!(ratebound::with_jitter(100.0, 10.0, 0.9999999999999999).unwrap() < 110.0);
/// ```
///
/// # Errors
/// [`Error::InvalidRequest`] when a time is not a finite number `>= 0`;
/// [`Error::InvalidRandom`] when `random` is outside `[0, 1)`.
pub fn with_jitter(retry_after_ms: f64, max_jitter_ms: f64, random: f64) -> Result<f64, Error> {
    for (field, value) in [(Field::RetryAfter, retry_after_ms), (Field::MaxJitter, max_jitter_ms)] {
        if !(value.is_finite() && value >= 0.0) {
            return Err(Error::request(field, Rule::FiniteNonNegative, value));
        }
    }
    let end = retry_after_ms + max_jitter_ms;
    let jittered = retry_after_ms + unit_random(random)? * max_jitter_ms;
    // Half-open, as documented: rounding can carry the sum up to `end`
    // (100 + 0.9999999999999999 × 10 is 110 in floating point).
    Ok(if jittered >= end && max_jitter_ms > 0.0 { end.next_down().max(retry_after_ms) } else { jittered })
}
