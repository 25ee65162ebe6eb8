//! The failure policy of a limit (`onStoreError`), checked by the core so
//! that its errors have the core's shape: `INVALID_CONFIG` naming the limit
//! and the field for a named or inline limit, `INVALID_ARGUMENT` for the
//! `RateLimiter`'s own option. What the policy does is `ts/failure-policy.ts`'s
//! business: no decision depends on it.

use js_sys::Reflect;
use wasm_bindgen::prelude::*;

use super::convert::{is_plain_object, object, own_keys, raw_value};
use crate::error::{Error, Problem};

/// What `onStoreError` must be, as the messages say it.
const RULE: &str = "\"closed\", \"open\" or { fallback: \"memory\", maxKeys?: number }";
/// The fields of the fallback form.
const FALLBACK_FIELDS: [&str; 2] = ["fallback", "maxKeys"];
/// How many names-and-keys the fallback's MemoryStore holds unless told.
const DEFAULT_MAX_KEYS: f64 = 10_000.0;

/// `storeErrorPolicy(limit, policy)`: `policy` checked and normalised, as
/// `"closed"`, `"open"` or `{ fallback: "memory", maxKeys }` (`maxKeys`
/// filled in with 10,000). `limit` names the limit the policy belongs to;
/// `undefined` means the `RateLimiter`'s option.
///
/// # Errors
/// `INVALID_CONFIG` (for a limit) or `INVALID_ARGUMENT` (for the option),
/// naming the field: `onStoreError`, `onStoreError.fallback`,
/// `onStoreError.maxKeys` (an integer from 1 to 4294967294), or an unknown field.
#[wasm_bindgen(js_name = storeErrorPolicy, unchecked_return_type = "\"closed\" | \"open\" | { fallback: \"memory\"; maxKeys: number }")]
pub fn store_error_policy(
    #[wasm_bindgen(unchecked_param_type = "string | undefined")] limit: JsValue,
    #[wasm_bindgen(unchecked_param_type = "unknown")] policy: JsValue,
) -> Result<JsValue, JsValue> {
    let limit = limit.as_string();
    let wrong = |problem: Problem| -> JsValue {
        match &limit {
            Some(name) => problem.for_limit(name).into(),
            None => Error::InvalidArgument { function: "RateLimiter".into(), problem }.into(),
        }
    };
    let whole = || wrong(Problem::must_be("onStoreError", RULE, raw_value(&policy)));
    if let Some(text) = policy.as_string() {
        return if text == "closed" || text == "open" { Ok(policy) } else { Err(whole()) };
    }
    if !is_plain_object(&policy) {
        return Err(whole());
    }
    let names = own_keys(&policy).map_err(|_| whole())?;
    let (mut fallback, mut max_keys) = (JsValue::UNDEFINED, JsValue::UNDEFINED);
    for name in names.iter() {
        let value = Reflect::get(&policy, &name).map_err(|_| whole())?;
        match name.as_string().unwrap_or_default().as_str() {
            "fallback" => fallback = value,
            "maxKeys" => max_keys = value,
            other => return Err(wrong(Problem::unknown(format!("onStoreError.{other}"), "field", "fields", &FALLBACK_FIELDS))),
        }
    }
    if fallback.as_string().as_deref() != Some("memory") {
        return Err(wrong(Problem::must_be("onStoreError.fallback", "\"memory\"", raw_value(&fallback))));
    }
    let max_keys = match max_keys.as_f64() {
        None if max_keys.is_undefined() => DEFAULT_MAX_KEYS,
        Some(max) if max.fract() == 0.0 && (1.0..f64::from(u32::MAX)).contains(&max) => max,
        _ => {
            let problem = Problem::must_be("onStoreError.maxKeys", "an integer from 1 to 4294967294", raw_value(&max_keys));
            return Err(wrong(problem));
        }
    };
    Ok(object(&[("fallback", "memory".into()), ("maxKeys", max_keys.into())]))
}
