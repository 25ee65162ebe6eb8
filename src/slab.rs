//! In-memory state storage addressed by slot: what `MemoryStore` keeps inside
//! WebAssembly memory. The host maps `(name, key)` to a block of slots, one
//! per shard, so keys never cross the boundary on the hot path.

use crate::error::Error;
use crate::state::{State, StateRef, StateStore};

/// States in blocks of consecutive slots; an empty slot holds no state.
///
/// Invariant: `values`, `timestamps` and `block_lengths` have the same
/// length; a block starts at a slot whose `block_lengths` entry is its
/// length (`0` inside a block); freed blocks are reused by length.
#[derive(Debug, Default)]
pub struct Slab {
    values: Vec<f64>,
    timestamps: Vec<f64>,
    block_lengths: Vec<u16>,
    free_blocks: Vec<(u16, u32)>,
    occupied: u32,
}

/// Marks an empty slot: stored values are always finite, so NaN never collides.
const EMPTY: f64 = f64::NAN;

impl Slab {
    /// An empty slab.
    pub fn new() -> Slab {
        Slab::default()
    }

    /// A block of `length` empty slots (`1..=1024`); returns its first slot.
    pub fn allocate(&mut self, length: u16) -> u32 {
        let length = length.clamp(1, 1024);
        if let Some(index) = self.free_blocks.iter().position(|&(free, _)| free == length) {
            return self.free_blocks.swap_remove(index).1;
        }
        let base = self.values.len() as u32;
        let grown = self.values.len() + usize::from(length);
        self.values.resize(grown, EMPTY);
        self.timestamps.resize(grown, 0.0);
        self.block_lengths.resize(grown, 0);
        self.block_lengths[base as usize] = length;
        base
    }

    /// Empties and frees the block starting at `base` (ignored if `base` starts no block).
    pub fn release(&mut self, base: u32) {
        let Some(&length) = self.block_lengths.get(base as usize) else { return };
        if length == 0 {
            return;
        }
        for slot in base..base + u32::from(length) {
            self.set(slot, None);
        }
        self.free_blocks.push((length, base));
    }

    /// The length of the block starting at `base` (0 when `base` starts none).
    pub fn block_length(&self, base: u32) -> u16 {
        self.block_lengths.get(base as usize).copied().unwrap_or(0)
    }

    /// The state in `slot`, if any.
    pub fn get(&self, slot: u32) -> Option<State> {
        let value = *self.values.get(slot as usize)?;
        if value.is_nan() {
            return None;
        }
        Some(State { value, ts: self.timestamps[slot as usize] })
    }

    /// Stores `state` in `slot` (`None` empties it); slots outside the slab are ignored.
    pub fn set(&mut self, slot: u32, state: Option<State>) {
        let Some(value) = self.values.get_mut(slot as usize) else { return };
        let was_occupied = !value.is_nan();
        match state {
            Some(state) => {
                *value = state.value;
                self.timestamps[slot as usize] = state.ts;
            }
            None => *value = EMPTY,
        }
        match (was_occupied, state.is_some()) {
            (false, true) => self.occupied += 1,
            (true, false) => self.occupied -= 1,
            _ => {}
        }
    }

    /// Whether no slot of the block at `base` holds a state.
    pub fn block_is_empty(&self, base: u32) -> bool {
        let length = u32::from(self.block_length(base));
        (base..base + length).all(|slot| self.get(slot).is_none())
    }

    /// Forgets every state and block.
    pub fn clear(&mut self) {
        *self = Slab::default();
    }

    /// How many slots hold a state.
    pub fn occupied(&self) -> u32 {
        self.occupied
    }

    /// The block at `base` as a [`StateStore`]: shard `n` is slot `base + n`.
    pub fn block(&mut self, base: u32) -> SlabBlock<'_> {
        SlabBlock { slab: self, base: Some(base), length: 0 }
    }

    /// A block of `length` slots that is allocated only if something is
    /// written to it, so reads and refusals for new keys cost no memory.
    pub fn new_block(&mut self, length: u16) -> SlabBlock<'_> {
        SlabBlock { slab: self, base: None, length }
    }
}

/// One `(name, key)`'s block of a [`Slab`], read and written by shard.
pub struct SlabBlock<'a> {
    slab: &'a mut Slab,
    base: Option<u32>,
    /// For a block not yet allocated: the length to allocate on first write.
    length: u16,
}

impl SlabBlock<'_> {
    fn slot(&self, at: StateRef<'_>) -> Option<u32> {
        let base = self.base?;
        (at.shard < u32::from(self.slab.block_length(base))).then(|| base + at.shard)
    }

    /// The block's first slot, if it was allocated.
    pub fn allocated(&self) -> Option<u32> {
        self.base
    }
}

impl StateStore for SlabBlock<'_> {
    type Error = Error;

    async fn read(&mut self, at: StateRef<'_>) -> Result<Option<State>, Error> {
        Ok(self.slot(at).and_then(|slot| self.slab.get(slot)))
    }

    async fn write(&mut self, at: StateRef<'_>, state: Option<State>) -> Result<(), Error> {
        if self.base.is_none() && state.is_some() {
            self.base = Some(self.slab.allocate(self.length));
        }
        if let Some(slot) = self.slot(at) {
            self.slab.set(slot, state);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_empty_until_written_and_reused_after_release() {
        let mut slab = Slab::new();
        let first = slab.allocate(3);
        let second = slab.allocate(1);
        assert_eq!((first, second), (0, 3));
        assert_eq!(slab.get(first + 2), None);
        slab.set(first + 2, Some(State { value: -1.5, ts: 7.0 }));
        assert_eq!(slab.get(first + 2), Some(State { value: -1.5, ts: 7.0 }));
        assert_eq!(slab.occupied(), 1);
        slab.release(first);
        assert_eq!((slab.get(first + 2), slab.occupied()), (None, 0));
        assert_eq!(slab.allocate(3), first);
    }

    #[test]
    fn a_block_ignores_shards_beyond_its_length() {
        let mut slab = Slab::new();
        let base = slab.allocate(2);
        let neighbour = slab.allocate(1);
        let at = StateRef { name: "x", key: None, shard: 2 };
        {
            let mut block = slab.block(base);
            let written = std::pin::pin!(block.write(at, Some(State { value: 1.0, ts: 0.0 })));
            let _ = std::future::Future::poll(written, &mut std::task::Context::from_waker(std::task::Waker::noop()));
        }
        assert_eq!(slab.get(neighbour), None);
    }
}
