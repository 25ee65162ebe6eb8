//! The floor of `npm run bench`: ratebound's own arithmetic (`advance`, the
//! transition; `decide`, the decision) behind the fewest numbers a call can
//! pass, with no validation, no error channel and no batch. Its states live
//! in this module's memory, one slot a key; the JavaScript around it maps a
//! key to a slot and reads the answer (`scripts/bench/floor.mjs`). What
//! ratebound's package does beyond this is what a figure above the floor
//! pays for.
#![no_std]

use ratebound::{advance, decide, initial_state, Config, Kind, Request, State};

/// Slots for keys: the bench's 1,000 keys and a few more.
const SLOTS: usize = 1024;

static mut CONFIG: Config = Config { kind: Kind::TokenBucket, rate: 1.0, period_ms: 1.0, capacity: 1.0, max_reserved: None, shard_count: 1, start_ms: None };
/// Per slot: value (NaN: no state yet) and ts.
static mut STATES: [f64; 2 * SLOTS] = [f64::NAN; 2 * SLOTS];
/// The answer's other numbers: `ts` and `retryAfter` (NaN: none) of a transition, `retryAfter` of a refusal.
static mut OUT: [f64; 2] = [0.0; 2];

/// Where the answer's other numbers are, for a `Float64Array` view.
#[no_mangle]
pub extern "C" fn floor_out() -> usize {
    core::ptr::addr_of!(OUT) as usize
}

/// The limit every call decides on (`kind` 0 token bucket, 1 fixed window; `start` NaN: none),
/// taken as valid; every slot starts without a state.
#[no_mangle]
pub extern "C" fn floor_config(kind: f64, rate: f64, period_ms: f64, capacity: f64, start_ms: f64) {
    let config = Config {
        kind: if kind == 1.0 { Kind::FixedWindow } else { Kind::TokenBucket },
        rate,
        period_ms,
        capacity,
        max_reserved: None,
        shard_count: 1,
        start_ms: if start_ms.is_nan() { None } else { Some(start_ms) },
    };
    // SAFETY: JavaScript calls in one at a time; nothing here re-enters.
    unsafe {
        *core::ptr::addr_of_mut!(CONFIG) = config;
        *core::ptr::addr_of_mut!(STATES) = [f64::NAN; 2 * SLOTS];
    }
}

/// `calculateRateLimit` on an existing state: returns the value; `ts` and `retryAfter` go to `OUT`.
#[no_mangle]
pub extern "C" fn floor_calculate(value: f64, ts: f64, now_ms: f64, count: f64) -> f64 {
    // SAFETY: as above.
    let (config, out) = unsafe { (*core::ptr::addr_of!(CONFIG), &mut *core::ptr::addr_of_mut!(OUT)) };
    let next = advance(State { value, ts }, &config, now_ms, count);
    out[0] = next.ts;
    out[1] = next.retry_after_ms.unwrap_or(f64::NAN);
    next.value
}

/// `limit()` on the state of `slot` (a fresh one when it has none): 1 granted, and the state
/// written; 0 refused, its `retryAfter` in `OUT[1]`, nothing written.
#[no_mangle]
pub extern "C" fn floor_limit(slot: u32, now_ms: f64, count: f64) -> f64 {
    // SAFETY: as above.
    let (config, states, out) = unsafe { (*core::ptr::addr_of!(CONFIG), &mut *core::ptr::addr_of_mut!(STATES), &mut *core::ptr::addr_of_mut!(OUT)) };
    let at = 2 * (slot as usize % SLOTS);
    let state = if states[at].is_nan() { initial_state(&config, now_ms, 0.0) } else { State { value: states[at], ts: states[at + 1] } };
    let decision = decide(state, &config, now_ms, Request { count, reserve: false });
    if decision.ok {
        states[at] = decision.next.value;
        states[at + 1] = decision.next.ts;
        return 1.0;
    }
    out[1] = decision.retry_after_ms.unwrap_or(f64::INFINITY);
    0.0
}
