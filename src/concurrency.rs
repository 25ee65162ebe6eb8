//! Concurrency limits with leases: at most `max` slots held at any instant,
//! each taken by a lease that ends when it is released or when it expires
//! (a crashed holder never leaks a slot).
//!
//! A concurrency limit is `max` stored states, one per slot, at shards
//! `0..max` of its name and key (no token limit's shard: a name is one kind of
//! limit). A slot's state is `{ value: the holder's lease id, ts: its expiry
//! in ms }`; a slot is free when it has no state, its value is 0, or its
//! expiry has come (`ts <= now`). Every decision reads the slots, decides
//! here, and writes one state to the slots it names ([`SlotWrites`]): the
//! host's transaction (or a port next to the data) makes it atomic.
//!
//! The lease id is the host's draw (an integer from 1 to 2^53), passed in: the
//! core stays pure. A release or an extend changes only the slots that still
//! hold that id and have not expired, so a second release, a stale lease or a
//! forged one gives back nothing.

use crate::config::{Given, MAX_INSTANT_MS};
use crate::error::{Error, Field, Problem, Rule};
use crate::state::State;

/// The most slots a concurrency limit may have: one decision reads them all
/// in one batch (64 states: within a Durable Object's `get` of 128 keys, a
/// Redis script's 256 keys, and one `u64` of slots).
pub const MAX_CONCURRENCY: u32 = 64;

/// A concurrency limit's fields as the caller wrote them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConcurrencyInput {
    /// How many slots may be held at once.
    pub max: Given,
    /// How long a lease holds its slots unless released or extended, in ms.
    pub lease: Given,
}

/// A validated concurrency limit: `1 <= max <= MAX_CONCURRENCY`, `lease_ms` positive and finite.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConcurrencyConfig {
    /// How many slots may be held at once.
    pub max: u32,
    /// How long a lease holds its slots, in ms.
    pub lease_ms: f64,
}

impl TryFrom<&ConcurrencyInput> for ConcurrencyConfig {
    type Error = Error;

    /// Validates `max`, then `lease`.
    ///
    /// ```
    /// use ratebound::{ConcurrencyConfig, ConcurrencyInput, Error, Field, Given, Rule};
    /// let input = ConcurrencyInput { max: Given::Number(65.0), lease: Given::Number(30_000.0) };
    /// assert_eq!(ConcurrencyConfig::try_from(&input), Err(Error::config(Field::Max, Rule::ConcurrencyMax, 65.0)));
    /// ```
    fn try_from(input: &ConcurrencyInput) -> Result<ConcurrencyConfig, Error> {
        let max = match input.max {
            Given::Number(max) if crate::math::fract(max) == 0.0 && (1.0..=f64::from(MAX_CONCURRENCY)).contains(&max) => max as u32,
            Given::Number(max) => return Err(Error::config(Field::Max, Rule::ConcurrencyMax, max)),
            _ => return Err(Error::config(Field::Max, Rule::ConcurrencyMax, f64::NAN)),
        };
        let lease_ms = match input.lease {
            Given::Number(lease) if lease.is_finite() && lease > 0.0 => lease,
            Given::Number(lease) => return Err(Error::config(Field::Lease, Rule::PositiveFinite, lease)),
            _ => return Err(Error::config(Field::Lease, Rule::PositiveFinite, f64::NAN)),
        };
        Ok(ConcurrencyConfig { max, lease_ms })
    }
}

/// A set of slots, bit `s` for slot `s`.
pub type Slots = u64;

/// The slots in `slots`, lowest first.
pub fn slot_list(slots: Slots) -> impl Iterator<Item = u32> {
    (0..MAX_CONCURRENCY).filter(move |slot| slots & (1u64 << slot) != 0)
}

/// What one decision writes: the same state (`None`: delete) to every slot of `slots`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlotWrites {
    /// The slots written.
    pub slots: Slots,
    /// The state each gets; `None` deletes it.
    pub state: Option<State>,
}

impl SlotWrites {
    /// Nothing written.
    pub const NONE: SlotWrites = SlotWrites { slots: 0, state: None };
}

/// The answer to taking slots.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Taken {
    /// The lease holds `slots` until `expires_at_ms`.
    Granted {
        /// The slots taken.
        slots: Slots,
        /// When the lease expires unless extended, in ms.
        expires_at_ms: f64,
    },
    /// Not enough free slots: enough will be free in `retry_after_ms` at
    /// the earliest (when the held leases expire; sooner if released).
    Refused {
        /// ms from now.
        retry_after_ms: f64,
    },
}

/// Whether a slot's state holds it at `now_ms`.
fn held(state: Option<State>, now_ms: f64) -> bool {
    state.is_some_and(|state| state.value != 0.0 && state.ts > now_ms)
}

/// Whether a slot's state holds it for lease `id` at `now_ms`.
fn held_by(state: Option<State>, id: f64, now_ms: f64) -> bool {
    held(state, now_ms) && state.is_some_and(|state| state.value == id)
}

/// `now`: a finite number of ms.
fn check_now(now_ms: f64) -> Result<(), Error> {
    match now_ms.is_finite() {
        true => Ok(()),
        false => Err(Error::request(Field::Now, Rule::FiniteMs, now_ms)),
    }
}

/// A lease's id: an integer from 1 to 2^53 (exact as a number, never 0, which marks a free slot).
///
/// # Errors
/// [`Error::InvalidRequest`] naming `lease.id`.
pub fn check_lease_id(id: f64) -> Result<f64, Error> {
    match crate::math::fract(id) == 0.0 && (1.0..=MAX_INSTANT_MS).contains(&id) {
        true => Ok(id),
        false => Err(Error::request(Field::LeaseId, Rule::LeaseIdRange, id)),
    }
}

/// When a lease of `lease_ms` taken or extended at `now_ms` expires: after `now_ms`, and finite.
fn expiry(lease_ms: f64, now_ms: f64) -> Result<f64, Error> {
    let expires_at_ms = now_ms + lease_ms;
    if !expires_at_ms.is_finite() {
        return Err(Error::InvalidRequest(Problem::with_numbers(Field::Lease, Rule::Unstorable, [f64::NAN, expires_at_ms, f64::NAN])));
    }
    if expires_at_ms <= now_ms {
        let resolution_ms = now_ms.abs().next_up() - now_ms.abs();
        return Err(Error::InvalidConfig(Problem::with_numbers(Field::Lease, Rule::LeaseResolution, [lease_ms, now_ms, resolution_ms])));
    }
    Ok(expires_at_ms)
}

/// The slots a lease names (`slots` of a limit of `max`): checked against the limit.
///
/// # Errors
/// [`Error::InvalidRequest`] naming `lease.slots` for a slot that is not an
/// integer below `max`, or one named twice.
pub fn check_slots(config: &ConcurrencyConfig, slots: &[f64]) -> Result<Slots, Error> {
    let mut set: Slots = 0;
    for slot in slots {
        let bad = || Error::InvalidRequest(Problem::with_numbers(Field::LeaseSlots, Rule::LeaseSlot, [*slot, f64::from(config.max), f64::NAN]));
        if !(crate::math::fract(*slot) == 0.0 && (0.0..f64::from(config.max)).contains(slot)) || set & (1u64 << (*slot as u32)) != 0 {
            return Err(bad());
        }
        set |= 1u64 << (*slot as u32);
    }
    Ok(set)
}

/// Takes `count` slots for lease `id` at `now_ms`, from the slots' states as
/// read (`stored[s]` for slot `s`, `None`: no state; `config.max` of them).
///
/// Granted: the lowest free slots, each written `{ value: id, ts: now + lease }`.
/// Refused: nothing written, and the wait until `count` slots can be free
/// (the `count - free`-th earliest expiry of the held slots).
///
/// ```
/// use ratebound::{take_slots, ConcurrencyConfig, State, Taken};
/// let config = ConcurrencyConfig { max: 2, lease_ms: 1_000.0 };
/// let held = Some(State { value: 7.0, ts: 1_500.0 });
/// let (taken, writes) = take_slots(&config, 1.0, 9.0, 1_000.0, &[held, None]).unwrap();
/// assert_eq!(taken, Taken::Granted { slots: 0b10, expires_at_ms: 2_000.0 });
/// assert_eq!(writes.state, Some(State { value: 9.0, ts: 2_000.0 }));
/// let (refused, _) = take_slots(&config, 2.0, 9.0, 1_000.0, &[held, None]).unwrap();
/// assert_eq!(refused, Taken::Refused { retry_after_ms: 500.0 });
/// ```
///
/// # Errors
/// [`Error::InvalidRequest`] for a `now`, `count` or `id` out of range, or
/// `stored` not `max` long; [`Error::CountExceedsMax`] for more than `max`;
/// [`Error::InvalidConfig`] for a lease the clock cannot resolve at `now`.
pub fn take_slots(config: &ConcurrencyConfig, count: f64, id: f64, now_ms: f64, stored: &[Option<State>]) -> Result<(Taken, SlotWrites), Error> {
    check_now(now_ms)?;
    if !(crate::math::fract(count) == 0.0 && count >= 1.0) {
        return Err(Error::request(Field::Count, Rule::IntegerAtLeastOne, count));
    }
    if count > f64::from(config.max) {
        return Err(Error::CountExceedsMax { count, max: f64::from(config.max), shard_count: 1, reserve: false });
    }
    check_lease_id(id)?;
    check_stored(config, stored)?;
    let expires_at_ms = expiry(config.lease_ms, now_ms)?;
    let wanted = count as usize;
    let mut slots: Slots = 0;
    for slot in (0..stored.len()).filter(|slot| !held(stored[*slot], now_ms)).take(wanted) {
        slots |= 1u64 << slot;
    }
    if slots.count_ones() as usize == wanted {
        return Ok((Taken::Granted { slots, expires_at_ms }, SlotWrites { slots, state: Some(State { value: id, ts: expires_at_ms }) }));
    }
    // Refused: the held slots' expiries, earliest first; the (count - free)-th frees enough.
    let mut expiries = [f64::INFINITY; MAX_CONCURRENCY as usize];
    let mut held_count = 0;
    for state in stored.iter().flatten().filter(|state| held(Some(**state), now_ms)) {
        expiries[held_count] = state.ts;
        held_count += 1;
    }
    let expiries = &mut expiries[..held_count];
    expiries.sort_unstable_by(f64::total_cmp);
    let short = wanted - slots.count_ones() as usize;
    Ok((Taken::Refused { retry_after_ms: expiries[short - 1] - now_ms }, SlotWrites::NONE))
}

/// How many of a limit's slots are held at `now_ms` (`stored[s]` is slot
/// `s`'s state as read, `config.max` of them): what `getValue` answers. A slot
/// is held as [`take_slots`] sees it: a lease id, an expiry after `now_ms`.
///
/// ```
/// use ratebound::{held_slots, ConcurrencyConfig, State};
/// let config = ConcurrencyConfig { max: 3, lease_ms: 1_000.0 };
/// let stored = [Some(State { value: 9.0, ts: 2_000.0 }), Some(State { value: 7.0, ts: 1_000.0 }), None];
/// assert_eq!(held_slots(&config, 1_000.0, &stored).unwrap(), 1);
/// ```
///
/// # Errors
/// [`Error::InvalidRequest`] for a bad `now` or `stored`.
pub fn held_slots(config: &ConcurrencyConfig, now_ms: f64, stored: &[Option<State>]) -> Result<u32, Error> {
    check_now(now_ms)?;
    check_stored(config, stored)?;
    Ok(stored.iter().filter(|state| held(**state, now_ms)).count() as u32)
}

/// `stored`: one state per slot, finite numbers.
fn check_stored(config: &ConcurrencyConfig, stored: &[Option<State>]) -> Result<(), Error> {
    if stored.len() != config.max as usize {
        return Err(Error::InvalidRequest(Problem::with_numbers(Field::LeaseSlots, Rule::LeaseSlot, [stored.len() as f64, f64::from(config.max), f64::NAN])));
    }
    crate::limiter::check_writes(stored.iter().flatten())
}

/// Releases lease `id` at `now_ms` on the slots it names (`slots`; `stored[s]`
/// is slot `s`'s state as read, `config.max` of them, only those of `slots`
/// looked at): deletes each that still holds `id` unexpired. Answers how many
/// it gave back: 0 for a second release, an expired lease or a forged one,
/// which write nothing.
///
/// ```
/// use ratebound::{release_slots, ConcurrencyConfig, State};
/// let config = ConcurrencyConfig { max: 2, lease_ms: 1_000.0 };
/// let stored = [Some(State { value: 9.0, ts: 2_000.0 }), Some(State { value: 7.0, ts: 2_000.0 })];
/// let (released, writes) = release_slots(&config, 9.0, 1_000.0, 0b11, &stored).unwrap();
/// assert_eq!((released, writes.slots, writes.state), (1, 0b01, None));
/// ```
///
/// # Errors
/// [`Error::InvalidRequest`] for a bad `now`, `id` or `stored`.
pub fn release_slots(config: &ConcurrencyConfig, id: f64, now_ms: f64, slots: Slots, stored: &[Option<State>]) -> Result<(u32, SlotWrites), Error> {
    check_now(now_ms)?;
    check_lease_id(id)?;
    check_stored(config, stored)?;
    let mine = still_held(id, now_ms, slots, stored);
    Ok((mine.count_ones(), SlotWrites { slots: mine, state: None }))
}

/// Of `slots`, those whose state still holds `id` at `now_ms`.
fn still_held(id: f64, now_ms: f64, slots: Slots, stored: &[Option<State>]) -> Slots {
    slot_list(slots).filter(|slot| held_by(stored.get(*slot as usize).copied().flatten(), id, now_ms)).fold(0, |set, slot| set | 1u64 << slot)
}

/// Extends lease `id` at `now_ms` so that it expires no earlier than
/// `now + extend_ms` (it never shortens): the slots of `slots` that still
/// hold `id` unexpired get the new expiry, which is answered.
///
/// ```
/// use ratebound::{extend_slots, ConcurrencyConfig, Error, State};
/// let config = ConcurrencyConfig { max: 1, lease_ms: 1_000.0 };
/// let stored = [Some(State { value: 9.0, ts: 2_000.0 })];
/// let (expires_at_ms, writes) = extend_slots(&config, 9.0, 1_500.0, 5_000.0, 0b1, &stored).unwrap();
/// assert_eq!((expires_at_ms, writes.state), (6_500.0, Some(State { value: 9.0, ts: 6_500.0 })));
/// assert_eq!(extend_slots(&config, 9.0, 2_000.0, 5_000.0, 0b1, &stored), Err(Error::LeaseLost));
/// ```
///
/// # Errors
/// [`Error::LeaseLost`] when no slot of `slots` still holds `id` (expired,
/// released, or never this lease's), writing nothing; [`Error::InvalidRequest`]
/// for a bad `now`, `id`, `stored` or `extend_ms` (a positive finite number of ms).
pub fn extend_slots(config: &ConcurrencyConfig, id: f64, now_ms: f64, extend_ms: f64, slots: Slots, stored: &[Option<State>]) -> Result<(f64, SlotWrites), Error> {
    check_now(now_ms)?;
    check_lease_id(id)?;
    if !(extend_ms.is_finite() && extend_ms > 0.0) {
        return Err(Error::request(Field::Lease, Rule::PositiveFinite, extend_ms));
    }
    check_stored(config, stored)?;
    let mine = still_held(id, now_ms, slots, stored);
    let Some(slot) = slot_list(mine).next() else {
        return Err(Error::LeaseLost);
    };
    let current_ms = stored[slot as usize].map_or(now_ms, |state| state.ts);
    let expires_at_ms = expiry(extend_ms, now_ms)?.max(current_ms);
    Ok((expires_at_ms, SlotWrites { slots: mine, state: Some(State { value: id, ts: expires_at_ms }) }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(max: f64, lease: f64) -> Result<ConcurrencyConfig, Error> {
        ConcurrencyConfig::try_from(&ConcurrencyInput { max: Given::Number(max), lease: Given::Number(lease) })
    }

    #[test]
    fn max_is_an_integer_from_1_to_64_and_lease_a_positive_finite_number_of_ms() {
        assert_eq!(config(64.0, 1.0), Ok(ConcurrencyConfig { max: 64, lease_ms: 1.0 }));
        for max in [0.0, 65.0, 1.5, -1.0, f64::NAN, f64::INFINITY] {
            assert_eq!(config(max, 1.0).unwrap_err().problem().map(|problem| (problem.field, problem.rule)), Some((Field::Max, Rule::ConcurrencyMax)));
        }
        for lease in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert_eq!(config(4.0, lease).unwrap_err().problem().map(|problem| problem.field), Some(Field::Lease));
        }
        let absent = ConcurrencyInput { max: Given::Number(2.0), lease: Given::Absent };
        assert!(ConcurrencyConfig::try_from(&absent).is_err());
    }

    #[test]
    fn an_expired_slot_is_free_and_a_slot_expiring_at_now_is_too() {
        let limit = config(1.0, 100.0).unwrap();
        let (taken, _) = take_slots(&limit, 1.0, 2.0, 50.0, &[Some(State { value: 1.0, ts: 50.0 })]).unwrap();
        assert_eq!(taken, Taken::Granted { slots: 1, expires_at_ms: 150.0 });
        let (taken, _) = take_slots(&limit, 1.0, 2.0, 49.0, &[Some(State { value: 1.0, ts: 50.0 })]).unwrap();
        assert_eq!(taken, Taken::Refused { retry_after_ms: 1.0 });
    }

    #[test]
    fn bad_counts_ids_and_clocks_are_coded_errors() {
        let limit = config(2.0, 100.0).unwrap();
        let free = [None, None];
        assert!(matches!(take_slots(&limit, 3.0, 1.0, 0.0, &free), Err(Error::CountExceedsMax { .. })));
        for count in [0.0, 1.5, f64::NAN, -1.0] {
            assert_eq!(take_slots(&limit, count, 1.0, 0.0, &free).unwrap_err().field(), Some(Field::Count));
        }
        for id in [0.0, -1.0, 1.5, MAX_INSTANT_MS * 2.0, f64::NAN] {
            assert_eq!(take_slots(&limit, 1.0, id, 0.0, &free).unwrap_err().field(), Some(Field::LeaseId));
        }
        assert_eq!(take_slots(&limit, 1.0, 1.0, f64::NAN, &free).unwrap_err().field(), Some(Field::Now));
        let tiny = config(1.0, 1e-3).unwrap();
        let rule = take_slots(&tiny, 1.0, 1.0, 1.7e15, &[None]).unwrap_err().problem().map(|problem| problem.rule);
        assert_eq!(rule, Some(Rule::LeaseResolution));
    }

    #[test]
    fn a_lease_names_each_slot_of_the_limit_once() {
        let limit = config(3.0, 100.0).unwrap();
        assert_eq!(check_slots(&limit, &[0.0, 2.0]), Ok(0b101));
        for bad in [&[3.0][..], &[0.0, 0.0], &[-1.0], &[0.5]] {
            assert_eq!(check_slots(&limit, bad).unwrap_err().field(), Some(Field::LeaseSlots));
        }
    }

    #[test]
    fn extending_never_shortens_a_lease() {
        let limit = config(1.0, 100.0).unwrap();
        let stored = [Some(State { value: 5.0, ts: 1_000.0 })];
        let (expires_at_ms, writes) = extend_slots(&limit, 5.0, 0.0, 10.0, 1, &stored).unwrap();
        assert_eq!((expires_at_ms, writes.slots), (1_000.0, 1));
        assert_eq!(extend_slots(&limit, 6.0, 0.0, 10.0, 1, &stored), Err(Error::LeaseLost));
        assert_eq!(extend_slots(&limit, 5.0, 0.0, 0.0, 1, &stored).unwrap_err().field(), Some(Field::Lease));
    }
}
