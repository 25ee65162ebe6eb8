//! `MemorySlab`: a MemoryStore's states in WebAssembly memory, addressed by
//! slot. The TypeScript MemoryStore keeps the name-and-key index.

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::prelude::*;

use crate::error::{Error, Problem};
use crate::slab::Slab;
use crate::state::{State, StateRef};
use crate::wasm::convert::{own_fields, raw_value};

/// A MemoryStore's states, in WebAssembly memory, addressed by slot.
#[wasm_bindgen]
pub struct MemorySlab {
    pub(crate) inner: Rc<RefCell<Slab>>,
    max_keys: u32,
}

#[wasm_bindgen]
impl MemorySlab {
    /// An empty slab for the MemoryStore `options` (`{ maxKeys? }`, own fields only).
    #[wasm_bindgen(constructor)]
    pub fn new(#[wasm_bindgen(unchecked_param_type = "{ maxKeys?: number } | undefined")] options: JsValue) -> Result<MemorySlab, JsValue> {
        let [max_keys] = own_fields(&options, &["maxKeys"], |problem| Error::InvalidArgument { function: "MemoryStore".into(), problem })?;
        let max_keys = match max_keys.as_f64() {
            None if max_keys.is_undefined() => u32::MAX,
            Some(max) if max.fract() == 0.0 && (1.0..=f64::from(u32::MAX)).contains(&max) => max as u32,
            _ => {
                let problem = Problem::must_be("maxKeys", "a positive integer", raw_value(&max_keys));
                return Err(Error::request("MemoryStore", problem).into());
            }
        };
        let slab = if max_keys == u32::MAX { Slab::unbounded() } else { Slab::new() };
        Ok(MemorySlab { inner: Rc::new(RefCell::new(slab)), max_keys })
    }

    fn with<T>(&self, use_slab: impl FnOnce(&mut Slab) -> T) -> Result<T, JsValue> {
        let mut slab = self.inner.try_borrow_mut().map_err(|_| js_sys::Error::new("the MemoryStore is busy"))?;
        Ok(use_slab(&mut slab))
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

    /// From when the state in `slot` may be evicted (`Infinity`: never).
    #[wasm_bindgen(js_name = fullAt)]
    pub fn full_at(&self, slot: u32) -> Result<f64, JsValue> {
        self.with(|slab| slab.full_at(slot))
    }

    /// Stores `{ value, ts }` in `slot`; both must be finite. It may be
    /// evicted from `fullAt` on (`Infinity` or NaN: never).
    pub fn write(&self, slot: u32, value: f64, ts: f64, full_at: f64) -> Result<(), JsValue> {
        let state = State { value, ts }.checked(StateRef { name: "MemoryStore", key: None, shard: slot })?;
        let full_at = if full_at.is_nan() { f64::INFINITY } else { full_at };
        self.with(|slab| slab.set_until_full(slot, Some(state), full_at))
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
