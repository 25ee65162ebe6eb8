//! Arithmetic exactly as JavaScript does it, where the reference's results depend on it.

/// JavaScript's `Math.min` for two numbers: `-0` is less than `0`, NaN wins.
pub(crate) fn js_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a < b {
        a
    } else if b < a {
        b
    } else if a.is_sign_negative() {
        a
    } else {
        b
    }
}
