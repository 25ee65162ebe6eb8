//! Randomness at the edge: the caller's injected `random()`, or the
//! runtime's cryptographic source, drawn inside a call and never at load.

use std::cell::RefCell;

use js_sys::Function;
use wasm_bindgen::JsValue;

use crate::error::Error;
use crate::wasm::convert::raw_value;

thread_local! {
    static RANDOM_POOL: RefCell<RandomPool> = const { RefCell::new(RandomPool { bytes: [0; 256], used: 256 }) };
}

/// Cryptographic random bytes fetched 256 at a time: one `getRandomValues`
/// per 32 numbers instead of one per number.
struct RandomPool {
    bytes: [u8; 256],
    used: usize,
}

impl RandomPool {
    fn next(&mut self) -> Result<f64, Error> {
        if self.used + 8 > self.bytes.len() {
            getrandom::fill(&mut self.bytes).map_err(|_| Error::RandomUnavailable)?;
            self.used = 0;
        }
        let mut word = [0u8; 8];
        word.copy_from_slice(&self.bytes[self.used..self.used + 8]);
        self.used += 8;
        Ok((u64::from_le_bytes(word) >> 11) as f64 / (1u64 << 53) as f64)
    }
}

/// One number drawn (unchecked: the core checks the range).
pub(crate) fn draw_random(injected: Option<&Function>) -> Result<f64, Error> {
    match injected {
        Some(random) => {
            let drawn = random
                .call0(&JsValue::UNDEFINED)
                .map_err(|_| Error::InvalidRandom { got: crate::raw::RawValue::Other("an exception") })?;
            drawn.as_f64().ok_or_else(|| Error::InvalidRandom { got: raw_value(&drawn) })
        }
        None => RANDOM_POOL.with(|pool| pool.borrow_mut().next()),
    }
}

/// A source for one call: the injected function's numbers, or the pool's.
pub(crate) fn random_source(injected: Option<Function>) -> impl FnMut() -> Result<f64, Error> {
    move || draw_random(injected.as_ref())
}
