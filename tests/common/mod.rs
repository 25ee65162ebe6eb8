//! What the native suites share: the random stream, and configs built the
//! same way in each. `mod common;` in a suite brings it in; each suite uses
//! what it needs.
#![allow(dead_code)]

mod split_mix;

pub use split_mix::SplitMix64;

use ratebound::{draws_needed, Config, ConfigInput};

impl SplitMix64 {
    /// The numbers one decision on `config` draws, before it reads anything.
    pub fn draws(&mut self, config: &Config) -> Vec<f64> {
        let mut drawn = vec![0.0; draws_needed(config)];
        self.fill(&mut drawn);
        drawn
    }
}

/// A valid config; a test's own input is never invalid.
pub fn config(input: ConfigInput) -> Config {
    Config::try_from(&input).expect("a valid config")
}

/// The same numbers as a token bucket and as a fixed window whose windows
/// start at `start_ms`, with `extra` fields set on both.
pub fn both_kinds_from(rate: f64, period_ms: f64, start_ms: f64, extra: &[(&str, f64)]) -> [Config; 2] {
    [ConfigInput::token_bucket(rate, period_ms), ConfigInput::fixed_window(rate, period_ms).with("start", start_ms)]
        .map(|input| config(extra.iter().fold(input, |input, (field, value)| input.with(field, *value))))
}

/// [`both_kinds_from`] with windows from 0 (edges on multiples of `period_ms`).
pub fn both_kinds(rate: f64, period_ms: f64, extra: &[(&str, f64)]) -> [Config; 2] {
    both_kinds_from(rate, period_ms, 0.0, extra)
}
