//! Where a call's states live, as one [`StateStore`]: the host's
//! `read`/`write` callbacks, or a MemoryStore's slab in WebAssembly memory.
//! One type, so each call of the core is compiled once. And the runner: a
//! call completes synchronously when every answer is immediate, and becomes a
//! Promise from the first pending one on.

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use js_sys::{Function, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::{future_to_promise, JsFuture};

use crate::error::{Error, Problem};
use crate::slab::Slab;
use crate::state::{State, StateRef, StateStore, WriteInfo};
use crate::wasm::convert::{info_to_js, raw_value, ref_to_js, state_from_js, state_to_js};

/// The host's store object and its two methods.
pub(crate) struct HostStore {
    target: JsValue,
    read: Function,
    write: Function,
}

impl HostStore {
    /// Checks that `store` is an object with `read` and `write` methods.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming what is missing.
    pub(crate) fn from_js(store: &JsValue) -> Result<HostStore, Error> {
        let wrong = |rule| Error::InvalidArgument { function: "RateLimiter".into(), problem: Problem::must_be("store", rule, raw_value(store)) };
        if !store.is_object() {
            return Err(wrong("an object with read and write methods"));
        }
        let method = |name: &str| Reflect::get(store, &name.into()).ok().and_then(|method| method.dyn_into::<Function>().ok());
        match (method("read"), method("write")) {
            (Some(read), Some(write)) => Ok(HostStore { target: store.clone(), read, write }),
            _ => Err(wrong("an object with read(ref) and write(ref, state) methods")),
        }
    }
}

/// A MemoryStore's block for one name and key, allocated on first write.
pub(crate) struct SlabBlock {
    pub(crate) slab: Rc<RefCell<Slab>>,
    /// The block's first slot; `None` until something is written.
    pub(crate) base: Option<u32>,
    /// The shard count to allocate for a new block.
    pub(crate) length: u16,
}

/// Where one call reads and writes.
pub(crate) enum Backend {
    /// The host's callbacks.
    Host(Rc<HostStore>),
    /// A MemoryStore's slab, without calling back into JavaScript.
    Slab(SlabBlock),
}

impl StateStore for Backend {
    type Error = JsValue;

    async fn read(&mut self, at: StateRef<'_>) -> Result<Option<State>, JsValue> {
        match self {
            Backend::Host(host) => {
                let answer = settle(host.read.call1(&host.target, &ref_to_js(at))?).await?;
                Ok(state_from_js(&answer, || at.place())?)
            }
            Backend::Slab(block) => {
                let slab = block.slab.try_borrow().map_err(|_| busy())?;
                Ok(block.base.and_then(|base| slab.block_slot(base, at.shard)).and_then(|slot| slab.get(slot)))
            }
        }
    }

    async fn write(&mut self, at: StateRef<'_>, state: Option<State>, info: WriteInfo) -> Result<(), JsValue> {
        match self {
            Backend::Host(host) => {
                let answer = match state {
                    Some(state) => host.write.call3(&host.target, &ref_to_js(at), &state_to_js(state), &info_to_js(info))?,
                    None => host.write.call2(&host.target, &ref_to_js(at), &JsValue::NULL)?,
                };
                settle(answer).await?;
                Ok(())
            }
            Backend::Slab(block) => {
                let mut slab = block.slab.try_borrow_mut().map_err(|_| busy())?;
                Ok(slab.write_in_block(&mut block.base, block.length, at, state, info)?)
            }
        }
    }
}

fn busy() -> JsValue {
    js_sys::Error::new("a MemoryStore cannot be used from inside its own random()").into()
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

/// Runs a call: synchronously when every store answer is immediate,
/// otherwise as a Promise from the first pending answer on.
pub(crate) fn run<T: 'static>(
    call: impl Future<Output = Result<T, JsValue>> + 'static,
    to_js: fn(T) -> JsValue,
) -> Result<JsValue, JsValue> {
    let mut call = Box::pin(call);
    match call.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(result) => result.map(to_js),
        Poll::Pending => Ok(future_to_promise(async move { call.await.map(to_js) }).into()),
    }
}
