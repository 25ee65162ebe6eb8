//! The offsets at `EXTRA` the concurrency exports read and write
//! (`src/wasm/concurrency.rs`), named once here and generated into
//! `ts/core/boundary.ts` with the buffer's layout.

#[cfg(not(target_arch = "wasm32"))]
use super::io::Section;
use super::io::{EXTRA, IO_LEN};

layout! { EXTRA_CONCURRENCY: "EXTRA for a concurrency limit's lease (offsets from EXTRA): `rb_concurrency_*`.";
    /// `rb_concurrency_compile` in: `max` as a (tag, value) pair as `COMPILE_FIELDS`, then `lease`.
    CONCURRENCY_FIELDS = 0;
    /// `rb_concurrency_compile` out: the limit's max.
    CONCURRENCY_MAX = 0;
    /// `rb_concurrency_compile` out: its lease in ms.
    CONCURRENCY_LEASE = 1;
    /// In: every slot's state as read (two numbers a slot, value NaN: none), slot 0 first.
    CONCURRENCY_STATES = 0;
    /// In (release, extend): the lease's slots; out: the slots written (as many as `LEASE_SLOT_COUNT`).
    CONCURRENCY_SLOTS = 128;
    /// Out: the lease's answer (LEASE_*).
    CONCURRENCY_ANSWER = 192;
    /// A lease's answer: how many slots are taken, released or extended (and written).
    LEASE_SLOT_COUNT = 0;
    /// A lease's answer: when it expires, in ms (NaN: refused, or released).
    LEASE_EXPIRES_AT = 1;
    /// A lease's answer: the state each slot written gets (value NaN: deleted), then its fullAt.
    LEASE_WRITE = 2;
    /// A lease's answer: the written state's fullAt.
    LEASE_FULL_AT = 4;
}

const SLOTS_MAX: usize = crate::concurrency::MAX_CONCURRENCY as usize;
// Checked as the crate compiles: the slots' states, the lease's slots and its answer do not overlap, and fit the buffer.
const _: () = assert!(CONCURRENCY_SLOTS >= CONCURRENCY_STATES + 2 * SLOTS_MAX && CONCURRENCY_ANSWER >= CONCURRENCY_SLOTS + SLOTS_MAX);
const _: () = assert!(EXTRA + CONCURRENCY_ANSWER + LEASE_FULL_AT < IO_LEN);
