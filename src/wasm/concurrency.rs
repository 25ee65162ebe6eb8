//! The exports of concurrency limits: compile `{ max, lease }`, take slots for
//! a lease, release it, extend it. What they read and write sits at `EXTRA`
//! (the `CONCURRENCY_*` and `LEASE_*` offsets of [`io`]); an error is answered
//! in `OUT` (item 0's answer) as every export's is. The package reads every
//! slot of the key (or the lease's slots), calls one export, and writes the
//! one state answered to the slots answered, inside its store's transaction.

use super::decide::given;
use super::concurrency_layout::{
    CONCURRENCY_ANSWER, CONCURRENCY_FIELDS, CONCURRENCY_LEASE, CONCURRENCY_MAX, CONCURRENCY_SLOTS, CONCURRENCY_STATES, LEASE_EXPIRES_AT, LEASE_FULL_AT,
    LEASE_SLOT_COUNT, LEASE_WRITE,
};
use super::io::{io, or_nan, put_error, put_state, state_at, EXTRA, IO_LEN, OUT, OUT_RETRY_AFTER, OUT_STATUS};
use crate::concurrency::{
    check_slots, extend_slots, held_slots, release_slots, slot_list, take_slots, ConcurrencyConfig, ConcurrencyInput, SlotWrites, Taken, MAX_CONCURRENCY,
};
use crate::config::Given;
use crate::error::Error;
use crate::state::State;

/// Validates a concurrency limit: `EXTRA + CONCURRENCY_FIELDS` holds a (tag,
/// value) pair for `max`, then for `lease` (tags as `rb_compile`'s). Answers
/// 0 with `max` and `lease` at `CONCURRENCY_MAX`, `CONCURRENCY_LEASE`, or `-code`.
#[no_mangle]
pub extern "C" fn rb_concurrency_compile() -> f64 {
    let io = io();
    let field = |index: usize| given(io[EXTRA + CONCURRENCY_FIELDS + 2 * index], io[EXTRA + CONCURRENCY_FIELDS + 1 + 2 * index]);
    match ConcurrencyConfig::try_from(&ConcurrencyInput { max: field(0), lease: field(1) }) {
        Ok(config) => {
            io[EXTRA + CONCURRENCY_MAX] = f64::from(config.max);
            io[EXTRA + CONCURRENCY_LEASE] = config.lease_ms;
            0.0
        }
        Err(error) => put_error(io, OUT, &error),
    }
}

/// The limit of `max` slots and `lease` ms, checked again (the numbers cross as the package passed them).
fn config_of(max: f64, lease_ms: f64) -> Result<ConcurrencyConfig, Error> {
    ConcurrencyConfig::try_from(&ConcurrencyInput { max: Given::Number(max), lease: Given::Number(lease_ms) })
}

/// The states of a limit's slots at `EXTRA + CONCURRENCY_STATES` (`config.max` of them).
fn states(io: &[f64; IO_LEN], config: &ConcurrencyConfig) -> [Option<State>; MAX_CONCURRENCY as usize] {
    core::array::from_fn(|slot| if slot < config.max as usize { state_at(io, EXTRA + CONCURRENCY_STATES + 2 * slot) } else { None })
}

/// The lease's slots at `EXTRA + CONCURRENCY_SLOTS` (`count` of them, at most 64).
fn lease_slots(io: &[f64; IO_LEN], config: &ConcurrencyConfig, count: f64) -> Result<u64, Error> {
    let count = if (0.0..=f64::from(MAX_CONCURRENCY)).contains(&count) { count as usize } else { usize::MAX };
    let from = EXTRA + CONCURRENCY_SLOTS;
    match io.get(from..from.saturating_add(count)) {
        Some(slots) => check_slots(config, slots),
        None => check_slots(config, &[f64::NAN]),
    }
}

/// Answers a lease's writes at `CONCURRENCY_ANSWER` and `CONCURRENCY_SLOTS`.
fn put_writes(io: &mut [f64; IO_LEN], writes: SlotWrites, expires_at_ms: Option<f64>) {
    let at = EXTRA + CONCURRENCY_ANSWER;
    for (index, slot) in slot_list(writes.slots).enumerate() {
        io[EXTRA + CONCURRENCY_SLOTS + index] = f64::from(slot);
    }
    io[at + LEASE_SLOT_COUNT] = f64::from(writes.slots.count_ones());
    io[at + LEASE_EXPIRES_AT] = or_nan(expires_at_ms);
    put_state(io, at + LEASE_WRITE, writes.state);
    io[at + LEASE_FULL_AT] = writes.state.map_or(f64::NEG_INFINITY, |state| state.ts);
}

/// Takes `count` slots for lease `id` at `now` on a limit of `max` slots and
/// `lease` ms, from every slot's state at `CONCURRENCY_STATES`. Answers 1
/// (granted: the slots taken at `CONCURRENCY_SLOTS`, the state to write them
/// and the expiry at `CONCURRENCY_ANSWER`), 0 (refused: the wait at
/// `OUT + OUT_RETRY_AFTER`, nothing to write), or `-code`.
#[no_mangle]
pub extern "C" fn rb_concurrency_take(max: f64, lease_ms: f64, count: f64, id: f64, now: f64) -> f64 {
    let io = io();
    let taken = config_of(max, lease_ms).and_then(|config| take_slots(&config, count, id, now, &states(io, &config)[..config.max as usize]));
    match taken {
        Ok((Taken::Granted { expires_at_ms, .. }, writes)) => {
            put_writes(io, writes, Some(expires_at_ms));
            io[OUT + OUT_RETRY_AFTER] = f64::NAN;
            io[OUT + OUT_STATUS] = 1.0;
            1.0
        }
        Ok((Taken::Refused { retry_after_ms }, writes)) => {
            put_writes(io, writes, None);
            io[OUT + OUT_RETRY_AFTER] = retry_after_ms;
            io[OUT + OUT_STATUS] = 0.0;
            0.0
        }
        Err(error) => put_error(io, OUT, &error),
    }
}

/// How many of a limit's slots are held at `now`, from every slot's state at
/// `CONCURRENCY_STATES`; or `-code`. Writes nothing.
#[no_mangle]
pub extern "C" fn rb_concurrency_held(max: f64, lease_ms: f64, now: f64) -> f64 {
    let io = io();
    match config_of(max, lease_ms).and_then(|config| held_slots(&config, now, &states(io, &config)[..config.max as usize])) {
        Ok(held) => f64::from(held),
        Err(error) => put_error(io, OUT, &error),
    }
}

/// Releases lease `id` at `now`: its `slot_count` slots at `CONCURRENCY_SLOTS`,
/// their states at `CONCURRENCY_STATES` (by slot). Answers how many it gave
/// back (0: released already, expired, or not this lease's), the slots to
/// delete at `CONCURRENCY_SLOTS`, or `-code`.
#[no_mangle]
pub extern "C" fn rb_concurrency_release(max: f64, lease_ms: f64, id: f64, now: f64, slot_count: f64) -> f64 {
    let io = io();
    let released = config_of(max, lease_ms)
        .and_then(|config| Ok((config, lease_slots(io, &config, slot_count)?)))
        .and_then(|(config, slots)| release_slots(&config, id, now, slots, &states(io, &config)[..config.max as usize]));
    match released {
        Ok((count, writes)) => {
            put_writes(io, writes, None);
            f64::from(count)
        }
        Err(error) => put_error(io, OUT, &error),
    }
}

/// Extends lease `id` at `now` to expire no earlier than `now + extend_ms`:
/// its `slot_count` slots at `CONCURRENCY_SLOTS`, their states at
/// `CONCURRENCY_STATES`. Answers how many slots it extended (the slots,
/// state and expiry as `rb_concurrency_take` answers them), or `-code`
/// (`LEASE_LOST` when it holds none any more).
#[no_mangle]
pub extern "C" fn rb_concurrency_extend(max: f64, lease_ms: f64, id: f64, now: f64, extend_ms: f64, slot_count: f64) -> f64 {
    let io = io();
    let extended = config_of(max, lease_ms)
        .and_then(|config| Ok((config, lease_slots(io, &config, slot_count)?)))
        .and_then(|(config, slots)| extend_slots(&config, id, now, extend_ms, slots, &states(io, &config)[..config.max as usize]));
    match extended {
        Ok((expires_at_ms, writes)) => {
            put_writes(io, writes, Some(expires_at_ms));
            f64::from(writes.slots.count_ones())
        }
        Err(error) => put_error(io, OUT, &error),
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::buffer;
    use super::*;
    use crate::error::{Field, Rule};
    use crate::wasm::io::{OUT_FIELD, OUT_RULE};

    fn put_slot(io: &mut [f64; IO_LEN], slot: usize, state: Option<State>) {
        put_state(io, EXTRA + CONCURRENCY_STATES + 2 * slot, state);
    }

    fn answer(io: &[f64; IO_LEN]) -> (f64, f64, [f64; 2], f64) {
        let at = EXTRA + CONCURRENCY_ANSWER;
        (io[at + LEASE_SLOT_COUNT], io[at + LEASE_EXPIRES_AT], [io[at + LEASE_WRITE], io[at + LEASE_WRITE + 1]], io[at + LEASE_FULL_AT])
    }

    #[test]
    fn compile_answers_max_and_lease_or_the_coded_error() {
        let (_guard, io) = buffer();
        io[EXTRA + CONCURRENCY_FIELDS..EXTRA + CONCURRENCY_FIELDS + 4].copy_from_slice(&[2.0, 8.0, 2.0, 30_000.0]);
        assert_eq!(rb_concurrency_compile(), 0.0);
        assert_eq!((io[EXTRA + CONCURRENCY_MAX], io[EXTRA + CONCURRENCY_LEASE]), (8.0, 30_000.0));
        io[EXTRA + CONCURRENCY_FIELDS..EXTRA + CONCURRENCY_FIELDS + 4].copy_from_slice(&[2.0, 65.0, 0.0, 0.0]);
        assert_eq!(rb_concurrency_compile(), -f64::from(Error::config(Field::Max, Rule::ConcurrencyMax, 65.0).number()));
        assert_eq!((io[OUT + OUT_FIELD], io[OUT + OUT_RULE]), (Field::Max as u8 as f64, Rule::ConcurrencyMax as u8 as f64));
    }

    #[test]
    fn take_answers_the_slots_and_the_state_to_write_or_the_wait() {
        let (_guard, io) = buffer();
        put_slot(io, 0, Some(State { value: 7.0, ts: 1_500.0 }));
        put_slot(io, 1, None);
        put_slot(io, 2, Some(State { value: 5.0, ts: 900.0 }));
        assert_eq!(rb_concurrency_take(3.0, 1_000.0, 2.0, 9.0, 1_000.0), 1.0);
        assert_eq!(answer(io), (2.0, 2_000.0, [9.0, 2_000.0], 2_000.0));
        assert_eq!(&io[EXTRA + CONCURRENCY_SLOTS..EXTRA + CONCURRENCY_SLOTS + 2], &[1.0, 2.0]);
        assert_eq!(rb_concurrency_take(3.0, 1_000.0, 3.0, 9.0, 1_000.0), 0.0);
        assert_eq!((io[OUT + OUT_RETRY_AFTER], answer(io).0), (500.0, 0.0));
        let exceeds = Error::CountExceedsMax { count: 4.0, max: 3.0, shard_count: 1, reserve: false };
        assert_eq!(rb_concurrency_take(3.0, 1_000.0, 4.0, 9.0, 1_000.0), -f64::from(exceeds.number()));
    }

    #[test]
    fn release_and_extend_touch_only_the_slots_still_holding_the_id() {
        let (_guard, io) = buffer();
        put_slot(io, 0, Some(State { value: 9.0, ts: 2_000.0 }));
        put_slot(io, 1, Some(State { value: 7.0, ts: 2_000.0 }));
        io[EXTRA + CONCURRENCY_SLOTS..EXTRA + CONCURRENCY_SLOTS + 2].copy_from_slice(&[0.0, 1.0]);
        assert_eq!(rb_concurrency_extend(2.0, 1_000.0, 9.0, 1_500.0, 5_000.0, 2.0), 1.0);
        assert_eq!(answer(io), (1.0, 6_500.0, [9.0, 6_500.0], 6_500.0));
        io[EXTRA + CONCURRENCY_SLOTS..EXTRA + CONCURRENCY_SLOTS + 2].copy_from_slice(&[0.0, 1.0]);
        assert_eq!(rb_concurrency_release(2.0, 1_000.0, 9.0, 1_500.0, 2.0), 1.0);
        let (count, _, write, full_at) = answer(io);
        assert_eq!((count, io[EXTRA + CONCURRENCY_SLOTS], write[0].is_nan(), full_at), (1.0, 0.0, true, f64::NEG_INFINITY));
        io[EXTRA + CONCURRENCY_SLOTS..EXTRA + CONCURRENCY_SLOTS + 2].copy_from_slice(&[0.0, 1.0]);
        assert_eq!(rb_concurrency_release(2.0, 1_000.0, 9.0, 2_000.0, 2.0), 0.0, "expired: nothing to give back");
        assert_eq!(rb_concurrency_extend(2.0, 1_000.0, 9.0, 2_000.0, 5_000.0, 2.0), -f64::from(Error::LeaseLost.number()));
        io[EXTRA + CONCURRENCY_SLOTS] = 2.0;
        assert_eq!(rb_concurrency_release(2.0, 1_000.0, 9.0, 0.0, 1.0), -2.0, "slot 2 of a limit of 2");
        assert_eq!(io[OUT + OUT_FIELD], Field::LeaseSlots as u8 as f64);
    }
}
