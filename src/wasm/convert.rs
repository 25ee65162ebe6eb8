//! The one seam where JavaScript values become the core's values and back.
//! Values are converted inside function bodies, never at the ABI: every
//! exported function takes `JsValue`s, so no input can reach a trap.

use js_sys::{Array, JsString, Object, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::config::{Config, RateLimitConfig};
use crate::error::{Error, Place, Problem};
use crate::raw::{RawConfig, RawValue};
use crate::result::{RateLimitResult, ValueReport};
use crate::state::{State, StateRef, WriteInfo};
use crate::state::Transition;

// Every call into JavaScript that can throw is bound with `catch`: an
// exception that unwinds through WebAssembly frames leaks the shadow stack,
// and about a thousand of them (a hostile Proxy passed as a config, say)
// leave the instance unusable. js-sys binds these without `catch`.
#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_namespace = Object, js_name = keys)]
    fn object_keys(object: &JsValue) -> Result<Array, JsValue>;
    #[wasm_bindgen(catch, js_namespace = Array, js_name = isArray)]
    fn array_is_array(value: &JsValue) -> Result<bool, JsValue>;
    #[wasm_bindgen(catch, js_namespace = Object, js_name = getPrototypeOf)]
    fn prototype_of(value: &JsValue) -> Result<JsValue, JsValue>;
}

/// `Object.keys(value)`; an error when listing throws (a hostile Proxy).
pub(crate) fn own_keys(value: &JsValue) -> Result<Array, JsValue> {
    object_keys(value)
}

/// `Array.isArray`, false when asking throws (a revoked Proxy).
pub(crate) fn is_array(value: &JsValue) -> bool {
    array_is_array(value).unwrap_or(false)
}

/// A JS value as the core's [`RawValue`], for validation and error messages.
pub(crate) fn raw_value(value: &JsValue) -> RawValue {
    if let Some(number) = value.as_f64() {
        RawValue::Number(number)
    } else if value.is_undefined() {
        RawValue::Undefined
    } else if value.is_null() {
        RawValue::Null
    } else if let Some(flag) = value.as_bool() {
        RawValue::Bool(flag)
    } else if let Some(text) = well_formed_string(value) {
        RawValue::String(text)
    } else if value.is_string() {
        RawValue::Other("a string with a lone surrogate")
    } else if is_array(value) {
        RawValue::Other("an array")
    } else if value.is_function() {
        RawValue::Other("a function")
    } else if value.is_bigint() {
        RawValue::Other("a bigint")
    } else if value.is_symbol() {
        RawValue::Other("a symbol")
    } else {
        RawValue::Other("an object")
    }
}

/// The string, if `value` is one that converts to UTF-8 without loss: two
/// distinct JS strings must never become the same Rust string.
pub(crate) fn well_formed_string(value: &JsValue) -> Option<String> {
    let text = value.dyn_ref::<JsString>()?;
    if text.is_valid_utf16() {
        text.as_string()
    } else {
        None
    }
}

/// Whether `value` is a plain object: made by `{…}` or `Object.create(null)`,
/// not an array, a `Map`, a class instance or a primitive.
pub(crate) fn is_plain_object(value: &JsValue) -> bool {
    if !value.is_object() || is_array(value) {
        return false;
    }
    match prototype_of(value) {
        Ok(prototype) => prototype.is_null() || prototype_of(&prototype).is_ok_and(|above| above.is_null()),
        Err(_) => false,
    }
}

/// The own enumerable fields of an options object, in the order of `known`;
/// an inherited field is never read, an unknown own one is an error.
/// `undefined` reads as no options.
pub(crate) fn own_fields<const N: usize>(options: &JsValue, known: &[&str; N], wrong: impl Fn(Problem) -> Error) -> Result<[JsValue; N], Error> {
    let mut found: [JsValue; N] = std::array::from_fn(|_| JsValue::UNDEFINED);
    for (slot, value) in found.iter_mut().zip(own_field_list(options, known, wrong)?) {
        *slot = value;
    }
    Ok(found)
}

/// [`own_fields`] for a list of names known only at run time.
pub(crate) fn own_field_list(options: &JsValue, known: &[&str], wrong: impl Fn(Problem) -> Error) -> Result<Vec<JsValue>, Error> {
    let mut found = vec![JsValue::UNDEFINED; known.len()];
    if options.is_undefined() {
        return Ok(found);
    }
    let problem = |rule| Problem::must_be("options", rule, raw_value(options));
    if !options.is_object() || is_array(options) {
        return Err(wrong(problem("an object")));
    }
    let names = object_keys(options).map_err(|_| wrong(problem("a plain object (listing its fields threw)")))?;
    for name in names.iter() {
        let text = name.as_string().unwrap_or_default();
        let Some(slot) = known.iter().position(|field| *field == text) else {
            return Err(wrong(Problem::unknown(text, "option", "options", known)));
        };
        found[slot] = Reflect::get(options, &name).map_err(|_| wrong(problem("a plain object (reading a field threw)")))?;
    }
    Ok(found)
}

/// The own enumerable properties of a config object.
pub(crate) fn raw_config(config: &JsValue) -> Result<RawConfig, Problem> {
    if !config.is_object() || is_array(config) {
        return Err(Problem::must_be("config", "an object", raw_value(config)));
    }
    let listed = object_keys(config)
        .map_err(|_| Problem::must_be("config", "a plain object (listing its fields threw)", RawValue::Other("an object")))?;
    let mut fields = Vec::with_capacity(listed.length() as usize);
    for field in listed.iter() {
        let name = field.as_string().unwrap_or_default();
        let value = Reflect::get(config, &field)
            .map_err(|_| Problem::must_be(name.clone(), "readable (reading it threw)", RawValue::Other("an exception")))?;
        fields.push((name, raw_value(&value)));
    }
    Ok(RawConfig { fields })
}

/// A config object validated for the limit `name` (`None`: a config of no limit).
pub(crate) fn compile(name: Option<&str>, config: &JsValue) -> Result<Config, Error> {
    let checked = raw_config(config).and_then(|raw| Config::try_from(&raw));
    checked.map_err(|problem| match name {
        Some(name) => problem.for_limit(name),
        None => problem.unnamed(),
    })
}

/// A stored state: `null`/`undefined` for none, else `{ value, ts }` finite numbers.
pub(crate) fn state_from_js(value: &JsValue, at: impl Fn() -> Place) -> Result<Option<State>, Error> {
    if value.is_null() || value.is_undefined() {
        return Ok(None);
    }
    let corrupt = |problem| Error::CorruptState { at: at(), problem };
    if !value.is_object() {
        return Err(corrupt(Problem::must_be("state", "{ value, ts } or null", raw_value(value))));
    }
    let number = |field: &'static str| -> Result<f64, Error> {
        let found = Reflect::get(value, &field.into()).unwrap_or(JsValue::UNDEFINED);
        match found.as_f64() {
            Some(number) if number.is_finite() => Ok(number),
            _ => Err(corrupt(Problem::must_be(field, "a finite number", raw_value(&found)))),
        }
    };
    Ok(Some(State { value: number("value")?, ts: number("ts")? }))
}

/// A fresh object with `fields` set (defining properties on it cannot fail).
pub(crate) fn object(fields: &[(&str, JsValue)]) -> JsValue {
    let object = Object::new();
    for (field, value) in fields {
        let _ = Reflect::set(&object, &(*field).into(), value);
    }
    object.into()
}

pub(crate) fn state_to_js(state: State) -> JsValue {
    object(&[("value", state.value.into()), ("ts", state.ts.into())])
}

pub(crate) fn info_to_js(info: WriteInfo) -> JsValue {
    object(&[("now", info.now_ms.into()), ("fullAt", info.full_at_ms.into())])
}

/// `{ name, key, shard }`; a keyless ref has an own `key: undefined`, so a
/// store that reads `ref.key` never sees a polluted `Object.prototype.key`.
pub(crate) fn ref_to_js(at: StateRef<'_>) -> JsValue {
    let key = at.key.map_or(JsValue::UNDEFINED, JsValue::from);
    object(&[("name", at.name.into()), ("key", key), ("shard", at.shard.into())])
}

pub(crate) fn result_to_js(result: RateLimitResult) -> JsValue {
    match result.retry_after_ms() {
        Some(wait) => object(&[("ok", result.is_ok().into()), ("retryAfter", wait.into())]),
        None => object(&[("ok", JsValue::TRUE)]),
    }
}

pub(crate) fn transition_to_js(transition: Transition) -> JsValue {
    let mut fields = vec![("value", transition.value.into()), ("ts", transition.ts.into())];
    if let Some(wait) = transition.retry_after_ms {
        fields.push(("retryAfter", wait.into()));
    }
    if let Some(window_start) = transition.window_start_ms {
        fields.push(("windowStart", window_start.into()));
    }
    object(&fields)
}

pub(crate) fn config_to_js(config: &RateLimitConfig) -> JsValue {
    let (kind, rate, period, capacity, max_reserved, shards, start) = match config {
        RateLimitConfig::TokenBucket(c) => ("token bucket", c.rate, c.period, c.capacity, c.max_reserved, c.shards, None),
        RateLimitConfig::FixedWindow(c) => ("fixed window", c.rate, c.period, c.capacity, c.max_reserved, c.shards, c.start),
    };
    let mut fields = vec![("kind", kind.into()), ("rate", rate.into()), ("period", period.into())];
    let optional = [("capacity", capacity), ("maxReserved", max_reserved), ("shards", shards.map(f64::from)), ("start", start)];
    fields.extend(optional.into_iter().filter_map(|(field, value)| Some((field, value?.into()))));
    object(&fields)
}

pub(crate) fn report_to_js(report: ValueReport) -> JsValue {
    object(&[
        ("value", report.value.into()),
        ("ts", report.ts.into()),
        ("shard", report.shard.into()),
        ("config", config_to_js(&report.config)),
    ])
}

/// `ownOptions(function, options, known)`: the own fields of an options
/// object in the order of `known` (an inherited field is never read), or an
/// `INVALID_ARGUMENT` naming `function` for anything else. For the
/// TypeScript modules that take options of their own (`ratebound/preview`).
#[wasm_bindgen(js_name = ownOptions)]
pub fn own_options(function: JsValue, options: JsValue, known: Vec<String>) -> Result<Vec<JsValue>, JsValue> {
    let function = function.as_string().unwrap_or_default();
    let known: Vec<&str> = known.iter().map(String::as_str).collect();
    Ok(own_field_list(&options, &known, |problem| Error::InvalidArgument { function: function.clone().into(), problem })?)
}

/// `invalidArgument(function, field, rule, value)`: the core's error for an
/// argument of the wrong shape (`{function}: {field} must be {rule} (got …)`),
/// a `TypeError` with `code: "INVALID_ARGUMENT"`, to throw.
#[wasm_bindgen(js_name = invalidArgument)]
pub fn invalid_argument(function: JsValue, field: JsValue, rule: JsValue, value: JsValue) -> JsValue {
    let problem = Problem::must_be(field.as_string().unwrap_or_default(), rule.as_string().unwrap_or_default(), raw_value(&value));
    Error::InvalidArgument { function: function.as_string().unwrap_or_default().into(), problem }.into()
}
