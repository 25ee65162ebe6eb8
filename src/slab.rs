//! In-memory state storage addressed by slot: what `MemoryStore` keeps inside
//! WebAssembly memory. The host maps `(name, key)` to a block of slots, one
//! per shard, so keys never cross the boundary on the hot path.

use crate::error::{Error, Part, Problem};
use crate::state::{State, StateRef, StateStore, WriteInfo};

/// States in blocks of consecutive slots; an empty slot holds no state.
///
/// Invariant: `values`, `timestamps` and `block_lengths` have the same
/// length; a block starts at a slot whose `block_lengths` entry is its
/// length (`0` inside a block); freed blocks are reused by length.
#[derive(Debug)]
pub struct Slab {
    values: Vec<f64>,
    timestamps: Vec<f64>,
    /// Per slot: from when its state is full again (`+∞`: unknown, never evicted).
    full_at: Vec<f64>,
    block_lengths: Vec<u16>,
    /// Per block start: whether the block is on the free list.
    is_free: Vec<bool>,
    free_blocks: Vec<(u16, u32)>,
    occupied: u32,
    live_blocks: u32,
    /// No block can be evicted before this instant (a lower bound).
    next_evictable_ms: f64,
    /// Whether writes note when states are full again (only a bounded store evicts).
    tracks_full: bool,
}

impl Default for Slab {
    fn default() -> Self {
        Slab {
            values: Vec::new(),
            timestamps: Vec::new(),
            full_at: Vec::new(),
            block_lengths: Vec::new(),
            is_free: Vec::new(),
            free_blocks: Vec::new(),
            occupied: 0,
            live_blocks: 0,
            next_evictable_ms: f64::INFINITY,
            tracks_full: true,
        }
    }
}

/// Marks an empty slot: stored values are always finite, so NaN never collides.
const EMPTY: f64 = f64::NAN;

impl Slab {
    /// An empty slab.
    pub fn new() -> Slab {
        Slab::default()
    }

    /// An empty slab that never evicts, so writes skip noting when states are
    /// full again (a tenth of a decision's time).
    pub fn unbounded() -> Slab {
        Slab { tracks_full: false, ..Slab::default() }
    }

    /// A block of `length` empty slots (`1..=1024`); returns its first slot.
    pub fn allocate(&mut self, length: u16) -> u32 {
        let length = length.clamp(1, 1024);
        self.live_blocks += 1;
        if let Some(index) = self.free_blocks.iter().position(|&(free, _)| free == length) {
            let base = self.free_blocks.swap_remove(index).1;
            self.is_free[base as usize] = false;
            return base;
        }
        let base = self.values.len() as u32;
        let grown = self.values.len() + usize::from(length);
        self.values.resize(grown, EMPTY);
        self.timestamps.resize(grown, 0.0);
        self.full_at.resize(grown, f64::INFINITY);
        self.block_lengths.resize(grown, 0);
        self.is_free.resize(grown, false);
        self.block_lengths[base as usize] = length;
        base
    }

    /// Empties and frees the block starting at `base` (ignored if `base` starts no block).
    pub fn release(&mut self, base: u32) {
        let Some(&length) = self.block_lengths.get(base as usize) else { return };
        if length == 0 || self.is_free[base as usize] {
            return;
        }
        for slot in base..base + u32::from(length) {
            self.set(slot, None);
        }
        self.is_free[base as usize] = true;
        self.live_blocks -= 1;
        self.free_blocks.push((length, base));
    }

    /// The length of the block starting at `base` (0 when `base` starts none).
    pub fn block_length(&self, base: u32) -> u16 {
        self.block_lengths.get(base as usize).copied().unwrap_or(0)
    }

    /// From when the state in `slot` may be evicted (`+∞`: never, or no such slot).
    pub fn full_at(&self, slot: u32) -> f64 {
        self.full_at.get(slot as usize).copied().unwrap_or(f64::INFINITY)
    }

    /// The state in `slot`, if any.
    pub fn get(&self, slot: u32) -> Option<State> {
        let value = *self.values.get(slot as usize)?;
        if value.is_nan() {
            return None;
        }
        Some(State { value, ts: self.timestamps[slot as usize] })
    }

    /// Stores `state` in `slot` (`None` empties it), never to be evicted;
    /// slots outside the slab are ignored.
    pub fn set(&mut self, slot: u32, state: Option<State>) {
        self.set_until_full(slot, state, f64::INFINITY);
    }

    /// Stores `state` in `slot`, evictable from `full_at_ms` on (see [`full_at`]).
    pub fn set_until_full(&mut self, slot: u32, state: Option<State>, full_at_ms: f64) {
        let Some(value) = self.values.get_mut(slot as usize) else { return };
        self.full_at[slot as usize] = full_at_ms;
        if state.is_some() {
            self.next_evictable_ms = self.next_evictable_ms.min(full_at_ms);
        }
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
        *self = Slab { tracks_full: self.tracks_full, ..Slab::default() };
    }

    /// How many slots hold a state.
    pub fn occupied(&self) -> u32 {
        self.occupied
    }

    /// How many blocks are allocated (one per name and key).
    pub fn live_blocks(&self) -> u32 {
        self.live_blocks
    }

    /// Frees every block whose states are all full again at `now_ms` and
    /// returns their first slots. Dropping them changes no decision: a
    /// missing state is decided exactly as a full one. One pass frees all it
    /// can and notes when the next could be freed, so a store with nothing
    /// to free is not scanned again before then.
    pub fn evict_full(&mut self, now_ms: f64) -> Vec<u32> {
        let mut evicted = Vec::new();
        if !(now_ms >= self.next_evictable_ms) {
            return evicted;
        }
        let mut next = f64::INFINITY;
        let mut base = 0usize;
        while base < self.block_lengths.len() {
            let length = usize::from(self.block_lengths[base]).max(1);
            if self.block_lengths[base] > 0 && !self.is_free[base] {
                let slots = base..base + length;
                let full_from = slots
                    .map(|slot| if self.values[slot].is_nan() { f64::NEG_INFINITY } else { self.full_at[slot] })
                    .fold(f64::NEG_INFINITY, f64::max);
                if full_from <= now_ms {
                    evicted.push(base as u32);
                } else {
                    next = next.min(full_from);
                }
            }
            base += length;
        }
        for &base in &evicted {
            self.release(base);
        }
        self.next_evictable_ms = next;
        evicted
    }

    /// The slot of shard `shard` in the block at `base`, if the block has it.
    pub fn block_slot(&self, base: u32, shard: u32) -> Option<u32> {
        (shard < u32::from(self.block_length(base))).then(|| base + shard)
    }

    /// Writes one shard of the block at `*base`, first allocating a block
    /// of `length` slots there when it has none and a state is written.
    /// The state may be evicted from `info.full_at_ms` on.
    ///
    /// # Errors
    /// [`Error::CorruptState`] for a shard outside the block: a write is
    /// never dropped silently, since that would lose consumed tokens.
    pub fn write_in_block(&mut self, base: &mut Option<u32>, length: u16, at: StateRef<'_>, state: Option<State>, info: WriteInfo) -> Result<(), Error> {
        if base.is_none() && state.is_some() {
            *base = Some(self.allocate(length));
        }
        match base.and_then(|base| self.block_slot(base, at.shard)) {
            Some(slot) => {
                let full_from = match state {
                    None => f64::NEG_INFINITY,
                    Some(_) if self.tracks_full => info.full_at_ms,
                    Some(_) => f64::INFINITY,
                };
                self.set_until_full(slot, state, full_from);
                Ok(())
            }
            None if state.is_none() => Ok(()),
            None => Err(Error::CorruptState {
                at: at.place(),
                problem: Problem::parts("shard", vec![Part::Text("the MemoryStore block has no slot for this shard")]),
            }),
        }
    }

    /// The block at `base` as a [`StateStore`]: shard `n` is slot `base + n`.
    /// Writes note when each state is full again (their [`WriteInfo`]).
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
    /// The block's first slot, if it was allocated.
    pub fn allocated(&self) -> Option<u32> {
        self.base
    }
}

impl StateStore for SlabBlock<'_> {
    type Error = Error;

    async fn read(&mut self, at: StateRef<'_>) -> Result<Option<State>, Error> {
        Ok(self.base.and_then(|base| self.slab.block_slot(base, at.shard)).and_then(|slot| self.slab.get(slot)))
    }

    async fn write(&mut self, at: StateRef<'_>, state: Option<State>, info: WriteInfo) -> Result<(), Error> {
        self.slab.write_in_block(&mut self.base, self.length, at, state, info)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

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

    fn bucket() -> Config {
        Config::try_from(&crate::raw::RawConfig::token_bucket(10.0, 1000.0)).unwrap()
    }

    fn write(block: &mut SlabBlock<'_>, shard: u32, state: State, config: &Config) {
        let at = StateRef { name: "x", key: None, shard };
        let info = WriteInfo { now_ms: state.ts, full_at_ms: crate::transition::full_at(state, config) };
        let written = std::pin::pin!(block.write(at, Some(state), info));
        let _ = std::future::Future::poll(written, &mut std::task::Context::from_waker(std::task::Waker::noop()));
    }

    #[test]
    fn eviction_frees_only_blocks_that_are_full_again() {
        let config = bucket();
        let mut slab = Slab::new();
        let refilling = slab.allocate(1);
        let drained = slab.allocate(1);
        write(&mut slab.block(refilling), 0, State { value: 9.0, ts: 0.0 }, &config); // full at 100
        write(&mut slab.block(drained), 0, State { value: 0.0, ts: 0.0 }, &config); // full at 1000
        let outside = slab.allocate(1);
        slab.set(outside, Some(State { value: 10.0, ts: 0.0 })); // written from outside: never
        assert_eq!(slab.evict_full(99.0), Vec::<u32>::new());
        assert_eq!(slab.evict_full(100.0), vec![refilling]);
        assert_eq!(slab.live_blocks(), 2);
        assert_eq!(slab.evict_full(5_000.0), vec![drained]);
        assert_eq!(slab.evict_full(1e12), Vec::<u32>::new());
        assert_eq!(slab.live_blocks(), 1);
    }

    #[test]
    fn a_block_refuses_writes_beyond_its_length_rather_than_drop_them() {
        let mut slab = Slab::new();
        let base = slab.allocate(2);
        let neighbour = slab.allocate(1);
        let at = StateRef { name: "x", key: None, shard: 2 };
        let outcome = {
            let mut block = slab.block(base);
            let written = std::pin::pin!(block.write(at, Some(State { value: 1.0, ts: 0.0 }), WriteInfo::delete(0.0)));
            std::future::Future::poll(written, &mut std::task::Context::from_waker(std::task::Waker::noop()))
        };
        assert!(matches!(outcome, std::task::Poll::Ready(Err(Error::CorruptState { .. }))));
        assert_eq!(slab.get(neighbour), None);
    }
}
