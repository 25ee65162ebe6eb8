//! The numbers `rb_slab_limit` and the package's slab share (`src/wasm/slab.rs`,
//! `ts/core/slab.ts`, `ts/core/slab-store.ts`), named once here and generated
//! into `ts/core/boundary.ts` with the buffer's layout. Compiled natively too
//! (the slab itself is wasm32 only), so the generator sees them.

#[cfg(not(target_arch = "wasm32"))]
use super::io::Section;

layout! { SLAB: "The slab of MemoryStore's states in the module's memory, and rb_slab_limit's flags and status.";
    /// The `f64`s of a slot: value, ts, fullAt.
    SLAB_SLOT_LEN = 3;
    /// A slot's value (NaN: no state).
    SLAB_VALUE = 0;
    /// A slot's ts.
    SLAB_TS = 1;
    /// A slot's fullAt.
    SLAB_FULL_AT = 2;
    /// A flag: `reserve`.
    SLAB_RESERVE = 1;
    /// A flag: `limit` (writes) rather than `check`.
    SLAB_WRITE = 2;
    /// A flag: answer the figures too.
    SLAB_FIGURES = 4;
    /// A flag: a missing state cannot be read as full (the store dropped states that were not full yet at `now`): the call answers `SLAB_UNREADABLE` instead of deciding.
    SLAB_MISSING_UNREADABLE = 8;
    /// A flag: the store never drops states (it has no `maxKeys`), so nothing reads a slot's fullAt: it is written `Infinity` without being computed.
    SLAB_NO_FULL_AT = 16;
    /// `rb_slab_limit`'s status when its state is missing and `SLAB_MISSING_UNREADABLE` was set.
    SLAB_UNREADABLE = 2;
}
