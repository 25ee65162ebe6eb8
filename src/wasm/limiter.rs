//! `RateLimiterCore`: the engine behind the TypeScript `RateLimiter`. Named
//! limits are compiled once; each call gets the store it runs against.

use std::cell::Cell;
use std::future::Future;
use std::pin::pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use js_sys::{Function, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::raw::RawValue;

use crate::batch::limit_all;
use crate::config::Config;
use crate::error::{Error, Problem, Says};
use crate::limiter::{decide_and_maybe_write, BatchItem};
use crate::request::{self, Request};
use crate::result::RateLimitResult;
use crate::value::{get_value, reset};
use crate::wasm::convert::{compile, is_array, is_plain_object, own_fields, own_keys, raw_value, report_to_js, result_to_js};
use crate::wasm::host::{run, Backend, HostStore, SlabBlock};
use crate::wasm::random::random_source;
use crate::wasm::slab::MemorySlab;

/// The engine behind the TypeScript `RateLimiter`: named limits compiled
/// once and the random source; the store comes with each call.
#[wasm_bindgen]
pub struct RateLimiterCore {
    /// Named limits, sorted by name.
    limits: Vec<(String, Rc<Config>)>,
    pub(super) random: Option<Function>,
    /// The MemoryStore's slab, when the store is one: decided on without callbacks.
    slab: Option<MemorySlabRef>,
    /// The block the last slab decision allocated for a new key, or -1.
    allocated_base: Cell<f64>,
}

type MemorySlabRef = Rc<std::cell::RefCell<crate::slab::Slab>>;

/// A `limit` call's checked arguments.
pub(super) struct LimitCall {
    pub(super) name: String,
    pub(super) key: Option<String>,
    pub(super) request: Request,
    pub(super) config: Rc<Config>,
    pub(super) now_ms: f64,
}

/// `onStoreError` and `timeout` are the TypeScript layer's (ts/failure-policy.ts), which reads and removes them first.
const OPTIONS: [&str; 4] = ["now", "random", "onStoreError", "timeout"];

fn wrong_argument(problem: Problem) -> Error {
    Error::InvalidArgument { function: "RateLimiter".into(), problem }
}

fn function_or_undefined(field: &str, value: JsValue) -> Result<Option<Function>, Error> {
    match value.dyn_into::<Function>() {
        Ok(function) => Ok(Some(function)),
        Err(other) if other.is_undefined() => Ok(None),
        Err(other) => Err(wrong_argument(Problem::must_be(field, "a function", raw_value(&other)))),
    }
}

#[wasm_bindgen]
impl RateLimiterCore {
    /// Validates the store's shape, every limit, and the options (`now`, `random`: own fields only).
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "RateLimitStore")] store: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Record<string, RateLimitConfig> | undefined")] limits: JsValue,
        #[wasm_bindgen(unchecked_param_type = "RateLimiterOptions | undefined")] options: JsValue,
    ) -> Result<RateLimiterCore, JsValue> {
        HostStore::from_js(&store)?;
        let [now, random, _, _] = own_fields(&options, &OPTIONS, wrong_argument)?;
        function_or_undefined("now", now)?;
        let random = function_or_undefined("random", random)?;
        let mut compiled: Vec<(String, Rc<Config>)> = Vec::new();
        if !limits.is_undefined() {
            if !is_plain_object(&limits) {
                return Err(wrong_argument(Problem::must_be("limits", "a plain object of named configs", raw_value(&limits))).into());
            }
            let names = own_keys(&limits).map_err(|_| wrong_argument(Problem::must_be("limits", "a plain object (listing its names threw)", RawValue::Other("an object"))))?;
            for name in names.iter() {
                let name_text = request::name(raw_value(&name))?;
                let config = Rc::new(compile(Some(&name_text), &Reflect::get(&limits, &name)?)?);
                // Sorted as it is built: no sort routine in the download.
                let at = compiled.binary_search_by(|(defined, _)| defined.as_str().cmp(&name_text)).unwrap_or_else(|at| at);
                compiled.insert(at, (name_text, config));
            }
        }
        Ok(RateLimiterCore { limits: compiled, random, slab: None, allocated_base: Cell::new(-1.0) })
    }

    /// The named limit's config, or the inline one compiled now.
    pub(super) fn resolve(&self, name: &str, inline_config: &JsValue) -> Result<Rc<Config>, Error> {
        if !inline_config.is_undefined() {
            return compile(Some(name), inline_config).map(Rc::new);
        }
        match self.limits.binary_search_by(|(defined, _)| defined.as_str().cmp(name)) {
            Ok(index) => Ok(self.limits[index].1.clone()),
            Err(_) => Err(Error::UnknownLimit { limit: name.into() }),
        }
    }

    /// A `limit`/`check` call's arguments, each checked once: name, key, request, config, now.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn call(&self, name: JsValue, key: JsValue, count: JsValue, reserve: JsValue, config: JsValue, now: JsValue) -> Result<LimitCall, JsValue> {
        let name = request::name(raw_value(&name))?;
        let key = request::key(&name, raw_value(&key))?;
        let request = Request { count: request::count(&name, raw_value(&count))?, reserve: request::flag(&name, "reserve", raw_value(&reserve))? };
        let config = self.resolve(&name, &config)?;
        let now_ms = request::now(&name, raw_value(&now))?;
        Ok(LimitCall { name, key, request, config, now_ms })
    }

    #[allow(clippy::too_many_arguments)]
    fn decide(&self, store: JsValue, name: JsValue, key: JsValue, count: JsValue, reserve: JsValue, config: JsValue, now: JsValue, write: bool) -> Result<JsValue, JsValue> {
        let call = self.call(name, key, count, reserve, config, now)?;
        self.decide_call(store, call, write)
    }

    /// `limit` (when `write`) or `check`, on checked arguments.
    pub(super) fn decide_call(&self, store: JsValue, call: LimitCall, write: bool) -> Result<JsValue, JsValue> {
        let LimitCall { name, key, request, config, now_ms } = call;
        let mut store = Backend::Host(Rc::new(HostStore::from_js(&store)?));
        let mut random = random_source(self.random.clone());
        run(
            async move {
                let item = BatchItem { name: &name, key: key.as_deref(), config: &config, request };
                decide_and_maybe_write(&mut store, item, now_ms, &mut random, write).await
            },
            result_to_js,
        )
    }

    /// Consumes `count` tokens if the limit allows; writes only when granted.
    /// Returns the result, or a Promise of it when the store answered with one.
    #[wasm_bindgen(unchecked_return_type = "RateLimitResult | Promise<RateLimitResult>")]
    #[allow(clippy::too_many_arguments)]
    pub fn limit(&self, #[wasm_bindgen(unchecked_param_type = "RateLimitStore")] store: JsValue, name: JsValue, key: JsValue, count: JsValue, reserve: JsValue, config: JsValue, now: JsValue) -> Result<JsValue, JsValue> {
        self.decide(store, name, key, count, reserve, config, now, true)
    }

    /// What `limit` would answer; never writes.
    #[wasm_bindgen(unchecked_return_type = "RateLimitResult | Promise<RateLimitResult>")]
    #[allow(clippy::too_many_arguments)]
    pub fn check(&self, #[wasm_bindgen(unchecked_param_type = "RateLimitStore")] store: JsValue, name: JsValue, key: JsValue, count: JsValue, reserve: JsValue, config: JsValue, now: JsValue) -> Result<JsValue, JsValue> {
        self.decide(store, name, key, count, reserve, config, now, false)
    }

    /// Decides `items` (`{ name, key?, count?, reserve?, config? }[]`) together: all or none.
    #[wasm_bindgen(js_name = limitAll, unchecked_return_type = "RateLimitResult | Promise<RateLimitResult>")]
    pub fn limit_all(&self, #[wasm_bindgen(unchecked_param_type = "RateLimitStore")] store: JsValue, items: JsValue, now: JsValue, write: bool) -> Result<JsValue, JsValue> {
        let function = if write { "limitAll" } else { "checkAll" };
        let wrong = |problem| Error::InvalidArgument { function: function.into(), problem };
        if !is_array(&items) {
            return Err(wrong(Problem::must_be("requests", "an array of limits", raw_value(&items))).into());
        }
        // Read through Reflect (bound with `catch`): the array may be a Proxy.
        let length = Reflect::get(&items, &"length".into())?.as_f64().unwrap_or(0.0).clamp(0.0, f64::from(u32::MAX)) as u32;
        let mut owned: Vec<(String, Option<String>, Rc<Config>, Request)> = Vec::with_capacity(length.min(1024) as usize);
        const FIELDS: [&str; 5] = ["name", "key", "count", "reserve", "config"];
        for index in 0..length {
            let item = Reflect::get_u32(&items, index)?;
            if !item.is_object() {
                return Err(wrong(Problem::must_be("requests", "an array of objects", raw_value(&item))).into());
            }
            // Own enumerable fields only: an unknown one is an error, an inherited one is never read.
            let [name, key, count, reserve, config] = own_fields(&item, &FIELDS, |problem| match problem.says {
                Says::Unknown { known, .. } => Error::request(function, Problem { says: Says::Unknown { what: "field", of: " of a limitAll item", plural: "fields", known }, ..problem }),
                _ => wrong(problem),
            })?;
            let name = request::name(raw_value(&name))?;
            let key = request::key(&name, raw_value(&key))?;
            let request = Request { count: request::count(&name, raw_value(&count))?, reserve: request::flag(&name, "reserve", raw_value(&reserve))? };
            let config = self.resolve(&name, &config)?;
            owned.push((name, key, config, request));
        }
        let now_ms = request::now(function, raw_value(&now))?;
        let mut store = Backend::Host(Rc::new(HostStore::from_js(&store)?));
        let mut random = random_source(self.random.clone());
        run(
            async move {
                let batch: Vec<BatchItem<'_>> =
                    owned.iter().map(|(name, key, config, request)| BatchItem { name, key: key.as_deref(), config, request: *request }).collect();
                limit_all(&mut store, &batch, now_ms, &mut random, write).await
            },
            result_to_js,
        )
    }

    /// The limit's current `{ value, ts, shard, config }`.
    #[wasm_bindgen(js_name = getValue, unchecked_return_type = "RateLimitValue | Promise<RateLimitValue>")]
    pub fn get_value(&self, #[wasm_bindgen(unchecked_param_type = "RateLimitStore")] store: JsValue, name: JsValue, key: JsValue, sample_shards: JsValue, config: JsValue, now: JsValue) -> Result<JsValue, JsValue> {
        let name = request::name(raw_value(&name))?;
        let key = request::key(&name, raw_value(&key))?;
        let config = self.resolve(&name, &config)?;
        // Checked once, by the core's getValue; only a value that is not a number is refused here.
        let wanted = match raw_value(&sample_shards) {
            RawValue::Undefined => None,
            RawValue::Number(wanted) => Some(wanted),
            got => return Err(request::sample_shards(&name, got, config.shard_count).err().map_or(JsValue::UNDEFINED, JsValue::from)),
        };
        let now_ms = request::now(&name, raw_value(&now))?;
        let mut store = Backend::Host(Rc::new(HostStore::from_js(&store)?));
        let mut random = random_source(self.random.clone());
        run(async move { get_value(&mut store, &name, key.as_deref(), &config, wanted, now_ms, &mut random).await }, report_to_js)
    }

    /// Deletes every shard's state of `name` and `key`.
    #[wasm_bindgen(unchecked_return_type = "void | Promise<void>")]
    pub fn reset(&self, #[wasm_bindgen(unchecked_param_type = "RateLimitStore")] store: JsValue, name: JsValue, key: JsValue, config: JsValue, now: JsValue) -> Result<JsValue, JsValue> {
        let name = request::name(raw_value(&name))?;
        let key = request::key(&name, raw_value(&key))?;
        let config = self.resolve(&name, &config)?;
        let now_ms = request::now(&name, raw_value(&now))?;
        let mut store = Backend::Host(Rc::new(HostStore::from_js(&store)?));
        run(async move { reset(&mut store, &name, key.as_deref(), &config, now_ms).await }, |()| JsValue::UNDEFINED)
    }

    /// Decides named limits on `slab` directly (the store is that MemoryStore).
    #[wasm_bindgen(js_name = useSlab)]
    pub fn use_slab(&mut self, slab: &MemorySlab) {
        self.slab = Some(slab.inner.clone());
    }

    /// The index of a named limit, or -1 when there is none of that name.
    #[wasm_bindgen(js_name = limitIndex)]
    pub fn limit_index(&self, name: JsValue) -> i32 {
        let Some(name) = name.as_string() else { return -1 };
        self.limits.binary_search_by(|(defined, _)| defined.as_str().cmp(&name)).map_or(-1, |index| index as i32)
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
    /// key is left in `takeAllocatedBase()`. The TypeScript layer calls it only
    /// with a `count` that is a number and a key it has checked.
    #[wasm_bindgen(js_name = decideInSlab)]
    pub fn decide_in_slab(&self, index: u32, base: f64, count: f64, reserve: bool, now: f64, write: bool) -> Result<f64, JsValue> {
        let (name, config) = self.limits.get(index as usize).ok_or_else(|| Error::UnknownLimit { limit: "#".into() })?;
        let slab = self.slab.clone().ok_or_else(|| js_sys::Error::new("this limiter's store is not a MemoryStore"))?;
        let request = Request { count: request::count(name, count.into())?, reserve };
        let block = SlabBlock { slab, base: (base >= 0.0).then_some(base as u32), length: config.shard_count as u16 };
        let mut store = Backend::Slab(block);
        let mut random = random_source(self.random.clone());
        let item = BatchItem { name, key: None, config, request };
        let result = poll_now(pin!(decide_and_maybe_write(&mut store, item, now, &mut random, write)))??;
        if let Backend::Slab(block) = store {
            if base < 0.0 {
                self.allocated_base.set(block.base.map_or(-1.0, f64::from));
            }
        }
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
}

/// Polls a call over a synchronous store once; it completes at once.
fn poll_now<T>(call: std::pin::Pin<&mut impl Future<Output = T>>) -> Result<T, JsValue> {
    match call.poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => Ok(output),
        Poll::Pending => Err(js_sys::Error::new("a MemoryStore call did not complete").into()),
    }
}

/// Explains what is wrong with the options of a call of the limit `name`
/// (the TypeScript layer reads them itself, own fields only, and calls this
/// only when a quick look found something): an object whose own enumerable
/// fields are all among `allowed` (comma-separated), with a boolean `throws`.
#[wasm_bindgen(js_name = checkOptions)]
pub fn check_options(name: JsValue, options: JsValue, allowed: JsValue) -> Result<(), JsValue> {
    let limit = name.as_string().unwrap_or_default();
    let allowed = allowed.as_string().unwrap_or_default();
    let invalid = |problem: Problem| -> JsValue { Error::request(&limit, problem).into() };
    if !options.is_object() || is_array(&options) {
        return Err(invalid(Problem::must_be("options", "an object", raw_value(&options))));
    }
    let fields = own_keys(&options).map_err(|_| invalid(Problem::must_be("options", "a plain object (listing its fields threw)", RawValue::Other("an object"))))?;
    for field in fields.iter() {
        let field = field.as_string().unwrap_or_default();
        if !allowed.split(',').any(|known| known == field) {
            let known: Vec<&str> = allowed.split(',').collect();
            return Err(invalid(Problem::unknown(field, "option", "options", &known)));
        }
    }
    let throws = Reflect::get(&options, &"throws".into()).unwrap_or(JsValue::UNDEFINED);
    if Reflect::has(&options, &"throws".into()).unwrap_or(false) && !(throws.is_undefined() || throws.as_bool().is_some()) {
        return Err(invalid(Problem::must_be("throws", "a boolean", raw_value(&throws))));
    }
    Ok(())
}
