//! The only module that touches JavaScript. It converts values inside
//! function bodies (never at the ABI), drives the core's calls over the
//! host's store, and turns core errors into real `Error`s carrying a `code`.
//!
//! A call whose store answers synchronously completes synchronously and
//! returns its result; the first Promise a store returns turns the rest of
//! the call into a Promise.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use js_sys::{Array, Function, JsString, Object, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::{future_to_promise, JsFuture};

use crate::config::{Config, ConfigError, RateLimitConfig, RawConfig, RawValue};
use crate::decision::Request;
use crate::error::Error;
use crate::limiter::{self, BatchItem, RateLimitResult, ValueReport};
use crate::slab::Slab;
use crate::state::{State, StateRef, StateStore, WriteInfo};
use crate::transition::{calculate_rate_limit as core_calculate_rate_limit, Transition};

#[wasm_bindgen(typescript_custom_section)]
const HOST_TYPES: &'static str = r#"
/** Where one shard's state lives: the limit's name, its key (absent for the shared state) and the shard. */
export type StateRef = { name: string; key?: string; shard: number };

/**
 * What a write knows besides the state: the call's clock (`now`, ms) and the instant (`fullAt`, ms)
 * from which the state is full again, so that deleting it changes no decision (`Infinity`: never,
 * as for a fixed window with a random start). Stores may use it for a TTL or to make room.
 */
export type WriteInfo = { now: number; fullAt: number };

/**
 * The host's persistence. Either method may answer directly or with a Promise.
 * `write(ref, null)` deletes. A method that throws or rejects makes the call fail (fail closed).
 */
export interface RateLimitStore {
  read(ref: StateRef): RateLimitState | null | undefined | Promise<RateLimitState | null | undefined>;
  write(ref: StateRef, state: RateLimitState | null, info?: WriteInfo): void | Promise<void>;
  /**
   * Optional: how the host makes one limiter call a transaction. When present, every call
   * (`limit`, `check`, `limitAll`, `checkAll`, `getValue`, `reset`) runs as
   * `transaction(body)`: the host hands `body` a store for one attempt and commits what
   * `body` wrote, atomically, when it resolves; an optimistic host may run `body` again on
   * a conflict. When `body` rejects, nothing is committed and the call rejects.
   */
  transaction?<T>(body: (store: RateLimitStore) => Promise<T>): Promise<T>;
}
"#;

// Every call into JavaScript that can throw is bound with `catch`: an
// exception that unwinds through WebAssembly frames leaks the shadow stack,
// and about a thousand of them (a hostile Proxy passed as a config, say)
// leave the instance unusable. js-sys binds these two without `catch`.
#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_namespace = Object, js_name = keys)]
    fn object_keys(object: &JsValue) -> Result<Array, JsValue>;
    #[wasm_bindgen(catch, js_namespace = Array, js_name = isArray)]
    fn array_is_array(value: &JsValue) -> Result<bool, JsValue>;
}

/// `Array.isArray`, false when asking throws (a revoked Proxy).
fn is_array(value: &JsValue) -> bool {
    array_is_array(value).unwrap_or(false)
}

thread_local! {
    static KEYS: Keys = Keys::new();
}

/// Property names, made into JS strings once.
struct Keys {
    name: JsValue,
    key: JsValue,
    shard: JsValue,
    value: JsValue,
    ts: JsValue,
    ok: JsValue,
    retry_after: JsValue,
    config: JsValue,
}

impl Keys {
    fn new() -> Keys {
        Keys {
            name: "name".into(),
            key: "key".into(),
            shard: "shard".into(),
            value: "value".into(),
            ts: "ts".into(),
            ok: "ok".into(),
            retry_after: "retryAfter".into(),
            config: "config".into(),
        }
    }
}

/// `String(x)`, by the JS engine.
pub(crate) fn format_number(x: f64) -> String {
    js_sys::Number::from(x).to_string_with_radix(10).map(String::from).unwrap_or_default()
}

/// `x.toFixed(2)`, by the JS engine.
pub(crate) fn format_fixed_2(x: f64) -> String {
    js_sys::Number::from(x).to_fixed(2).map(String::from).unwrap_or_default()
}

fn set(object: &Object, key: &JsValue, value: &JsValue) {
    // Defining a property on a fresh plain object cannot fail.
    let _ = Reflect::set(object, key, value);
}

impl From<Error> for JsValue {
    fn from(error: Error) -> JsValue {
        let js_error = js_sys::Error::new(&error.to_string());
        js_error.set_name("RateboundError");
        set(&js_error, &"code".into(), &error.code().into());
        if let Some(field) = error.field() {
            set(&js_error, &"field".into(), &field.into());
        }
        js_error.into()
    }
}

/// A JS value as the core's [`RawValue`], for validation and error messages.
fn raw_value(value: &JsValue) -> RawValue {
    if value.is_undefined() {
        RawValue::Undefined
    } else if value.is_null() {
        RawValue::Null
    } else if let Some(flag) = value.as_bool() {
        RawValue::Bool(flag)
    } else if let Some(number) = value.as_f64() {
        RawValue::Number(number)
    } else if let Some(text) = well_formed_string(value) {
        RawValue::String(text)
    } else if value.is_string() {
        RawValue::Other("a string with a lone surrogate".into())
    } else if is_array(value) {
        RawValue::Other("an array".into())
    } else if value.is_function() {
        RawValue::Other("a function".into())
    } else if value.is_bigint() {
        RawValue::Other("a bigint".into())
    } else if value.is_symbol() {
        RawValue::Other("a symbol".into())
    } else {
        RawValue::Other("an object".into())
    }
}

/// The string, if `value` is one that converts to UTF-8 without loss: two
/// distinct JS strings must never become the same Rust string.
fn well_formed_string(value: &JsValue) -> Option<String> {
    let text = value.dyn_ref::<JsString>()?;
    if text.is_valid_utf16() {
        text.as_string()
    } else {
        None
    }
}

fn describe(value: &JsValue) -> String {
    raw_value(value).describe()
}

/// The own enumerable properties of a config object.
fn raw_config(config: &JsValue) -> Result<RawConfig, ConfigError> {
    let not_an_object = || ConfigError {
        field: "config".into(),
        problem: format!("config must be an object (got {})", describe(config)),
    };
    if !config.is_object() || is_array(config) {
        return Err(not_an_object());
    }
    let object: &Object = config.unchecked_ref();
    let listed = object_keys(config).map_err(|_| ConfigError {
        field: "config".into(),
        problem: "config must be a plain object (listing its fields threw)".into(),
    })?;
    let mut fields = Vec::new();
    for field in listed.iter() {
        let name = field.as_string().unwrap_or_default();
        let value = Reflect::get(object, &field).map_err(|_| ConfigError {
            problem: format!("reading {name} threw"),
            field: name.clone(),
        })?;
        fields.push((name, raw_value(&value)));
    }
    Ok(RawConfig { fields })
}

fn compile(name: &str, config: &JsValue) -> Result<Config, Error> {
    raw_config(config).and_then(|raw| Config::try_from(&raw)).map_err(|problem| problem.for_limit(name))
}

fn name_arg(name: &JsValue) -> Result<String, Error> {
    well_formed_string(name).ok_or_else(|| Error::InvalidName { got: describe(name) })
}

fn key_arg(limit: &str, key: &JsValue) -> Result<Option<String>, Error> {
    if key.is_undefined() {
        return Ok(None);
    }
    match well_formed_string(key) {
        Some(key) => Ok(Some(key)),
        None => Err(Error::request(limit, "key", format!("key must be a well-formed string or undefined (got {})", describe(key)))),
    }
}

fn count_arg(limit: &str, count: &JsValue) -> Result<f64, Error> {
    if count.is_undefined() {
        return Ok(1.0);
    }
    count
        .as_f64()
        .ok_or_else(|| Error::request(limit, "count", format!("count must be a finite number >= 0 (got {})", describe(count))))
}

fn flag_arg(limit: &str, field: &str, flag: &JsValue) -> Result<bool, Error> {
    if flag.is_undefined() {
        return Ok(false);
    }
    flag.as_bool()
        .ok_or_else(|| Error::request(limit, field, format!("{field} must be a boolean (got {})", describe(flag))))
}

fn now_arg(limit: &str, now: &JsValue) -> Result<f64, Error> {
    now.as_f64()
        .ok_or_else(|| Error::request(limit, "now", format!("now must be a finite number of ms (got {})", describe(now))))
}

/// A stored state: `null`/`undefined` for none, else `{ value, ts }` numbers.
fn state_from_js(value: &JsValue) -> Result<Option<State>, String> {
    if value.is_null() || value.is_undefined() {
        return Ok(None);
    }
    if !value.is_object() {
        return Err(format!("expected {{ value, ts }} or null (got {})", describe(value)));
    }
    let number = |key: &JsValue, field: &str| {
        let found = Reflect::get(value, key).unwrap_or(JsValue::UNDEFINED);
        found.as_f64().ok_or_else(|| format!("{field} must be a finite number (got {})", describe(&found)))
    };
    KEYS.with(|keys| Ok(Some(State { value: number(&keys.value, "value")?, ts: number(&keys.ts, "ts")? })))
}

fn state_to_js(state: State) -> JsValue {
    let object = Object::new();
    KEYS.with(|keys| {
        set(&object, &keys.value, &state.value.into());
        set(&object, &keys.ts, &state.ts.into());
    });
    object.into()
}

fn info_to_js(info: WriteInfo) -> JsValue {
    let object = Object::new();
    set(&object, &"now".into(), &info.now_ms.into());
    set(&object, &"fullAt".into(), &info.full_at_ms.into());
    object.into()
}

fn ref_to_js(at: StateRef<'_>) -> JsValue {
    let object = Object::new();
    KEYS.with(|keys| {
        set(&object, &keys.name, &at.name.into());
        if let Some(key) = at.key {
            set(&object, &keys.key, &key.into());
        }
        set(&object, &keys.shard, &at.shard.into());
    });
    object.into()
}

fn result_to_js(result: RateLimitResult) -> JsValue {
    let object = Object::new();
    KEYS.with(|keys| {
        set(&object, &keys.ok, &result.is_ok().into());
        if let Some(wait) = result.retry_after_ms() {
            set(&object, &keys.retry_after, &wait.into());
        }
    });
    object.into()
}

fn transition_to_js(transition: Transition) -> JsValue {
    let object = Object::new();
    KEYS.with(|keys| {
        set(&object, &keys.value, &transition.value.into());
        set(&object, &keys.ts, &transition.ts.into());
        if let Some(wait) = transition.retry_after_ms {
            set(&object, &keys.retry_after, &wait.into());
        }
        if let Some(window_start) = transition.window_start_ms {
            set(&object, &"windowStart".into(), &window_start.into());
        }
    });
    object.into()
}

fn config_to_js(config: &RateLimitConfig) -> JsValue {
    let object = Object::new();
    let (kind, rate, period, capacity, max_reserved, shards, start) = match config {
        RateLimitConfig::TokenBucket(c) => ("token bucket", c.rate, c.period, c.capacity, c.max_reserved, c.shards, None),
        RateLimitConfig::FixedWindow(c) => ("fixed window", c.rate, c.period, c.capacity, c.max_reserved, c.shards, c.start),
    };
    set(&object, &"kind".into(), &kind.into());
    set(&object, &"rate".into(), &rate.into());
    set(&object, &"period".into(), &period.into());
    let optional = [("capacity", capacity), ("maxReserved", max_reserved), ("shards", shards.map(f64::from)), ("start", start)];
    for (field, value) in optional {
        if let Some(value) = value {
            set(&object, &field.into(), &value.into());
        }
    }
    object.into()
}

fn report_to_js(report: ValueReport) -> JsValue {
    let object = Object::new();
    KEYS.with(|keys| {
        set(&object, &keys.value, &report.value.into());
        set(&object, &keys.ts, &report.ts.into());
        set(&object, &keys.shard, &report.shard.into());
        set(&object, &keys.config, &config_to_js(&report.config));
    });
    object.into()
}

/// Waits for `value` if it is a Promise or any other thenable.
async fn settle(value: JsValue) -> Result<JsValue, JsValue> {
    if value.has_type::<Promise>() {
        return JsFuture::from(value.unchecked_into::<Promise>()).await;
    }
    if !(value.is_object() || value.is_function()) {
        return Ok(value);
    }
    // Through Reflect (bound with `catch`): the answer may be a hostile Proxy.
    match Reflect::get(&value, &"then".into())?.is_function() {
        true => JsFuture::from(Promise::resolve(&value)).await,
        false => Ok(value),
    }
}

/// The host's store object and its two methods.
struct HostStore {
    target: JsValue,
    read: Function,
    write: Function,
}

impl HostStore {
    fn from_js(store: &JsValue) -> Result<HostStore, JsValue> {
        let method = |name: &str| -> Result<Function, JsValue> {
            Reflect::get(store, &name.into())
                .ok()
                .and_then(|method| method.dyn_into::<Function>().ok())
                .ok_or_else(|| js_sys::TypeError::new(&format!("the store must have a {name}(ref, …) method")).into())
        };
        if !store.is_object() {
            return Err(js_sys::TypeError::new(&format!("the store must be an object with read and write methods (got {})", describe(store))).into());
        }
        Ok(HostStore { target: store.clone(), read: method("read")?, write: method("write")? })
    }
}

/// A [`StateStore`] over the host's callbacks; a call owns one.
struct Host(Rc<HostStore>);

impl StateStore for Host {
    type Error = JsValue;

    async fn read(&mut self, at: StateRef<'_>) -> Result<Option<State>, JsValue> {
        let answer = settle(self.0.read.call1(&self.0.target, &ref_to_js(at))?).await?;
        state_from_js(&answer).map_err(|problem| Error::CorruptState { reference: at.to_string(), problem }.into())
    }

    async fn write(&mut self, at: StateRef<'_>, state: Option<State>, info: WriteInfo) -> Result<(), JsValue> {
        let answer = match state {
            Some(state) => self.0.write.call3(&self.0.target, &ref_to_js(at), &state_to_js(state), &info_to_js(info))?,
            None => self.0.write.call2(&self.0.target, &ref_to_js(at), &JsValue::NULL)?,
        };
        settle(answer).await?;
        Ok(())
    }
}

/// Random numbers in `[0, 1)`: the injected function's, or the runtime's
/// cryptographic source, drawn only when a decision needs one.
fn random_source(injected: Option<Function>) -> impl FnMut() -> Result<f64, Error> {
    move || draw_random(injected.as_ref())
}

/// One number in `[0, 1)` (unchecked: the core checks the range).
fn draw_random(injected: Option<&Function>) -> Result<f64, Error> {
    match injected {
        Some(random) => {
            let drawn = random
                .call0(&JsValue::UNDEFINED)
                .map_err(|_| Error::InvalidRandom { got: "an exception".into() })?;
            drawn.as_f64().ok_or_else(|| Error::InvalidRandom { got: describe(&drawn) })
        }
        None => RANDOM_POOL.with(|pool| pool.borrow_mut().next()),
    }
}

thread_local! {
    static RANDOM_POOL: std::cell::RefCell<RandomPool> = const { std::cell::RefCell::new(RandomPool { bytes: [0; 256], used: 256 }) };
}

/// Cryptographic random bytes fetched 256 at a time: one `getRandomValues`
/// per 32 numbers instead of one per number. Fetched inside a call, never at
/// module load (some runtimes forbid that).
struct RandomPool {
    bytes: [u8; 256],
    used: usize,
}

impl RandomPool {
    fn next(&mut self) -> Result<f64, Error> {
        if self.used + 8 > self.bytes.len() {
            getrandom::fill(&mut self.bytes).map_err(|error| Error::RandomUnavailable { reason: error.to_string() })?;
            self.used = 0;
        }
        let mut word = [0u8; 8];
        word.copy_from_slice(&self.bytes[self.used..self.used + 8]);
        self.used += 8;
        Ok((u64::from_le_bytes(word) >> 11) as f64 / (1u64 << 53) as f64)
    }
}

/// Runs a call: synchronously when every store answer is immediate,
/// otherwise as a Promise from the first pending answer on.
fn run<T: 'static>(
    call: impl Future<Output = Result<T, JsValue>> + 'static,
    to_js: fn(T) -> JsValue,
) -> Result<JsValue, JsValue> {
    let mut call = Box::pin(call);
    match call.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(result) => result.map(to_js),
        Poll::Pending => Ok(future_to_promise(async move { call.await.map(to_js) }).into()),
    }
}

/// Polls a call over a synchronous store once; it completes at once.
fn poll_ready<T>(call: std::pin::Pin<&mut impl Future<Output = T>>) -> Result<T, JsValue> {
    match call.poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => Ok(output),
        Poll::Pending => Err(js_sys::Error::new("a synchronous store call did not complete").into()),
    }
}

/// A MemoryStore's states, in WebAssembly memory, addressed by slot.
#[wasm_bindgen]
pub struct MemorySlab {
    inner: Rc<RefCell<Slab>>,
    max_keys: u32,
}

#[wasm_bindgen]
impl MemorySlab {
    /// An empty slab for at most `maxKeys` keys (`undefined`: no limit).
    #[wasm_bindgen(constructor)]
    pub fn new(#[wasm_bindgen(unchecked_param_type = "number | undefined")] max_keys: JsValue) -> Result<MemorySlab, JsValue> {
        let max_keys = match max_keys.as_f64() {
            None if max_keys.is_undefined() => u32::MAX,
            Some(max) if max.fract() == 0.0 && (1.0..=f64::from(u32::MAX)).contains(&max) => max as u32,
            _ => {
                return Err(Error::InvalidRequest {
                    limit: "MemoryStore".into(),
                    field: "maxKeys".into(),
                    problem: format!("maxKeys must be a positive integer (got {})", describe(&max_keys)),
                }
                .into())
            }
        };
        let slab = if max_keys == u32::MAX { Slab::unbounded() } else { Slab::new() };
        Ok(MemorySlab { inner: Rc::new(RefCell::new(slab)), max_keys })
    }

    /// Whether a new key would exceed `maxKeys`.
    #[wasm_bindgen(getter)]
    pub fn full(&self) -> Result<bool, JsValue> {
        let max_keys = self.max_keys;
        self.with(|slab| slab.live_blocks() >= max_keys)
    }

    /// Frees the blocks whose states are all full again at `now` and returns
    /// their first slots, then fails with `STORE_FULL` if no room was made.
    #[wasm_bindgen(js_name = makeRoom)]
    pub fn make_room(&self, now: f64) -> Result<Vec<u32>, JsValue> {
        let max_keys = self.max_keys;
        let (evicted, live) = self.with(|slab| (slab.evict_full(now), slab.live_blocks()))?;
        if live >= max_keys && evicted.is_empty() {
            return Err(Error::StoreFull { max_keys }.into());
        }
        Ok(evicted)
    }

    /// How many keys (blocks) the slab holds.
    #[wasm_bindgen(getter)]
    pub fn keys(&self) -> Result<u32, JsValue> {
        self.with(|slab| slab.live_blocks())
    }

    fn with<T>(&self, use_slab: impl FnOnce(&mut Slab) -> T) -> Result<T, JsValue> {
        let mut slab = self.inner.try_borrow_mut().map_err(|_| js_sys::Error::new("the MemoryStore is busy"))?;
        Ok(use_slab(&mut slab))
    }

    /// A block of `length` empty slots; returns its first slot.
    pub fn allocate(&self, length: u16) -> Result<u32, JsValue> {
        self.with(|slab| slab.allocate(length))
    }

    /// Empties and frees the block starting at `base`.
    pub fn release(&self, base: u32) -> Result<(), JsValue> {
        self.with(|slab| slab.release(base))
    }

    /// The length of the block starting at `base` (0 when none starts there).
    #[wasm_bindgen(js_name = blockLength)]
    pub fn block_length(&self, base: u32) -> Result<u16, JsValue> {
        self.with(|slab| slab.block_length(base))
    }

    /// The value in `slot`, or NaN when it holds no state.
    pub fn value(&self, slot: u32) -> Result<f64, JsValue> {
        self.with(|slab| slab.get(slot).map_or(f64::NAN, |state| state.value))
    }

    /// The `ts` in `slot` (meaningful only when `value` is not NaN).
    pub fn ts(&self, slot: u32) -> Result<f64, JsValue> {
        self.with(|slab| slab.get(slot).map_or(f64::NAN, |state| state.ts))
    }

    /// Stores `{ value, ts }` in `slot`; both must be finite. It may be
    /// evicted from `fullAt` on (`Infinity`: never).
    pub fn write(&self, slot: u32, value: f64, ts: f64, full_at: f64) -> Result<(), JsValue> {
        let state = State { value, ts }.checked(StateRef { name: "MemoryStore", key: None, shard: slot })?;
        let full_at = if full_at.is_nan() { f64::INFINITY } else { full_at };
        self.with(|slab| slab.set_until_full(slot, Some(state), full_at))
    }

    /// From when the state in `slot` may be evicted (`Infinity`: never).
    #[wasm_bindgen(js_name = fullAt)]
    pub fn full_at(&self, slot: u32) -> Result<f64, JsValue> {
        self.with(|slab| slab.full_at(slot))
    }

    /// Empties `slot`.
    pub fn clear(&self, slot: u32) -> Result<(), JsValue> {
        self.with(|slab| slab.set(slot, None))
    }

    /// Whether no slot of the block at `base` holds a state.
    #[wasm_bindgen(js_name = blockIsEmpty)]
    pub fn block_is_empty(&self, base: u32) -> Result<bool, JsValue> {
        self.with(|slab| slab.block_is_empty(base))
    }

    /// Forgets every state and block.
    #[wasm_bindgen(js_name = clearAll)]
    pub fn clear_all(&self) -> Result<(), JsValue> {
        self.with(Slab::clear)
    }

    /// How many slots hold a state.
    pub fn occupied(&self) -> Result<u32, JsValue> {
        self.with(|slab| slab.occupied())
    }
}

/// The engine behind the TypeScript `RateLimiter`: named limits compiled
/// once, the host's store, and the random source.
#[wasm_bindgen]
pub struct RateLimiterCore {
    /// The MemoryStore's slab, when the store is one: decided on without callbacks.
    slab: Option<Rc<RefCell<Slab>>>,
    /// The block the last slab decision allocated for a new key, or -1.
    allocated_base: Cell<f64>,
    /// Named limits, sorted by name.
    limits: Vec<(String, Rc<Config>)>,
    random: Option<Function>,
}

#[wasm_bindgen]
impl RateLimiterCore {
    /// Validates every limit and keeps the store.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "RateLimitStore")] store: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Record<string, RateLimitConfig>")] limits: JsValue,
        #[wasm_bindgen(unchecked_param_type = "(() => number) | undefined")] random: JsValue,
    ) -> Result<RateLimiterCore, JsValue> {
        HostStore::from_js(&store)?;
        let random = match random.dyn_into::<Function>() {
            Ok(random) => Some(random),
            Err(other) if other.is_undefined() => None,
            Err(other) => {
                return Err(js_sys::TypeError::new(&format!("random must be a function (got {})", describe(&other))).into())
            }
        };
        let mut compiled: Vec<(String, Rc<Config>)> = Vec::new();
        if !limits.is_undefined() {
            if !limits.is_object() || is_array(&limits) {
                return Err(js_sys::TypeError::new(&format!("limits must be an object of named configs (got {})", describe(&limits))).into());
            }
            let names = object_keys(&limits)
                .map_err(|_| js_sys::TypeError::new("limits must be an object of named configs (listing its names threw)"))?;
            let limits: &Object = limits.unchecked_ref();
            for name in names.iter() {
                let name_text = name_arg(&name)?;
                let config = Reflect::get(limits, &name)?;
                let config = Rc::new(compile(&name_text, &config)?);
                compiled.push((name_text, config));
            }
        }
        compiled.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Ok(RateLimiterCore { slab: None, allocated_base: Cell::new(-1.0), limits: compiled, random })
    }

    /// The named limit's config, or the inline one compiled now.
    fn resolve(&self, name: &str, inline_config: &JsValue) -> Result<Rc<Config>, Error> {
        if !inline_config.is_undefined() {
            return compile(name, inline_config).map(Rc::new);
        }
        match self.limits.binary_search_by(|(defined, _)| defined.as_str().cmp(name)) {
            Ok(index) => Ok(self.limits[index].1.clone()),
            Err(_) => Err(Error::UnknownLimit { limit: name.into() }),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn decide(
        &self,
        store: JsValue,
        name: JsValue,
        key: JsValue,
        count: JsValue,
        reserve: JsValue,
        config: JsValue,
        now: JsValue,
        write: bool,
    ) -> Result<JsValue, JsValue> {
        let name = name_arg(&name)?;
        let key = key_arg(&name, &key)?;
        let request = Request { count: count_arg(&name, &count)?, reserve: flag_arg(&name, "reserve", &reserve)? };
        let config = self.resolve(&name, &config)?;
        let now_ms = now_arg(&name, &now)?;
        let mut store = Host(Rc::new(HostStore::from_js(&store)?));
        let mut random = random_source(self.random.clone());
        run(
            async move {
                if write {
                    limiter::limit(&mut store, &name, key.as_deref(), &config, request, now_ms, &mut random).await
                } else {
                    limiter::check(&mut store, &name, key.as_deref(), &config, request, now_ms, &mut random).await
                }
            },
            result_to_js,
        )
    }

    /// Decides named limits on `slab` directly (the store is that MemoryStore).
    #[wasm_bindgen(js_name = useSlab)]
    pub fn use_slab(&mut self, slab: &MemorySlab) {
        self.slab = Some(slab.inner.clone());
    }

    /// The index of a named limit, or -1 when there is none of that name.
    #[wasm_bindgen(js_name = limitIndex)]
    pub fn limit_index(&self, name: &str) -> i32 {
        self.limits.binary_search_by(|(defined, _)| defined.as_str().cmp(name)).map_or(-1, |index| index as i32)
    }

    /// The shard count of the named limit at `index`.
    #[wasm_bindgen(js_name = shardCount)]
    pub fn shard_count(&self, index: u32) -> u32 {
        self.limits.get(index as usize).map_or(1, |(_, config)| config.shard_count)
    }

    /// The hot path for a MemoryStore: decides the named limit at `index` on
    /// the slab block at `base` (-1: the key has none yet), with numbers in and
    /// one number out. NaN: granted; `w >= 0`: granted, reserved, due in `w` ms;
    /// `-w` (or `-0`): refused, retry in `w` ms. A block allocated for a new
    /// key is left in `takeAllocatedBase()`.
    #[wasm_bindgen(js_name = decideInSlab)]
    pub fn decide_in_slab(&self, index: u32, base: f64, count: f64, reserve: bool, now: f64, write: bool) -> Result<f64, JsValue> {
        let (name, config) = self
            .limits
            .get(index as usize)
            .ok_or_else(|| Error::UnknownLimit { limit: format!("#{index}") })?;
        let slab = self.slab.as_ref().ok_or_else(|| js_sys::Error::new("this limiter's store is not a MemoryStore"))?;
        let mut slab = slab.try_borrow_mut().map_err(|_| js_sys::Error::new("a MemoryStore cannot be used from inside its own random()"))?;
        let request = Request { count, reserve };
        let mut random = || draw_random(self.random.as_ref());
        let outcome = if base >= 0.0 {
            let mut block = slab.block(base as u32);
            let call = pin!(limiter::decide_and_maybe_write(&mut block, BatchItem { name, key: None, config, request }, now, &mut random, write));
            poll_ready(call)
        } else {
            let mut block = slab.new_block(config.shard_count as u16);
            let outcome = {
                let call = pin!(limiter::decide_and_maybe_write(&mut block, BatchItem { name, key: None, config, request }, now, &mut random, write));
                poll_ready(call)
            };
            self.allocated_base.set(block.allocated().map_or(-1.0, f64::from));
            outcome
        };
        let result = outcome??;
        Ok(match result {
            RateLimitResult::Allowed { retry_after_ms: None, .. } => f64::NAN,
            RateLimitResult::Allowed { retry_after_ms: Some(wait), .. } => wait,
            RateLimitResult::Refused { retry_after_ms, .. } => -retry_after_ms,
        })
    }

    /// The block the last `decideInSlab` allocated for a new key (-1: none), once.
    #[wasm_bindgen(js_name = takeAllocatedBase)]
    pub fn take_allocated_base(&self) -> f64 {
        self.allocated_base.replace(-1.0)
    }

    /// Consumes `count` tokens if the limit allows; writes only when granted.
    /// Returns the result, or a Promise of it when the store answered with one.
    #[wasm_bindgen(unchecked_return_type = "RateLimitResult | Promise<RateLimitResult>")]
    pub fn limit(
        &self,
        #[wasm_bindgen(unchecked_param_type = "RateLimitStore")] store: JsValue,
        name: JsValue,
        key: JsValue,
        count: JsValue,
        reserve: JsValue,
        config: JsValue,
        now: JsValue,
    ) -> Result<JsValue, JsValue> {
        self.decide(store, name, key, count, reserve, config, now, true)
    }

    /// What `limit` would answer; never writes.
    #[wasm_bindgen(unchecked_return_type = "RateLimitResult | Promise<RateLimitResult>")]
    pub fn check(
        &self,
        #[wasm_bindgen(unchecked_param_type = "RateLimitStore")] store: JsValue,
        name: JsValue,
        key: JsValue,
        count: JsValue,
        reserve: JsValue,
        config: JsValue,
        now: JsValue,
    ) -> Result<JsValue, JsValue> {
        self.decide(store, name, key, count, reserve, config, now, false)
    }

    /// Decides `items` (`{ name, key?, count?, reserve?, config? }[]`) together: all or none.
    #[wasm_bindgen(js_name = limitAll, unchecked_return_type = "RateLimitResult | Promise<RateLimitResult>")]
    pub fn limit_all(
        &self,
        #[wasm_bindgen(unchecked_param_type = "RateLimitStore")] store: JsValue,
        items: JsValue,
        now: JsValue,
        write: bool,
    ) -> Result<JsValue, JsValue> {
        if !is_array(&items) {
            return Err(js_sys::TypeError::new(&format!("limitAll takes an array of limits (got {})", describe(&items))).into());
        }
        // Read through Reflect (bound with `catch`): the array may be a Proxy.
        let length = Reflect::get(&items, &"length".into())?.as_f64().unwrap_or(0.0).clamp(0.0, f64::from(u32::MAX)) as u32;
        let mut owned: Vec<(String, Option<String>, Rc<Config>, Request)> = Vec::with_capacity(length.min(1024) as usize);
        for index in 0..length {
            let item = Reflect::get_u32(&items, index)?;
            if !item.is_object() {
                return Err(js_sys::TypeError::new(&format!("each limitAll item must be an object (got {})", describe(&item))).into());
            }
            // Own enumerable fields only: an unknown one is an error, an inherited one is never read.
            let own = object_keys(&item).map_err(|_| js_sys::TypeError::new("a limitAll item must be a plain object (listing its fields threw)"))?;
            let mut listed = [JsValue::UNDEFINED, JsValue::UNDEFINED, JsValue::UNDEFINED, JsValue::UNDEFINED, JsValue::UNDEFINED];
            for field in own.iter() {
                let slot = match field.as_string().as_deref() {
                    Some("name") => 0,
                    Some("key") => 1,
                    Some("count") => 2,
                    Some("reserve") => 3,
                    Some("config") => 4,
                    other => {
                        let unknown = other.unwrap_or_default();
                        return Err(Error::request("limitAll", unknown, format!(
                            "unknown field {} of a limitAll item (the fields are name, key, count, reserve, config)",
                            crate::error::shown(unknown)
                        ))
                        .into());
                    }
                };
                listed[slot] = Reflect::get(&item, &field)?;
            }
            let [name, key, count, reserve, config] = listed;
            let name = name_arg(&name)?;
            let key = key_arg(&name, &key)?;
            let request = Request { count: count_arg(&name, &count)?, reserve: flag_arg(&name, "reserve", &reserve)? };
            let config = self.resolve(&name, &config)?;
            owned.push((name, key, config, request));
        }
        let now_ms = now_arg("limitAll", &now)?;
        let mut store = Host(Rc::new(HostStore::from_js(&store)?));
        let mut random = random_source(self.random.clone());
        run(
            async move {
                let batch: Vec<BatchItem<'_>> = owned
                    .iter()
                    .map(|(name, key, config, request)| BatchItem { name, key: key.as_deref(), config, request: *request })
                    .collect();
                limiter::limit_all(&mut store, &batch, now_ms, &mut random, write).await
            },
            result_to_js,
        )
    }

    /// The limit's current `{ value, ts, shard, config }`.
    #[wasm_bindgen(js_name = getValue, unchecked_return_type = "RateLimitValue | Promise<RateLimitValue>")]
    pub fn get_value(
        &self,
        #[wasm_bindgen(unchecked_param_type = "RateLimitStore")] store: JsValue,
        name: JsValue, key: JsValue, sample_shards: JsValue, config: JsValue, now: JsValue) -> Result<JsValue, JsValue> {
        let name = name_arg(&name)?;
        let key = key_arg(&name, &key)?;
        let sample_shards = if sample_shards.is_undefined() {
            None
        } else {
            Some(sample_shards.as_f64().ok_or_else(|| {
                Error::request(&name, "sampleShards", format!("sampleShards must be an integer >= 1 (got {})", describe(&sample_shards)))
            })?)
        };
        let config = self.resolve(&name, &config)?;
        let now_ms = now_arg(&name, &now)?;
        let mut store = Host(Rc::new(HostStore::from_js(&store)?));
        let mut random = random_source(self.random.clone());
        run(
            async move { limiter::get_value(&mut store, &name, key.as_deref(), &config, sample_shards, now_ms, &mut random).await },
            report_to_js,
        )
    }

    /// Deletes every shard's state of `name` and `key`.
    #[wasm_bindgen(unchecked_return_type = "void | Promise<void>")]
    pub fn reset(
        &self,
        #[wasm_bindgen(unchecked_param_type = "RateLimitStore")] store: JsValue,
        name: JsValue,
        key: JsValue,
        config: JsValue,
        now: JsValue,
    ) -> Result<JsValue, JsValue> {
        let name = name_arg(&name)?;
        let key = key_arg(&name, &key)?;
        let config = self.resolve(&name, &config)?;
        let now_ms = now_arg(&name, &now)?;
        let mut store = Host(Rc::new(HostStore::from_js(&store)?));
        run(async move { limiter::reset(&mut store, &name, key.as_deref(), &config, now_ms).await }, |()| JsValue::UNDEFINED)
    }
}

/// Explains what is wrong with an options object (the TypeScript layer calls
/// this only when a quick look found something): it must be an object whose
/// own enumerable fields are all among `allowed` (comma-separated), with a
/// boolean `throws`. Inherited fields are ignored, never read.
#[wasm_bindgen(js_name = checkOptions)]
pub fn check_options(name: JsValue, options: JsValue, allowed: &str) -> Result<(), JsValue> {
    let limit = well_formed_string(&name).unwrap_or_default();
    let invalid = |field: &str, problem: String| -> JsValue { Error::request(&limit, field, problem).into() };
    if !options.is_object() || is_array(&options) {
        return Err(invalid("options", format!("options must be an object (got {})", describe(&options))));
    }
    let fields = object_keys(&options).map_err(|_| invalid("options", "options must be a plain object (listing its fields threw)".into()))?;
    for field in fields.iter() {
        let field = field.as_string().unwrap_or_default();
        if !allowed.split(',').any(|known| known == field) {
            return Err(invalid(&field, format!("unknown option {} (the options are {})", crate::error::shown(&field), allowed.replace(',', ", "))));
        }
    }
    let throws = Reflect::get(&options, &"throws".into()).unwrap_or(JsValue::UNDEFINED);
    if Reflect::has(&options, &"throws".into()).unwrap_or(false) && !(throws.is_undefined() || throws.as_bool().is_some()) {
        return Err(invalid("throws", format!("throws must be a boolean (got {})", describe(&throws))));
    }
    Ok(())
}

/// `calculateRateLimit(state, config, now, count)`: the pure transition.
#[wasm_bindgen(js_name = calculateRateLimit, unchecked_return_type = "RateLimitTransition")]
pub fn calculate_rate_limit(
    #[wasm_bindgen(unchecked_param_type = "RateLimitState | null")] state: JsValue,
    #[wasm_bindgen(unchecked_param_type = "RateLimitConfig")] config: JsValue,
    #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    #[wasm_bindgen(unchecked_param_type = "number")] count: JsValue,
    #[wasm_bindgen(unchecked_param_type = "(() => number) | undefined")] random: JsValue,
) -> Result<JsValue, JsValue> {
    let config = raw_config(&config).and_then(|raw| Config::try_from(&raw)).map_err(ConfigError::unnamed)?;
    let number = |field: &str, value: &JsValue| {
        value.as_f64().ok_or_else(|| Error::InvalidRequest {
            limit: "calculateRateLimit".into(),
            field: field.into(),
            problem: format!("{field} must be a number (got {})", describe(value)),
        })
    };
    let (now, count) = (number("now", &now)?, number("count", &count)?);
    let state = state_from_js(&state).map_err(|problem| Error::CorruptState { reference: "the state passed to calculateRateLimit".into(), problem })?;
    let mut random = random_source(random.dyn_into::<Function>().ok());
    Ok(transition_to_js(checked_transition(state, &config, now, count, &mut random)?))
}

/// `calculateRateLimit`'s checks (a finite state, a finite `now`, a finite
/// `count >= 0`) and then the transition, for both of its entry points.
fn checked_transition(
    state: Option<State>,
    config: &Config,
    now: f64,
    count: f64,
    random: impl FnOnce() -> Result<f64, Error>,
) -> Result<Transition, Error> {
    let invalid = |field: &str, value: f64, rule: &str| Error::InvalidRequest {
        limit: "calculateRateLimit".into(),
        field: field.into(),
        problem: format!("{field} must be {rule} (got {})", crate::js_number(value)),
    };
    if let Some(state) = state {
        state.checked(StateRef { name: "calculateRateLimit", key: None, shard: 0 })?;
    }
    if !now.is_finite() {
        return Err(invalid("now", now, "a finite number of ms"));
    }
    if !(count.is_finite() && count >= 0.0) {
        return Err(invalid("count", count, "a finite number >= 0"));
    }
    core_calculate_rate_limit(state, config, now, count, random)
}

/// `retryAfter` plus a random delay below `maxJitter` ms, drawn from `random` when given.
#[wasm_bindgen(js_name = withJitter)]
pub fn with_jitter(
    #[wasm_bindgen(unchecked_param_type = "number")] retry_after: JsValue,
    #[wasm_bindgen(unchecked_param_type = "number")] max_jitter: JsValue,
    #[wasm_bindgen(unchecked_param_type = "(() => number) | undefined")] random: JsValue,
) -> Result<f64, JsValue> {
    let number = |field: &str, value: &JsValue| {
        value.as_f64().ok_or_else(|| {
            Error::request("withJitter", field, format!("{field} must be a finite number >= 0 (got {})", describe(value)))
        })
    };
    let (retry_after, max_jitter) = (number("retryAfter", &retry_after)?, number("maxJitter", &max_jitter)?);
    let random = random_source(random.dyn_into::<Function>().ok())()?;
    Ok(crate::jitter::with_jitter(retry_after, max_jitter, random)?)
}

/// One validated config, for calling `calculateRateLimit` with numbers only.
/// The TypeScript layer compiles each config object once and keeps it.
#[wasm_bindgen]
pub struct CompiledConfig {
    config: Config,
    /// The last transition's `ts`, `retryAfter` and `windowStart` (NaN: absent).
    last: Cell<[f64; 3]>,
    /// The value of the state the last `decide` leaves.
    next_value: Cell<f64>,
}

#[wasm_bindgen]
impl CompiledConfig {
    /// Validates `config` (errors name the field and the value).
    #[wasm_bindgen(constructor)]
    pub fn new(#[wasm_bindgen(unchecked_param_type = "RateLimitConfig")] config: JsValue) -> Result<CompiledConfig, JsValue> {
        let config = raw_config(&config).and_then(|raw| Config::try_from(&raw)).map_err(ConfigError::unnamed)?;
        Ok(CompiledConfig { config, last: Cell::new([f64::NAN; 3]), next_value: Cell::new(f64::NAN) })
    }

    /// The transition from `{ value, ts }` (or a fresh state when `has_state`
    /// is false) at `now`, taking `count`. Returns the new value; `ts`,
    /// `retryAfter` and `windowStart` are read from the getters after it.
    pub fn transition(&self, has_state: bool, value: f64, ts: f64, now: f64, count: f64) -> Result<f64, JsValue> {
        let transition = self.transition_of(has_state.then_some(State { value, ts }), now, count)?;
        self.last.set([
            transition.ts,
            transition.retry_after_ms.unwrap_or(f64::NAN),
            transition.window_start_ms.unwrap_or(f64::NAN),
        ]);
        Ok(transition.value)
    }

    /// The decision `limit` would make on one unsharded state: validation
    /// with the server's messages (`name` names the limit), then the same
    /// rule and the same checked wait. NaN: granted; `w >= 0`: granted,
    /// reserved, due in `w` ms; `-w` (or `-0`): refused. The state it leaves
    /// is read from `ts` and `nextValue`.
    pub fn decide(&self, name: &str, has_state: bool, value: f64, ts: f64, now: f64, count: f64, reserve: bool) -> Result<f64, JsValue> {
        let request = Request { count, reserve };
        crate::decision::validate_request(name, &self.config, request)?;
        let state = match has_state {
            true => State { value, ts }.checked(StateRef { name, key: None, shard: 0 })?,
            false => crate::transition::initial_state(&self.config, now, || draw_random(None))?,
        };
        if !now.is_finite() {
            return Err(Error::request(name, "now", format!("now must be a finite number of ms (got {})", crate::js_number(now))).into());
        }
        let decision = crate::decision::decide(state, &self.config, now, request);
        self.last.set([decision.next.ts, f64::NAN, f64::NAN]);
        self.next_value.set(decision.next.value);
        Ok(match (decision.ok, decision.retry_after_ms) {
            (true, None) => f64::NAN,
            (true, Some(wait)) => wait,
            (false, wait) => -wait.unwrap_or(f64::INFINITY),
        })
    }

    /// The value of the state the last `decide` leaves.
    #[wasm_bindgen(getter, js_name = nextValue)]
    pub fn next_value(&self) -> f64 {
        self.next_value.get()
    }

    /// The last transition's (or decision's) `ts`.
    #[wasm_bindgen(getter)]
    pub fn ts(&self) -> f64 {
        self.last.get()[0]
    }

    /// The last transition's `retryAfter`, or NaN when it had none.
    #[wasm_bindgen(getter, js_name = retryAfter)]
    pub fn retry_after(&self) -> f64 {
        self.last.get()[1]
    }

    /// The last transition's `windowStart`, or NaN when it had none.
    #[wasm_bindgen(getter, js_name = windowStart)]
    pub fn window_start(&self) -> f64 {
        self.last.get()[2]
    }

    /// Many transitions at one instant: `states` holds `value, ts` pairs (a
    /// NaN value is "no state"); the answer holds `value, ts, retryAfter,
    /// windowStart` for each (NaN where absent).
    #[wasm_bindgen(js_name = transitionMany)]
    pub fn transition_many(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Float64Array")] states: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] count: JsValue,
    ) -> Result<Vec<f64>, JsValue> {
        let invalid = |field: &str, problem: String| -> JsValue { Error::request("calculateRateLimits", field, problem).into() };
        let states = states
            .dyn_into::<js_sys::Float64Array>()
            .map_err(|other| invalid("states", format!("states must be a Float64Array of value, ts pairs (got {})", describe(&other))))?
            .to_vec();
        if states.len() % 2 != 0 {
            return Err(invalid("states", format!("states must hold value, ts pairs (got {} numbers)", states.len())));
        }
        let number = |field: &str, value: &JsValue| value.as_f64().ok_or_else(|| invalid(field, format!("{field} must be a number (got {})", describe(value))));
        let (now, count) = (number("now", &now)?, number("count", &count)?);
        self.transition_of(None, now, count)?; // checks now and count once for the batch
        let mut answers = Vec::with_capacity(states.len() / 2 * 4);
        for pair in states.chunks_exact(2) {
            let state = match pair[0].is_nan() {
                true => None,
                false => Some(State { value: pair[0], ts: pair[1] }.checked(StateRef { name: "calculateRateLimits", key: None, shard: 0 })?),
            };
            let transition = core_calculate_rate_limit(state, &self.config, now, count, || draw_random(None))?;
            answers.extend([
                transition.value,
                transition.ts,
                transition.retry_after_ms.unwrap_or(f64::NAN),
                transition.window_start_ms.unwrap_or(f64::NAN),
            ]);
        }
        Ok(answers)
    }

    fn transition_of(&self, state: Option<State>, now: f64, count: f64) -> Result<Transition, Error> {
        checked_transition(state, &self.config, now, count, || draw_random(None))
    }
}
