//! Core errors as real JavaScript `Error`s carrying `code` (and `field`),
//! with numbers printed by the JS engine: no Rust float formatter ships.

use js_sys::Reflect;
use wasm_bindgen::JsValue;

use crate::error::Error;
use crate::message::NumberFormat;

/// The JS engine's `String(x)` and `x.toFixed(2)`.
pub(crate) struct JsNumbers;

impl NumberFormat for JsNumbers {
    fn number(&self, x: f64) -> String {
        js_sys::Number::from(x).to_string_with_radix(10).map(String::from).unwrap_or_default()
    }

    fn fixed_2(&self, x: f64) -> String {
        js_sys::Number::from(x).to_fixed(2).map(String::from).unwrap_or_default()
    }
}

impl From<Error> for JsValue {
    fn from(error: Error) -> JsValue {
        let message = error.message(&JsNumbers);
        // Shapes of arguments are TypeErrors, as JavaScript's own are; both carry a code.
        let js_error: js_sys::Error = match error {
            Error::InvalidArgument { .. } => js_sys::TypeError::new(&message).into(),
            _ => {
                let js_error = js_sys::Error::new(&message);
                js_error.set_name("RateboundError");
                js_error
            }
        };
        // Defining properties on a fresh Error cannot fail.
        let _ = Reflect::set(&js_error, &"code".into(), &error.code().into());
        if let Some(field) = error.field() {
            let _ = Reflect::set(&js_error, &"field".into(), &field.into());
        }
        js_error.into()
    }
}
