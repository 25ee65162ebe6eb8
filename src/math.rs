//! `floor`, `ceil` and `fract` exactly as IEEE 754 (and so JavaScript's
//! `Math.floor`, `Math.ceil`) define them, without `std`: the WebAssembly
//! build has no standard library (no allocator, no formatter), and `core`
//! has no rounding. Integers below 2^52 in magnitude convert exactly, and
//! every number from 2^52 up is an integer already.

/// Below this magnitude a number may have a fraction; from it on, none has.
const ALL_INTEGERS_FROM: f64 = 4_503_599_627_370_496.0;

/// Rounds toward zero (`trunc`); NaN, the infinities and `-0` pass unchanged.
pub(crate) fn trunc(x: f64) -> f64 {
    // NaN, the infinities, and every number from 2^52 on pass unchanged.
    if x.is_nan() || x.abs() >= ALL_INTEGERS_FROM || x == 0.0 {
        return x;
    }
    let truncated = x as i64 as f64;
    // Keep the sign of a result of zero: trunc(-0.5) is -0.
    if truncated == 0.0 && x < 0.0 { -0.0 } else { truncated }
}

/// The greatest integer `<= x`.
pub(crate) fn floor(x: f64) -> f64 {
    let truncated = trunc(x);
    if truncated > x { truncated - 1.0 } else { truncated }
}

/// The least integer `>= x`.
pub(crate) fn ceil(x: f64) -> f64 {
    let truncated = trunc(x);
    if truncated < x { truncated + 1.0 } else { truncated }
}

/// `x - trunc(x)`, as Rust's `f64::fract`.
pub(crate) fn fract(x: f64) -> f64 {
    x - trunc(x)
}

/// The test suites' random stream, one file for every harness.
#[cfg(test)]
#[path = "../tests/common/split_mix.rs"]
#[allow(dead_code)]
mod split_mix;

#[cfg(test)]
mod tests {
    use super::*;
    use split_mix::SplitMix64;

    fn same(a: f64, b: f64) -> bool {
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
    }

    #[test]
    fn rounding_equals_the_standard_library_bit_for_bit() {
        let mut cases = vec![
            0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 1.5, -1.5, 2.5, -2.5, 0.49999999999999994, -0.49999999999999994,
            ALL_INTEGERS_FROM, -ALL_INTEGERS_FROM, ALL_INTEGERS_FROM - 0.5, -(ALL_INTEGERS_FROM - 0.5),
            f64::MAX, f64::MIN, f64::MIN_POSITIVE, -f64::MIN_POSITIVE, 5e-324, -5e-324, f64::INFINITY, f64::NEG_INFINITY, f64::NAN,
            9_007_199_254_740_993.0, 1e300, -1e300, 123_456.789, -123_456.789,
        ];
        let mut random = SplitMix64(0x9e37_79b9_7f4a_7c15);
        for _ in 0..200_000 {
            let bits = random.next_u64();
            cases.push(f64::from_bits(bits));
            cases.push((bits >> 11) as f64 / (1u64 << 40) as f64 - 4096.0);
        }
        for x in cases {
            assert!(same(floor(x), x.floor()), "floor({x:e})");
            assert!(same(ceil(x), x.ceil()), "ceil({x:e})");
            assert!(same(trunc(x), x.trunc()), "trunc({x:e})");
            assert!(same(fract(x), x.fract()), "fract({x:e})");
        }
    }
}
