//! States that live where the decision runs: `MemoryStore`'s slab, and the
//! table of configs compiled into the module, so that `limit`/`check` of an
//! unsharded limit on it is one call with numbers (`rb_slab_limit`).
//!
//! The slab is three `f64`s a slot (value, ts, fullAt; a NaN value: no
//! state), from the end of the module's initial memory onward: the module
//! allocates nothing else, so every page past its statics and stack is the
//! slab's, and `rb_slab_grow` grows the memory (`memory.grow`) when the
//! package needs more slots. The package maps names and keys to slots
//! (`ts/core/slab.ts`) and reads and writes slots itself for everything but
//! the one-crossing decision. Growing replaces the memory's `ArrayBuffer`,
//! so the package makes its views again after every grow.

use super::decide::put_answer;
use super::io::{config_at, io, put_error, EXTRA, OUT, SLOTS, SLOT_FULL_AT, SLOT_PENDING};
use crate::config::{Config, Kind};
use crate::limiter::{decide_planned, prepare, write_info};
use crate::plan::plan;
use crate::request::Request;
use crate::state::State;
use super::slab_layout::{SLAB_FIGURES, SLAB_TS, SLAB_VALUE, SLAB_MISSING_UNREADABLE, SLAB_NO_FULL_AT, SLAB_RESERVE, SLAB_SLOT_LEN, SLAB_UNREADABLE, SLAB_WRITE};

/// The most distinct configs the table holds; beyond it a limit takes the general path.
pub const MAX_CONFIGS: usize = 1024;
const SLOT_LEN: usize = SLAB_SLOT_LEN;
const PAGE_BYTES: usize = 65_536;

/// The table's placeholder, all zero bits, so the table costs the module no data segment (it
/// lives in zeroed memory); the package never passes an id the table did not give.
const NO_CONFIG: Config = Config { kind: Kind::TokenBucket, rate: 0.0, period_ms: 0.0, calendar: None, capacity: 0.0, max_reserved: None, shard_count: 0, start_ms: None };
static mut CONFIGS: [Config; MAX_CONFIGS] = [NO_CONFIG; MAX_CONFIGS];
static mut CONFIG_COUNT: usize = 0;
/// The slab's first byte (0: not placed yet) and how many slots fit before the memory's end.
static mut SLAB_AT: usize = 0;
static mut SLAB_SLOTS: usize = 0;

/// `rb_slab_limit`'s flags and status (named in `slab_layout.rs`, generated for the package).
const RESERVE: u32 = SLAB_RESERVE as u32;
const WRITE: u32 = SLAB_WRITE as u32;
const FIGURES: u32 = SLAB_FIGURES as u32;
const MISSING_UNREADABLE: u32 = SLAB_MISSING_UNREADABLE as u32;
const NO_FULL_AT: u32 = SLAB_NO_FULL_AT as u32;
const UNREADABLE: f64 = SLAB_UNREADABLE as f64;

/// Adds the compiled config at `EXTRA` (seven numbers, as `rb_compile` wrote them) to the table.
/// Returns its id, or -1 when the table is full (the limit then takes the general path).
#[no_mangle]
pub extern "C" fn rb_slab_config() -> f64 {
    // SAFETY: one call at a time (see `io::io`).
    let count = unsafe { &mut *core::ptr::addr_of_mut!(CONFIG_COUNT) };
    if *count >= MAX_CONFIGS {
        return -1.0;
    }
    let config = config_at(io(), EXTRA);
    // SAFETY: as above.
    unsafe { (*core::ptr::addr_of_mut!(CONFIGS))[*count] = config };
    *count += 1;
    (*count - 1) as f64
}

/// Makes room for at least `slots` slots, growing the memory when needed. Returns the slab's
/// byte address (its slots run from there to the memory's end), or -1 when the memory cannot
/// grow (the package then fails the write with STORE_FULL).
#[no_mangle]
pub extern "C" fn rb_slab_grow(slots: u32) -> f64 {
    // SAFETY: one call at a time.
    let (at, capacity) = unsafe { (&mut *core::ptr::addr_of_mut!(SLAB_AT), &mut *core::ptr::addr_of_mut!(SLAB_SLOTS)) };
    let end = || core::arch::wasm32::memory_size(0) * PAGE_BYTES;
    if *at == 0 {
        *at = end();
    }
    let wanted = *at + slots as usize * SLOT_LEN * 8;
    if wanted > end() && core::arch::wasm32::memory_grow(0, (wanted - end()).div_ceil(PAGE_BYTES)) == usize::MAX {
        return -1.0;
    }
    *capacity = (end() - *at) / (SLOT_LEN * 8);
    *at as f64
}

/// How many slots the slab holds now.
#[no_mangle]
pub extern "C" fn rb_slab_slots() -> f64 {
    // SAFETY: one call at a time.
    unsafe { *core::ptr::addr_of!(SLAB_SLOTS) as f64 }
}

fn slab() -> &'static mut [f64] {
    // SAFETY: `rb_slab_grow` placed the slab past everything else the module uses, and the memory
    // holds `SLAB_SLOTS` slots from there; one call at a time.
    unsafe { core::slice::from_raw_parts_mut(*core::ptr::addr_of!(SLAB_AT) as *mut f64, *core::ptr::addr_of!(SLAB_SLOTS) * SLOT_LEN) }
}

/// `limit` (flag [`WRITE`]) or `check` of an unsharded limit whose config is `config` in the
/// table, on the state in slot `slot` (-1: the key has no slot yet): checks the call as `rb_plan`
/// does, decides as `rb_decide_one` does, and writes a granted `limit`'s state to the slot
/// (value, ts, fullAt; fullAt `Infinity` when the core says none, or under [`NO_FULL_AT`]). Answers in `OUT` as
/// `rb_decide_one` does (with the figures under [`FIGURES`]); with no slot, the state to write
/// goes to slot 0 of `SLOTS` as `rb_decide_one` leaves it (pending value and ts, fullAt; a NaN
/// value: nothing to write), for the package to place. Returns 1 granted, 0 refused,
/// [`UNREADABLE`], or `-code`.
#[no_mangle]
pub extern "C" fn rb_slab_limit(config: u32, slot: f64, count: f64, flags: u32, now: f64, draw: f64) -> f64 {
    let io = io();
    // SAFETY: one call at a time; an id the table never gave decides on its placeholder, never out of bounds.
    let config = unsafe { (*core::ptr::addr_of!(CONFIGS))[(config as usize).min(MAX_CONFIGS - 1)] };
    let request = Request { count, reserve: flags & RESERVE != 0 };
    let planned = match prepare(&config, request, now).and_then(|()| plan(&config, now, &[draw, 0.0, 0.0, 0.0])) {
        Ok(planned) => planned,
        Err(error) => return put_error(io, OUT, &error),
    };
    let slab = slab();
    let at = if slot >= 0.0 { Some((slot as usize * SLOT_LEN).min(slab.len().saturating_sub(SLOT_LEN))) } else { None };
    let stored = at.and_then(|at| (!slab[at + SLAB_VALUE].is_nan()).then(|| State { value: slab[at + SLAB_VALUE], ts: slab[at + SLAB_TS] }));
    if stored.is_none() && flags & MISSING_UNREADABLE != 0 {
        return UNREADABLE;
    }
    let outcome = match decide_planned(&config, request, now, &planned, [stored, None]) {
        Ok(outcome) => outcome,
        Err(error) => return put_error(io, OUT, &error),
    };
    let commits = flags & WRITE != 0 && outcome.result.is_ok();
    put_answer(io, OUT, &outcome, &config, now, commits, flags & FIGURES != 0);
    let written = outcome.writes[0].filter(|_| commits).map(|(_, state)| {
        let full_at = if flags & NO_FULL_AT != 0 { f64::INFINITY } else { write_info(&config, state, now).full_at_ms };
        [state.value, state.ts, if full_at.is_nan() { f64::INFINITY } else { full_at }]
    });
    match (at, written) {
        (Some(at), Some(written)) => slab[at..at + SLOT_LEN].copy_from_slice(&written),
        (Some(_), None) => {}
        (None, written) => {
            let [value, ts, full_at] = written.unwrap_or([f64::NAN, f64::NAN, 0.0]);
            io[SLOTS + SLOT_PENDING] = value;
            io[SLOTS + SLOT_PENDING + 1] = ts;
            io[SLOTS + SLOT_FULL_AT] = full_at;
        }
    }
    io[OUT]
}
