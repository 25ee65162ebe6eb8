//! The JavaScript boundary, driven from wasm-bindgen-test in Node:
//! `cargo test --target wasm32-unknown-unknown --test wasm`.
//!
//! The store is a plain JS object whose `read` and `write` are Rust closures
//! over a JS `Map`, so the tests see exactly what crosses the boundary: refs
//! and states going out, answers, Promises and exceptions coming back.
#![cfg(target_arch = "wasm32")]

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use js_sys::{Array, JsString, Map, Object, Promise, Reflect};
use ratebound::wasm::{calculate_rate_limit, with_jitter, RateLimiterCore};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::wasm_bindgen_test;

// ---------------------------------------------------------------------------
// Harness.

fn get(target: &JsValue, field: &str) -> JsValue {
    Reflect::get(target, &field.into()).expect("a readable property")
}

fn has(target: &JsValue, field: &str) -> bool {
    Reflect::has(target, &field.into()).expect("an object")
}

fn number(target: &JsValue, field: &str) -> f64 {
    get(target, field).as_f64().unwrap_or_else(|| panic!("{field} is not a number: {:?}", get(target, field)))
}

fn text(target: &JsValue, field: &str) -> String {
    get(target, field).as_string().unwrap_or_else(|| panic!("{field} is not a string: {:?}", get(target, field)))
}

/// A plain object with these properties.
fn object(fields: &[(&str, JsValue)]) -> JsValue {
    let target = Object::new();
    for (field, value) in fields {
        Reflect::set(&target, &(*field).into(), value).expect("a plain object");
    }
    target.into()
}

fn token_bucket(rate: f64, period_ms: f64, extra: &[(&str, JsValue)]) -> JsValue {
    let mut fields = vec![("kind", "token bucket".into()), ("rate", rate.into()), ("period", period_ms.into())];
    fields.extend(extra.iter().cloned());
    object(&fields)
}

fn fixed_window(rate: f64, period_ms: f64, extra: &[(&str, JsValue)]) -> JsValue {
    let mut fields = vec![("kind", "fixed window".into()), ("rate", rate.into()), ("period", period_ms.into())];
    fields.extend(extra.iter().cloned());
    object(&fields)
}

/// How the store answers.
#[derive(Clone, Copy, PartialEq)]
enum Answers {
    /// Directly.
    AtOnce,
    /// With resolved Promises.
    Later,
    /// `read` throws.
    ReadThrows,
    /// `read` returns a rejected Promise.
    ReadRejects,
}

/// A JS store object over a `Map` from `"name|key|shard"` to `{ value, ts }`.
struct Store {
    object: JsValue,
    map: Map,
    /// Every write: the map key and the state (null for a delete).
    writes: Rc<RefCell<Vec<(String, JsValue)>>>,
    answers: Rc<Cell<Answers>>,
}

fn slot_key(at: &JsValue) -> String {
    let key = get(at, "key");
    let key = if key.is_undefined() { "-".to_string() } else { key.as_string().expect("a string key") };
    format!("{}|{key}|{}", text(at, "name"), number(at, "shard"))
}

impl Store {
    fn new() -> Store {
        let map = Map::new();
        let writes = Rc::new(RefCell::new(Vec::new()));
        let answers = Rc::new(Cell::new(Answers::AtOnce));
        let read = {
            let (map, answers) = (map.clone(), answers.clone());
            Closure::<dyn FnMut(JsValue) -> Result<JsValue, JsValue>>::new(move |at: JsValue| {
                let found = map.get(&slot_key(&at).into());
                let found = if found.is_undefined() { JsValue::NULL } else { found };
                match answers.get() {
                    Answers::AtOnce => Ok(found),
                    Answers::Later => Ok(Promise::resolve(&found).into()),
                    Answers::ReadThrows => Err(js_sys::Error::new("disk on fire").into()),
                    Answers::ReadRejects => Ok(Promise::reject(&js_sys::Error::new("disk on fire later").into()).into()),
                }
            })
        };
        let write = {
            let (map, writes, answers) = (map.clone(), writes.clone(), answers.clone());
            Closure::<dyn FnMut(JsValue, JsValue) -> JsValue>::new(move |at: JsValue, state: JsValue| {
                let key = slot_key(&at);
                if state.is_null() {
                    map.delete(&key.clone().into());
                } else {
                    // Keep a copy, as a database would, not the limiter's object.
                    let copy = object(&[("value", get(&state, "value")), ("ts", get(&state, "ts"))]);
                    map.set(&key.clone().into(), &copy);
                }
                writes.borrow_mut().push((key, state));
                match answers.get() {
                    Answers::Later => Promise::resolve(&JsValue::UNDEFINED).into(),
                    _ => JsValue::UNDEFINED,
                }
            })
        };
        let target = object(&[("read", read.into_js_value()), ("write", write.into_js_value())]);
        Store { object: target, map, writes, answers }
    }

    fn put(&self, slot: &str, state: JsValue) {
        self.map.set(&slot.into(), &state);
    }

    fn state(&self, slot: &str) -> JsValue {
        self.map.get(&slot.into())
    }

    fn write_count(&self) -> usize {
        self.writes.borrow().len()
    }
}

fn state(value: f64, ts: f64) -> JsValue {
    object(&[("value", value.into()), ("ts", ts.into())])
}

fn limits() -> JsValue {
    object(&[
        ("send", token_bucket(10.0, 60_000.0, &[("capacity", 3.0.into())])),
        ("window", fixed_window(10.0, 1_000.0, &[("start", 0.0.into())])),
        ("llm", token_bucket(40.0, 1_000.0, &[("shards", 4.0.into())])),
    ])
}

/// A random source that always returns `drawn`.
fn constant(drawn: f64) -> JsValue {
    Closure::<dyn FnMut() -> f64>::new(move || drawn).into_js_value()
}

fn limiter(store: &Store) -> Limiter {
    over(store, RateLimiterCore::new(store.object.clone(), limits(), object(&[("random", constant(0.5))])).expect("valid limits"))
}

fn over(store: &Store, core: RateLimiterCore) -> Limiter {
    Limiter { core, store: store.object.clone() }
}

/// The core and the store it is handed on every call, as the TypeScript `RateLimiter` does.
struct Limiter {
    core: RateLimiterCore,
    store: JsValue,
}

impl Limiter {
    fn limit(&self, name: JsValue, key: JsValue, count: JsValue, reserve: JsValue, config: JsValue, now: JsValue) -> Result<JsValue, JsValue> {
        self.core.limit(self.store.clone(), name, key, count, reserve, config, now)
    }

    fn check(&self, name: JsValue, key: JsValue, count: JsValue, reserve: JsValue, config: JsValue, now: JsValue) -> Result<JsValue, JsValue> {
        self.core.check(self.store.clone(), name, key, count, reserve, config, now)
    }

    fn get_value(&self, name: JsValue, key: JsValue, sample_shards: JsValue, config: JsValue, now: JsValue) -> Result<JsValue, JsValue> {
        self.core.get_value(self.store.clone(), name, key, sample_shards, config, now)
    }

    fn reset(&self, name: JsValue, key: JsValue, config: JsValue) -> Result<JsValue, JsValue> {
        self.core.reset(self.store.clone(), name, key, config, 0.0.into())
    }

    fn limit_all(&self, items: JsValue, now: JsValue, write: bool) -> Result<JsValue, JsValue> {
        self.core.limit_all(self.store.clone(), items, now, write)
    }
}

const U: JsValue = JsValue::UNDEFINED;

/// `limit(name, key, count, reserve, config, now)` that must answer at once.
fn take(core: &Limiter, name: &str, key: &str, count: f64, now_ms: f64) -> JsValue {
    core.limit(name.into(), key.into(), count.into(), U, U, now_ms.into()).expect("limit answers")
}

/// Asserts that `result` is `{ ok: true }` without `retryAfter`.
fn assert_granted(result: &JsValue) {
    assert!(result.is_object(), "a result object, got {result:?}");
    assert_eq!(get(result, "ok"), JsValue::TRUE, "{result:?}");
    assert!(!has(result, "retryAfter"), "no retryAfter when granted outright: {result:?}");
}

/// Asserts that `result` is `{ ok: false, retryAfter }`.
fn assert_refused(result: &JsValue, retry_after_ms: f64) {
    assert!(result.is_object(), "a result object, got {result:?}");
    assert_eq!(get(result, "ok"), JsValue::FALSE, "{result:?}");
    assert_eq!(number(result, "retryAfter"), retry_after_ms);
}

/// Asserts that `thrown` is a real `Error` carrying `code`, and returns its message.
fn assert_error(thrown: JsValue, code: &str) -> String {
    assert_eq!(get(&thrown, "code").as_string().as_deref(), Some(code), "{thrown:?}");
    let error = thrown.dyn_into::<js_sys::Error>().expect("an Error instance, not a string or plain object");
    String::from(error.message())
}

// ---------------------------------------------------------------------------
// Results.

#[wasm_bindgen_test]
fn limit_answers_plain_objects_with_ok_and_retry_after() {
    let store = Store::new();
    let core = limiter(&store);
    for _ in 0..3 {
        assert_granted(&take(&core, "send", "ada", 1.0, 0.0));
    }
    // 10 per minute: the next token in 6 s.
    assert_refused(&take(&core, "send", "ada", 1.0, 0.0), 6_000.0);
    assert_eq!(store.write_count(), 3);
    let stored = store.state("send|ada|0");
    assert_eq!((number(&stored, "value"), number(&stored, "ts")), (0.0, 0.0));
}

#[wasm_bindgen_test]
fn a_granted_reservation_carries_its_wait() {
    let store = Store::new();
    let core = limiter(&store);
    assert_granted(&take(&core, "window", "ada", 10.0, 250.0));
    let reserved = core.limit("window".into(), "ada".into(), 5.0.into(), JsValue::TRUE, U, 250.0.into()).unwrap();
    assert_eq!(get(&reserved, "ok"), JsValue::TRUE);
    assert_eq!(number(&reserved, "retryAfter"), 750.0);
    assert_eq!(number(&store.state("window|ada|0"), "value"), -5.0);
}

#[wasm_bindgen_test]
fn count_defaults_to_one_and_an_inline_config_needs_no_definition() {
    let store = Store::new();
    let core = limiter(&store);
    let inline = fixed_window(1.0, 1_000.0, &[("start", 0.0.into())]);
    assert_granted(&core.limit("oneOff".into(), U, U, U, inline.clone(), 10.0.into()).unwrap());
    assert_refused(&core.limit("oneOff".into(), U, U, U, inline, 10.0.into()).unwrap(), 990.0);
    assert_eq!(number(&store.state("oneOff|-|0"), "value"), 0.0);
}

#[wasm_bindgen_test]
fn check_answers_like_limit_and_writes_nothing() {
    let store = Store::new();
    let core = limiter(&store);
    let checked = core.check("send".into(), "ada".into(), 3.0.into(), U, U, 0.0.into()).unwrap();
    assert_granted(&checked);
    assert_eq!((store.write_count(), store.map.size()), (0, 0));
    store.put("send|ada|0", state(0.0, 0.0));
    assert_refused(&core.check("send".into(), "ada".into(), 1.0.into(), U, U, 3_000.0.into()).unwrap(), 3_000.0);
    assert_eq!(store.write_count(), 0);
}

#[wasm_bindgen_test]
fn reset_deletes_every_shard_of_the_key() {
    let store = Store::new();
    let core = limiter(&store);
    for shard in 0..4 {
        store.put(&format!("llm|ada|{shard}"), state(1.0, 0.0));
    }
    store.put("llm|bob|2", state(1.0, 0.0));
    assert!(core.reset("llm".into(), "ada".into(), U).unwrap().is_undefined());
    let deletes: Vec<String> = store.writes.borrow().iter().filter(|(_, state)| state.is_null()).map(|(key, _)| key.clone()).collect();
    assert_eq!(deletes, ["llm|ada|0", "llm|ada|1", "llm|ada|2", "llm|ada|3"]);
    assert_eq!(store.map.size(), 1);
    assert!(!store.state("llm|bob|2").is_undefined());
}

#[wasm_bindgen_test]
fn get_value_reports_value_ts_shard_and_the_filled_in_config() {
    let store = Store::new();
    let core = limiter(&store);
    store.put("send|ada|0", state(1.5, 1_100.0));
    let report = core.get_value("send".into(), "ada".into(), U, U, 1_400.0.into()).unwrap();
    assert_eq!((number(&report, "value"), number(&report, "ts"), number(&report, "shard")), (1.5, 1_100.0, 0.0));
    let config = get(&report, "config");
    assert_eq!(text(&config, "kind"), "token bucket");
    assert_eq!((number(&config, "rate"), number(&config, "period")), (10.0, 60_000.0));
    assert_eq!((number(&config, "capacity"), number(&config, "shards")), (3.0, 1.0));
    // Sharded, all four sampled: shards 1–3 are missing (full: 10 each), shard 0 holds 2.
    store.put("llm|ada|0", state(2.0, 500.0));
    let report = core.get_value("llm".into(), "ada".into(), 4.0.into(), U, 500.0.into()).unwrap();
    assert_eq!(number(&report, "value"), 32.0);
    assert_eq!(number(&get(&report, "config"), "shards"), 4.0);
    assert_eq!(store.write_count(), 0);
}

#[wasm_bindgen_test]
fn limit_all_consumes_every_limit_or_none() {
    let store = Store::new();
    let core = limiter(&store);
    store.put("window|ada|0", state(5.0, 0.0));
    let item = |name: &str, count: f64| object(&[("name", name.into()), ("key", "ada".into()), ("count", count.into())]);
    let refused = core.limit_all(Array::of2(&item("send", 1.0), &item("window", 10.0)).into(), 0.0.into(), true).unwrap();
    assert_refused(&refused, 1_000.0);
    assert_eq!(store.write_count(), 0);
    // Without writing (checkAll): granted, nothing written.
    let checked = core.limit_all(Array::of2(&item("window", 5.0), &item("send", 3.0)).into(), 0.0.into(), false).unwrap();
    assert_granted(&checked);
    assert_eq!(store.write_count(), 0);
    let granted = core.limit_all(Array::of2(&item("window", 5.0), &item("send", 3.0)).into(), 0.0.into(), true).unwrap();
    assert_granted(&granted);
    assert_eq!(number(&store.state("window|ada|0"), "value"), 0.0);
    assert_eq!(number(&store.state("send|ada|0"), "value"), 0.0);
}

#[wasm_bindgen_test]
fn calculate_rate_limit_returns_the_transition_object() {
    let config = token_bucket(10.0, 60_000.0, &[]);
    let next = calculate_rate_limit(state(0.0, 0.0), config, 3_000.0.into(), 1.0.into(), U).unwrap();
    assert_eq!((number(&next, "value"), number(&next, "ts"), number(&next, "retryAfter")), (-0.5, 3_000.0, 3_000.0));
    assert!(!has(&next, "windowStart"));
    let window = fixed_window(10.0, 1_000.0, &[]);
    // No state and no start: the window began floor(0.25 × 1000) ms ago.
    let fresh = calculate_rate_limit(JsValue::NULL, window.clone(), 10_000.0.into(), 0.0.into(), constant(0.25)).unwrap();
    assert_eq!((number(&fresh, "value"), number(&fresh, "ts"), number(&fresh, "windowStart")), (10.0, 9_750.0, 9_750.0));
    assert!(!has(&fresh, "retryAfter"));
    let thrown = calculate_rate_limit(JsValue::NULL, token_bucket(-1.0, 1_000.0, &[]), 0.0.into(), 0.0.into(), U).unwrap_err();
    assert_eq!(assert_error(thrown, "INVALID_CONFIG"), "Invalid rate limit config: rate must be a positive finite number (got -1)");
    let thrown = calculate_rate_limit(JsValue::NULL, window, 0.0.into(), (-1.0).into(), U).unwrap_err();
    assert_error(thrown, "INVALID_REQUEST");
}

#[wasm_bindgen_test]
fn with_jitter_adds_a_random_share_of_the_maximum() {
    assert_eq!(with_jitter(1_000.0.into(), 500.0.into(), constant(0.5)).unwrap(), 1_250.0);
    for _ in 0..20 {
        let jittered = with_jitter(1_000.0.into(), 500.0.into(), U).unwrap();
        assert!((1_000.0..1_500.0).contains(&jittered), "{jittered}");
    }
    assert_error(with_jitter((-1.0).into(), 500.0.into(), U).unwrap_err(), "INVALID_REQUEST");
    assert_error(with_jitter(1_000.0.into(), 500.0.into(), constant(1.0)).unwrap_err(), "INVALID_RANDOM");
}

// ---------------------------------------------------------------------------
// Errors.

#[wasm_bindgen_test]
fn an_invalid_config_throws_an_error_with_code_and_field() {
    let store = Store::new();
    let bad = object(&[("bad", token_bucket(-1.0, 1_000.0, &[]))]);
    let thrown = match RateLimiterCore::new(store.object.clone(), bad, U) {
        Err(thrown) => thrown,
        Ok(_) => panic!("a negative rate must be refused"),
    };
    assert_eq!(text(&thrown, "field"), "rate");
    assert_eq!(assert_error(thrown, "INVALID_CONFIG"), "Rate limit \"bad\": rate must be a positive finite number (got -1)");
    let unknown_field = object(&[("x", token_bucket(1.0, 1_000.0, &[("applyUpdates", "later".into())]))]);
    let thrown = RateLimiterCore::new(store.object.clone(), unknown_field, U).err().expect("an unknown field is refused");
    assert!(assert_error(thrown, "INVALID_CONFIG").contains("unknown field \"applyUpdates\""));
}

#[wasm_bindgen_test]
fn a_count_that_can_never_succeed_throws_count_exceeds_max() {
    let store = Store::new();
    let core = limiter(&store);
    let thrown = core.limit("send".into(), "ada".into(), 4.0.into(), U, U, 0.0.into()).unwrap_err();
    assert_eq!(text(&thrown, "field"), "count");
    assert_eq!(assert_error(thrown, "COUNT_EXCEEDS_MAX"), "Rate limit send count 4 exceeds 3.");
    let thrown = core.limit("llm".into(), "ada".into(), 21.0.into(), U, U, 0.0.into()).unwrap_err();
    assert_eq!(assert_error(thrown, "COUNT_EXCEEDS_MAX"), "Rate limit llm count 21 exceeds 20 per 4 shards.");
    let reserving = token_bucket(10.0, 1_000.0, &[("maxReserved", 5.0.into())]);
    let thrown = core.limit("r".into(), U, 20.0.into(), JsValue::TRUE, reserving, 0.0.into()).unwrap_err();
    assert_eq!(assert_error(thrown, "COUNT_EXCEEDS_MAX"), "Rate limit r count 20 exceeds 15.00.");
    let thrown = core.limit("send".into(), "ada".into(), (-1.0).into(), U, U, 0.0.into()).unwrap_err();
    assert_error(thrown, "INVALID_REQUEST");
    let thrown = core.limit("send".into(), "ada".into(), "1".into(), U, U, 0.0.into()).unwrap_err();
    assert_error(thrown, "INVALID_REQUEST");
    assert_eq!(store.write_count(), 0);
}

#[wasm_bindgen_test]
fn an_unknown_limit_throws_naming_it() {
    let store = Store::new();
    let core = limiter(&store);
    let thrown = core.limit("sendMesage".into(), U, U, U, U, 0.0.into()).unwrap_err();
    let message = assert_error(thrown, "UNKNOWN_LIMIT");
    assert!(message.contains("\"sendMesage\""), "{message}");
    assert_error(core.get_value("nope".into(), U, U, U, 0.0.into()).unwrap_err(), "UNKNOWN_LIMIT");
    assert_error(core.reset("nope".into(), U, U).unwrap_err(), "UNKNOWN_LIMIT");
}

#[wasm_bindgen_test]
fn a_corrupt_stored_state_throws_naming_the_ref() {
    let store = Store::new();
    let core = limiter(&store);
    store.put("send|ada|0", object(&[("value", "3".into()), ("ts", 0.0.into())]));
    let message = assert_error(take_error(&core, "ada"), "CORRUPT_STATE");
    assert!(message.contains("rate limit \"send\" key \"ada\" shard 0"), "{message}");
    assert!(message.contains("value must be a finite number (got \"3\")"), "{message}");
    store.put("send|ada|0", state(f64::NAN, 0.0));
    assert!(assert_error(take_error(&core, "ada"), "CORRUPT_STATE").contains("(got NaN)"));
    store.put("send|ada|0", "full".into());
    assert_error(take_error(&core, "ada"), "CORRUPT_STATE");
    assert_eq!(store.write_count(), 0);
}

fn take_error(core: &Limiter, key: &str) -> JsValue {
    core.limit("send".into(), key.into(), U, U, U, 0.0.into()).expect_err("the call fails")
}

#[wasm_bindgen_test]
fn a_key_with_a_lone_surrogate_is_rejected() {
    let store = Store::new();
    let core = limiter(&store);
    // "a\uD800": two JS strings that would become the same Rust string if it were accepted lossily.
    let key = JsString::from("a").concat(&JsString::from_char_code1(0xD800));
    let thrown = core.limit("send".into(), key.clone().into(), U, U, U, 0.0.into()).unwrap_err();
    assert_eq!(text(&thrown, "field"), "key");
    assert_error(thrown, "INVALID_REQUEST");
    let name = JsString::from_char_code1(0xDC00);
    assert_error(core.limit(name.into(), U, U, U, U, 0.0.into()).unwrap_err(), "INVALID_REQUEST");
    assert_eq!((store.write_count(), store.map.size()), (0, 0));
}

#[wasm_bindgen_test]
fn a_random_source_returning_one_throws_invalid_random() {
    let store = Store::new();
    for drawn in [1.0, f64::NAN, -0.5] {
        let core = over(&store, RateLimiterCore::new(store.object.clone(), limits(), object(&[("random", constant(drawn))])).unwrap());
        let thrown = core.limit("llm".into(), "ada".into(), U, U, U, 0.0.into()).unwrap_err();
        assert_error(thrown, "INVALID_RANDOM");
    }
    let not_a_number = Closure::<dyn FnMut() -> JsValue>::new(|| JsValue::from_str("0.5")).into_js_value();
    let core = over(&store, RateLimiterCore::new(store.object.clone(), limits(), object(&[("random", not_a_number)])).unwrap());
    assert_error(core.limit("llm".into(), "ada".into(), U, U, U, 0.0.into()).unwrap_err(), "INVALID_RANDOM");
    assert_eq!(store.write_count(), 0);
}

#[wasm_bindgen_test]
fn a_store_whose_read_throws_fails_the_call_with_that_error() {
    let store = Store::new();
    let core = limiter(&store);
    store.answers.set(Answers::ReadThrows);
    let thrown = core.limit("send".into(), "ada".into(), U, U, U, 0.0.into()).unwrap_err();
    let error = thrown.dyn_into::<js_sys::Error>().expect("the store's own Error");
    assert_eq!(String::from(error.message()), "disk on fire");
    assert!(core.get_value("send".into(), "ada".into(), U, U, 0.0.into()).is_err());
    assert_eq!(store.write_count(), 0);
}

#[wasm_bindgen_test]
fn a_store_without_read_and_write_is_a_type_error() {
    let thrown = RateLimiterCore::new(object(&[("read", constant(0.0))]), limits(), U).err().expect("no write method");
    assert!(thrown.is_instance_of::<js_sys::TypeError>(), "{thrown:?}");
}

#[wasm_bindgen_test]
fn the_same_instance_still_decides_correctly_after_errors() {
    let store = Store::new();
    let core = limiter(&store);
    assert_granted(&take(&core, "send", "ada", 1.0, 0.0));
    // A string of failures of every kind…
    assert!(core.limit("send".into(), "ada".into(), 4.0.into(), U, U, 0.0.into()).is_err());
    assert!(core.limit("nope".into(), U, U, U, U, 0.0.into()).is_err());
    assert!(core.limit("send".into(), JsString::from_char_code1(0xD800).into(), U, U, U, 0.0.into()).is_err());
    assert!(core.limit("send".into(), "ada".into(), U, U, U, f64::NAN.into()).is_err());
    store.answers.set(Answers::ReadThrows);
    assert!(core.limit("send".into(), "ada".into(), U, U, U, 0.0.into()).is_err());
    store.answers.set(Answers::AtOnce);
    store.put("send|bob|0", state(f64::INFINITY, 0.0));
    assert!(core.limit("send".into(), "bob".into(), U, U, U, 0.0.into()).is_err());
    // …consumed nothing: two of the three tokens are still there, then the wait is exact.
    assert_granted(&take(&core, "send", "ada", 2.0, 0.0));
    assert_refused(&take(&core, "send", "ada", 1.0, 0.0), 6_000.0);
    assert_granted(&take(&core, "send", "ada", 1.0, 6_000.0));
    assert_eq!(store.write_count(), 3);
}

// ---------------------------------------------------------------------------
// Asynchronous stores.

async fn settle(answer: JsValue) -> Result<JsValue, JsValue> {
    let promise = answer.dyn_into::<Promise>().expect("an async store makes the call a Promise");
    JsFuture::from(promise).await
}

#[wasm_bindgen_test]
async fn an_async_store_yields_a_promise_of_the_result() {
    let store = Store::new();
    let core = limiter(&store);
    store.answers.set(Answers::Later);
    for _ in 0..3 {
        let answer = core.limit("send".into(), "ada".into(), U, U, U, 0.0.into()).unwrap();
        assert_granted(&settle(answer).await.unwrap());
    }
    let answer = core.limit("send".into(), "ada".into(), U, U, U, 0.0.into()).unwrap();
    assert_refused(&settle(answer).await.unwrap(), 6_000.0);
    assert_eq!(number(&store.state("send|ada|0"), "value"), 0.0);
    // The other calls too.
    let answer = core.check("send".into(), "ada".into(), U, U, U, 6_000.0.into()).unwrap();
    assert_granted(&settle(answer).await.unwrap());
    let report = settle(core.get_value("send".into(), "ada".into(), U, U, 6_000.0.into()).unwrap()).await.unwrap();
    assert_eq!(number(&report, "value"), 0.0);
    assert!(settle(core.reset("send".into(), "ada".into(), U).unwrap()).await.unwrap().is_undefined());
    assert!(store.state("send|ada|0").is_undefined());
}

#[wasm_bindgen_test]
async fn an_async_sharded_decision_reads_and_writes_two_shards() {
    let store = Store::new();
    let core = limiter(&store);
    store.answers.set(Answers::Later);
    // 15 is more than one shard's 10: two fresh shards serve it together.
    let answer = core.limit("llm".into(), "ada".into(), 15.0.into(), U, U, 0.0.into()).unwrap();
    assert_granted(&settle(answer).await.unwrap());
    let written: Vec<f64> = store.writes.borrow().iter().map(|(_, state)| number(state, "value")).collect();
    assert_eq!(written, [2.5, 2.5]);
}

#[wasm_bindgen_test]
async fn an_async_store_that_rejects_rejects_the_call() {
    let store = Store::new();
    let core = limiter(&store);
    store.answers.set(Answers::ReadRejects);
    let answer = core.limit("send".into(), "ada".into(), U, U, U, 0.0.into()).unwrap();
    let thrown = settle(answer).await.expect_err("the Promise rejects");
    let error = thrown.dyn_into::<js_sys::Error>().expect("the store's own Error");
    assert_eq!(String::from(error.message()), "disk on fire later");
    assert_eq!(store.write_count(), 0);
    // A core error after an async read also rejects, with a real Error and its code.
    store.answers.set(Answers::Later);
    store.put("send|ada|0", state(f64::NAN, 0.0));
    let answer = core.limit("send".into(), "ada".into(), U, U, U, 0.0.into()).unwrap();
    assert_error(settle(answer).await.expect_err("a corrupt state rejects"), "CORRUPT_STATE");
    // And the instance goes on deciding.
    store.put("send|ada|0", state(1.0, 0.0));
    let answer = core.limit("send".into(), "ada".into(), U, U, U, 0.0.into()).unwrap();
    assert_granted(&settle(answer).await.unwrap());
    let answer = core.limit("send".into(), "ada".into(), U, U, U, 0.0.into()).unwrap();
    assert_refused(&settle(answer).await.unwrap(), 6_000.0);
}
