//! Numbers printed the way JavaScript prints them, so that error messages are
//! the same strings the reference implementation produces.

/// Formats `x` as JavaScript's `String(x)` does. Inside WebAssembly the JS
/// engine prints its own numbers: the same strings by definition, without
/// linking Rust's float formatter (about 17 KB).
#[cfg(target_arch = "wasm32")]
pub fn js_number(x: f64) -> String {
    crate::wasm::format_number(x)
}

/// Formats `x` as JavaScript's `String(x)` does.
///
/// Rust's `Display` for `f64` already prints the shortest string that reads
/// back to the same number; JavaScript differs only in switching to exponent
/// notation below `1e-6` and from `1e21`, and in its names for the
/// non-finite values.
///
/// ```
/// use ratebound::js_number;
/// assert_eq!(js_number(2.0), "2");
/// assert_eq!(js_number(0.1 + 0.2), "0.30000000000000004");
/// assert_eq!(js_number(1e21), "1e+21");
/// assert_eq!(js_number(1.5e-7), "1.5e-7");
/// assert_eq!(js_number(f64::NEG_INFINITY), "-Infinity");
/// assert_eq!(js_number(-0.0), "0");
/// ```
#[cfg(not(target_arch = "wasm32"))]
pub fn js_number(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity".into() } else { "-Infinity".into() };
    }
    if x == 0.0 {
        return "0".into();
    }
    let magnitude = x.abs();
    if (1e-6..1e21).contains(&magnitude) {
        return format!("{x}");
    }
    let exponent_form = format!("{x:e}");
    match exponent_form.split_once('e') {
        Some((mantissa, exponent)) if !exponent.starts_with('-') => format!("{mantissa}e+{exponent}"),
        _ => exponent_form,
    }
}

/// Formats a non-negative finite `x` below `1e21` as JavaScript's
/// `x.toFixed(2)` does (the reference's reservation message uses it).
///
/// Both round the exact binary value; on an exact tie, which only a multiple
/// of 1/8 can hit, JavaScript picks the larger neighbour and Rust the even one.
#[cfg(target_arch = "wasm32")]
pub(crate) fn js_fixed_2(x: f64) -> String {
    crate::wasm::format_fixed_2(x)
}

/// Formats `x` as JavaScript's `x.toFixed(2)` (see the wasm32 version).
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn js_fixed_2(x: f64) -> String {
    if !x.is_finite() || x.abs() >= 1e21 {
        return js_number(x);
    }
    let is_exact_tie = (x * 8.0).fract() == 0.0 && (x * 100.0).fract().abs() == 0.5;
    if is_exact_tie {
        return format!("{:.2}", (x * 100.0 + 0.5).floor() / 100.0);
    }
    format!("{x:.2}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_integers_without_a_fraction() {
        assert_eq!(js_number(3.0), "3");
        assert_eq!(js_number(-40000.0), "-40000");
        assert_eq!(js_number(1e20), "100000000000000000000");
    }

    #[test]
    fn switches_to_exponent_form_where_javascript_does() {
        assert_eq!(js_number(1e-6), "0.000001");
        assert_eq!(js_number(1e-7), "1e-7");
        assert_eq!(js_number(1.7976931348623157e308), "1.7976931348623157e+308");
        assert_eq!(js_number(5e-324), "5e-324");
    }

    #[test]
    fn to_fixed_rounds_ties_away_from_zero_like_javascript() {
        assert_eq!(js_fixed_2(0.125), "0.13");
        assert_eq!(js_fixed_2(2.5), "2.50");
        assert_eq!(js_fixed_2(1.0 / 3.0), "0.33");
        assert_eq!(js_fixed_2(4.0), "4.00");
    }
}
