//! The probe: the shipped exports (linked from ratebound), plus one way in through each glue crate.
//! Every variant decides the same `calculateRateLimit` on a token bucket.

#[cfg(feature = "bindgen")]
use wasm_bindgen::prelude::*;

fn calculate(rate: f64, period: f64, capacity: f64, value: f64, ts: f64, now: f64, count: f64) -> f64 {
    let config = ratebound::Config::try_from(&ratebound::ConfigInput::token_bucket(rate, period).with("capacity", capacity));
    match config {
        Ok(config) => {
            let state = (!value.is_nan()).then_some(ratebound::State { value, ts });
            ratebound::calculate_rate_limit(state, &config, now, count, 0.0).value
        }
        Err(error) => -f64::from(error.number()),
    }
}

/// No glue: the same export as the shipped module's, numbers in, a number out (the baseline).
#[cfg(not(feature = "bindgen"))]
#[no_mangle]
pub extern "C" fn plain_calculate(rate: f64, period: f64, capacity: f64, value: f64, ts: f64, now: f64, count: f64) -> f64 {
    calculate(rate, period, capacity, value, ts, now, count)
}

/// wasm-bindgen alone: numbers in, a number out.
#[cfg(feature = "bindgen")]
#[wasm_bindgen]
pub fn bindgen_calculate(rate: f64, period: f64, capacity: f64, value: f64, ts: f64, now: f64, count: f64) -> f64 {
    calculate(rate, period, capacity, value, ts, now, count)
}

/// serde + serde-wasm-bindgen: the config as the caller wrote it.
#[cfg(feature = "serde")]
#[derive(serde::Deserialize)]
#[cfg_attr(feature = "tsify", derive(tsify_next::Tsify), tsify(from_wasm_abi))]
#[serde(rename_all = "camelCase")]
pub struct RawConfig {
    pub kind: String,
    pub rate: f64,
    pub period: f64,
    pub capacity: Option<f64>,
    pub max_reserved: Option<f64>,
    pub shards: Option<f64>,
    pub start: Option<f64>,
}

#[cfg(all(feature = "serde", not(feature = "tsify")))]
#[wasm_bindgen]
pub fn serde_calculate(config: JsValue, value: f64, ts: f64, now: f64, count: f64) -> Result<f64, JsValue> {
    let raw: RawConfig = serde_wasm_bindgen::from_value(config)?;
    Ok(calculate(raw.rate, raw.period, raw.capacity.unwrap_or(raw.rate), value, ts, now, count))
}

#[cfg(feature = "tsify")]
#[wasm_bindgen]
pub fn tsify_calculate(config: RawConfig, value: f64, ts: f64, now: f64, count: f64) -> f64 {
    calculate(config.rate, config.period, config.capacity.unwrap_or(config.rate), value, ts, now, count)
}

/// js-sys: the clock and the random draw read from JavaScript inside the module.
#[cfg(feature = "js-sys")]
#[wasm_bindgen]
pub fn js_sys_calculate(rate: f64, period: f64, value: f64, ts: f64, count: f64) -> f64 {
    calculate(rate, period, rate, value, ts, js_sys::Date::now(), count) + js_sys::Math::random() * 0.0
}

/// getrandom: a draw from crypto.getRandomValues.
#[cfg(feature = "getrandom")]
#[wasm_bindgen]
pub fn getrandom_draw() -> f64 {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_or(f64::NAN, |()| (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64)
}
