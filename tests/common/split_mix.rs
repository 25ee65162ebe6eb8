//! The one deterministic stream of random numbers every native test, the
//! fuzz targets and the benchmark draw from: SplitMix64 (Steele, Lea and
//! Flood, 2014), seeded, so every case replays exactly.
//!
//! Plain `core` Rust (no allocation, no `std`), so the same file compiles
//! into any test harness, native or wasm32: the suites include it as a
//! module (`tests/common/mod.rs`), and `src/`'s unit tests, `benches/` and
//! `fuzz/` by path.

/// A seeded stream: `SplitMix64(seed)`.
#[derive(Debug, Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// The next number in `[0, 1)`: the top 53 bits over 2^53.
    pub fn next_unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Fills `out` with numbers in `[0, 1)`, in order.
    pub fn fill(&mut self, out: &mut [f64]) {
        for slot in out {
            *slot = self.next_unit();
        }
    }
}
