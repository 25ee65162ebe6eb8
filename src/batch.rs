//! Several decisions over one read: `limitAll` and `checkAll` (all consumed
//! or none), and calls on the same keys coalesced into one transaction (each
//! decided in arrival order, as if one after the other). Items name their
//! states by slot, so two items on the same limit and key share one state
//! and the later one sees what the earlier one took.

use crate::config::Config;
use crate::error::Error;
use crate::limiter::{decide_planned, prepare, refused_wait, write_info, Outcome};
use crate::plan::plan;
use crate::request::Request;
use crate::result::RateLimitResult;
use crate::state::State;
#[cfg(not(target_arch = "wasm32"))]
use crate::state::{StateRef, StateStore};

/// One decision of a batch.
#[derive(Debug, Clone, Copy)]
pub struct Item {
    /// The limit's validated config.
    pub config: Config,
    /// What is asked of it.
    pub request: Request,
    /// Whether a grant is written (`limit`) or only answered (`check`).
    pub write: bool,
    /// The random numbers its plan draws ([`draws_needed`](crate::draws_needed) of them; the rest unused).
    pub draws: [f64; 4],
    /// The slots of the shards its plan reads (the second unused when it reads one).
    pub slots: [usize; 2],
    /// The call's clock, in ms (one for a whole all-or-nothing batch).
    pub now_ms: f64,
}

impl Item {
    /// An item that asks nothing, to fill storage with: all zero bits, so the module's scratch
    /// items live in zeroed memory instead of a data segment (nothing reads an item before a
    /// call writes it).
    pub const EMPTY: Item = Item {
        config: Config { kind: crate::config::Kind::TokenBucket, rate: 0.0, period_ms: 0.0, calendar: None, capacity: 0.0, max_reserved: None, shard_count: 0, start_ms: None },
        request: Request { count: 0.0, reserve: false },
        write: false,
        draws: [0.0; 4],
        slots: [0, 0],
        now_ms: 0.0,
    };
}

/// One state of a batch: as read, and as the batch's decisions so far left it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slot {
    /// What the store held (`None`: nothing).
    pub stored: Option<State>,
    /// What this batch will write there, if anything.
    pub pending: Option<State>,
    /// When `pending` is full again (see [`crate::full_at`]).
    pub full_at_ms: f64,
}

impl Default for Slot {
    fn default() -> Self {
        Slot::EMPTY
    }
}

impl Slot {
    /// Nothing read, nothing to write.
    pub const EMPTY: Slot = Slot { stored: None, pending: None, full_at_ms: 0.0 };

    /// The state the next decision sees.
    pub fn current(&self) -> Option<State> {
        self.pending.or(self.stored)
    }
}

/// How a batch's answers combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `limitAll`: every item is consumed, or none is; one answer.
    AllOrNothing,
    /// Coalesced calls: each item is its own call, decided after the ones before it.
    Each,
}

/// Decides `items` in order over `slots`, as `mode` says, each at its own `now_ms`.
/// `answer(index, outcome)` hears every item's own outcome; the slots' `pending`
/// states are then what to write (all cleared when an all-or-nothing batch
/// refuses). Returns the batch's answer (in `Each` mode, the last item's).
///
/// Every item is decided against the states the earlier items would leave.
/// All or nothing: when any is refused nothing is written and the answer is
/// refused with the largest wait of the batch, so a caller never holds some
/// limits while waiting for others; when all are granted, `retryAfter` is
/// the largest reservation wait, if any.
///
/// # Errors
/// All or nothing: the first item's error, after every item was prepared
/// (bad input fails before any decision). In `Each` mode, an item's error is
/// its own answer and the batch goes on.
pub fn decide_batch(
    items: &[Item],
    slots: &mut [Slot],
    mode: Mode,
    mut answer: impl FnMut(usize, &Result<Outcome, Error>),
) -> Result<RateLimitResult, Error> {
    if mode == Mode::AllOrNothing {
        for item in items {
            prepare(&item.config, item.request, item.now_ms)?;
        }
    }
    let mut all_ok = true;
    let mut longest_wait: Option<f64> = None;
    let mut last = RateLimitResult::allowed(None);
    for (index, item) in items.iter().enumerate() {
        let decided = decide_item(item, slots, mode);
        let outcome = decided.map(|(outcome, _)| outcome);
        answer(index, &outcome);
        let (outcome, shards) = match (decided, mode) {
            (Ok(decided), _) => decided,
            (Err(error), Mode::AllOrNothing) => {
                clear(slots);
                return Err(error);
            }
            (Err(_), Mode::Each) => continue,
        };
        last = outcome.result;
        all_ok &= outcome.result.is_ok();
        if let Some(wait) = outcome.result.retry_after_ms() {
            longest_wait = Some(longest_wait.map_or(wait, |longest| longest.max(wait)));
        }
        if item.write || mode == Mode::AllOrNothing {
            for (shard, state) in outcome.writes.iter().flatten() {
                let slot = &mut slots[item.slots[usize::from(*shard != shards[0])]];
                slot.pending = Some(*state);
                slot.full_at_ms = write_info(&item.config, *state, item.now_ms).full_at_ms;
            }
        }
    }
    if mode == Mode::Each {
        return Ok(last);
    }
    if !all_ok {
        clear(slots);
        return Ok(RateLimitResult::refused(refused_wait(longest_wait)));
    }
    if !items.iter().any(|item| item.write) {
        clear(slots);
    }
    Ok(RateLimitResult::allowed(longest_wait))
}

fn clear(slots: &mut [Slot]) {
    for slot in slots {
        slot.pending = None;
    }
}

/// An item's outcome, and the shards its plan read.
fn decide_item(item: &Item, slots: &[Slot], mode: Mode) -> Result<(Outcome, [u32; 2]), Error> {
    let now_ms = item.now_ms;
    if mode == Mode::Each {
        prepare(&item.config, item.request, now_ms)?;
    }
    let planned = plan(&item.config, now_ms, &item.draws)?;
    let mut stored = [None, None];
    for (index, state) in stored.iter_mut().enumerate().take(planned.reads) {
        *state = slots[item.slots[index]].current();
    }
    Ok((decide_planned(&item.config, item.request, now_ms, &planned, stored)?, planned.shards))
}

/// One limit of a [`limit_all`] batch, for the reference driver.
#[cfg(not(target_arch = "wasm32"))]
#[derive(Debug, Clone, Copy)]
pub struct BatchItem<'a> {
    /// The limit's name.
    pub name: &'a str,
    /// The key, or `None` for the shared state.
    pub key: Option<&'a str>,
    /// The limit's validated config.
    pub config: &'a Config,
    /// What is asked of it.
    pub request: Request,
    /// Its random numbers.
    pub draws: &'a [f64],
}

/// `limitAll` (when `write`) or `checkAll` over `store`: plans every item,
/// reads each distinct state once, decides them together, and writes all
/// or nothing.
///
/// # Errors
/// As [`decide_batch`], or the store's error; in every case nothing is written.
#[cfg(not(target_arch = "wasm32"))]
pub fn limit_all<S: StateStore>(store: &mut S, items: &[BatchItem<'_>], now_ms: f64, write: bool) -> Result<RateLimitResult, S::Error> {
    // Every item is checked, then planned (its random numbers included), before any read.
    for item in items {
        prepare(item.config, item.request, now_ms)?;
    }
    let mut plans = Vec::with_capacity(items.len());
    for item in items {
        plans.push(plan(item.config, now_ms, item.draws)?);
    }
    let mut refs: Vec<(&str, Option<&str>, u32)> = Vec::new();
    let mut slots: Vec<Slot> = Vec::new();
    let mut batch = Vec::with_capacity(items.len());
    for (item, planned) in items.iter().zip(plans) {
        let mut item_slots = [0, 0];
        for (index, slot_index) in item_slots.iter_mut().enumerate().take(planned.reads) {
            let at = (item.name, item.key, planned.shards[index]);
            *slot_index = match refs.iter().position(|known| *known == at) {
                Some(known) => known,
                None => {
                    let stored = store.read(StateRef { name: at.0, key: at.1, shard: at.2 })?;
                    refs.push(at);
                    slots.push(Slot { stored, ..Slot::default() });
                    refs.len() - 1
                }
            };
        }
        let mut draws = [0.0; 4];
        for (slot, drawn) in draws.iter_mut().zip(item.draws) {
            *slot = *drawn;
        }
        batch.push(Item { config: *item.config, request: item.request, write, draws, slots: item_slots, now_ms });
    }
    let result = decide_batch(&batch, &mut slots, Mode::AllOrNothing, |_, _| {})?;
    for ((name, key, shard), slot) in refs.iter().zip(&slots) {
        if let Some(state) = slot.pending {
            let info = crate::state::WriteInfo { now_ms, full_at_ms: slot.full_at_ms };
            store.write(StateRef { name, key: *key, shard: *shard }, Some(state), info)?;
        }
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigInput;
    use crate::error::{Field, Rule};

    fn config(input: ConfigInput) -> Config {
        Config::try_from(&input).unwrap()
    }

    fn both_kinds() -> [Config; 2] {
        [ConfigInput::token_bucket(10.0, 1_000.0), ConfigInput::fixed_window(10.0, 1_000.0).with("start", 0.0)].map(config)
    }

    /// An item on slot `slot` of an unsharded limit (it draws nothing).
    fn item(config: &Config, count: f64, write: bool, slot: usize, now_ms: f64) -> Item {
        Item { config: *config, request: Request { count, reserve: false }, write, draws: [0.0; 4], slots: [slot, slot], now_ms }
    }

    /// Runs the batch and collects each item's own answer (`None` for an error).
    fn run(items: &[Item], slots: &mut [Slot], mode: Mode) -> (Result<RateLimitResult, Error>, Vec<Option<RateLimitResult>>) {
        let mut answers = vec![None; items.len()];
        let result = decide_batch(items, slots, mode, |index, outcome| answers[index] = outcome.as_ref().ok().map(|outcome| outcome.result));
        (result, answers)
    }

    #[test]
    fn coalesced_calls_on_one_key_are_decided_one_after_the_other() {
        for limit in &both_kinds() {
            let mut slots = [Slot::default()];
            let items = [item(limit, 6.0, true, 0, 0.0), item(limit, 6.0, true, 0, 0.0), item(limit, 4.0, true, 0, 0.0)];
            let (result, answers) = run(&items, &mut slots, Mode::Each);
            // The second sees the first's 6 taken: refused; the third fits in the 4 left.
            assert!(answers[0].is_some_and(|answer| answer.is_ok()));
            assert!(answers[1].is_some_and(|answer| !answer.is_ok()));
            assert_eq!(answers[2], Some(RateLimitResult::allowed(None)));
            assert_eq!(result, Ok(RateLimitResult::allowed(None)), "the last item's answer");
            assert_eq!(slots[0].pending, Some(State { value: 0.0, ts: 0.0 }));
            // And from when it may be dropped (windows from 0: a finite instant for both).
            assert_eq!(slots[0].full_at_ms, crate::full_at(State { value: 0.0, ts: 0.0 }, limit));
        }
    }

    #[test]
    fn a_coalesced_check_takes_nothing_from_the_calls_after_it() {
        for limit in &both_kinds() {
            let mut slots = [Slot::default()];
            let items = [item(limit, 10.0, false, 0, 0.0), item(limit, 10.0, true, 0, 0.0)];
            let (result, answers) = run(&items, &mut slots, Mode::Each);
            assert_eq!(answers, vec![Some(RateLimitResult::allowed(None)); 2]);
            assert_eq!(result, Ok(RateLimitResult::allowed(None)));
            assert_eq!(slots[0].pending, Some(State { value: 0.0, ts: 0.0 }));
            // A check alone leaves nothing to write.
            let mut slots = [Slot::default()];
            run(&items[..1], &mut slots, Mode::Each).0.unwrap();
            assert_eq!(slots[0].pending, None);
        }
    }

    #[test]
    fn a_coalesced_call_with_bad_input_is_its_own_error_and_the_others_go_on() {
        for limit in &both_kinds() {
            let mut slots = [Slot::default()];
            let items = [item(limit, 3.0, true, 0, 0.0), item(limit, -1.0, true, 0, 0.0), item(limit, 11.0, true, 0, 0.0), item(limit, 3.0, true, 0, 0.0)];
            let mut errors = Vec::new();
            let result = decide_batch(&items, &mut slots, Mode::Each, |index, outcome| {
                if let Err(error) = outcome {
                    errors.push((index, *error));
                }
            });
            assert_eq!(errors, vec![
                (1, Error::request(Field::Count, Rule::FiniteNonNegative, -1.0)),
                (2, Error::CountExceedsMax { count: 11.0, max: 10.0, shard_count: 1, reserve: false }),
            ]);
            assert_eq!(result, Ok(RateLimitResult::allowed(None)));
            assert_eq!(slots[0].pending, Some(State { value: 4.0, ts: 0.0 }));
        }
    }

    #[test]
    fn all_or_nothing_with_bad_input_is_that_error_before_any_decision() {
        for limit in &both_kinds() {
            let mut slots = [Slot::default(), Slot::default()];
            let items = [item(limit, 3.0, true, 0, 0.0), item(limit, -1.0, true, 1, 0.0)];
            let mut heard = 0;
            let result = decide_batch(&items, &mut slots, Mode::AllOrNothing, |_, _| heard += 1);
            assert_eq!(result, Err(Error::request(Field::Count, Rule::FiniteNonNegative, -1.0)));
            assert_eq!(heard, 0, "no item was decided");
            assert_eq!(slots.map(|slot| slot.pending), [None, None]);
        }
    }

    #[test]
    fn all_or_nothing_decides_each_item_on_what_the_earlier_ones_leave_and_writes_only_when_one_writes() {
        for limit in &both_kinds() {
            // checkAll: 6 and 6 on one state: the second is refused, nothing to write.
            let mut slots = [Slot::default()];
            let checks = [item(limit, 6.0, false, 0, 0.0), item(limit, 6.0, false, 0, 0.0)];
            assert!(!run(&checks, &mut slots, Mode::AllOrNothing).0.unwrap().is_ok());
            // checkAll of 4 and 6: granted, and still nothing to write.
            let checks = [item(limit, 4.0, false, 0, 0.0), item(limit, 6.0, false, 0, 0.0)];
            assert_eq!(run(&checks, &mut slots, Mode::AllOrNothing).0, Ok(RateLimitResult::allowed(None)));
            assert_eq!(slots[0].pending, None);
            // limitAll of 4 and 6: both written to the one state.
            let limits = [item(limit, 4.0, true, 0, 0.0), item(limit, 6.0, true, 0, 0.0)];
            assert_eq!(run(&limits, &mut slots, Mode::AllOrNothing).0, Ok(RateLimitResult::allowed(None)));
            assert_eq!(slots[0].pending, Some(State { value: 0.0, ts: 0.0 }));
        }
    }

    #[test]
    fn all_or_nothing_waits_for_the_longest_reservation_and_refuses_with_the_longest_wait() {
        let limit = config(ConfigInput::token_bucket(10.0, 1_000.0));
        let reserve = |count: f64, slot: usize| Item { request: Request { count, reserve: true }, ..item(&limit, count, true, slot, 0.0) };
        let mut slots = [Slot { stored: Some(State { value: 0.0, ts: 0.0 }), ..Slot::default() }, Slot::default()];
        // 2 owed on one (200 ms), 15 of 10 on the other (500 ms).
        let items = [reserve(2.0, 0), reserve(15.0, 1)];
        assert_eq!(run(&items, &mut slots, Mode::AllOrNothing).0, Ok(RateLimitResult::allowed(Some(500.0))));
        // Refused on one (empty: 100 ms for 1), reserved on the other: refused, with the longer wait, nothing written.
        let mut slots = [Slot { stored: Some(State { value: 0.0, ts: 0.0 }), ..Slot::default() }, Slot::default()];
        let items = [item(&limit, 1.0, true, 0, 0.0), reserve(13.0, 1)];
        assert_eq!(run(&items, &mut slots, Mode::AllOrNothing).0, Ok(RateLimitResult::refused(300.0)));
        assert_eq!(slots.map(|slot| slot.pending), [None, None]);
    }
}
