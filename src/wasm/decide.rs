//! The exports of a decision: the buffer's address and layout, compiling a
//! config, planning and deciding items. Each reads its numbers from the
//! buffer ([`io`]), runs the core, and writes the answer back; a negative
//! return is an error's `-code`, with its details in the answer's record (`OUT`).

use super::io::{
    self, config_at, io, or_nan, put_config, put_error, put_state, request_at, state_at, BATCH_WAIT, COMPILED_DRAWS, COMPILED_SETTLE_DRAWS, COMPILE_FIELDS,
    COMPILE_KIND, EXTRA, FIGURE_LIMIT, FIGURE_REMAINING, FIGURE_RESET, FIGURE_RETRY_AFTER, FIGURE_EFFECTIVE_WINDOW, FIGURE_SAMPLED, FIGURE_WINDOW, ITEM, ITEM_DRAWS, ITEM_FIGURES,
    ITEM_NOW, ITEM_WRITE, MAP, OUT, OUT_FIGURES, OUT_RETRY_AFTER, OUT_SHARES, OUT_STATUS, OUT_STRIDE, PLAN, PLAN_CAPACITY, PLAN_FIRST, PLAN_FRESH,
    PLAN_MAX_RESERVED, PLAN_PERIOD, PLAN_RATE, PLAN_WINDOW_END, PLAN_WINDOW_LONGEST, PLAN_WINDOW_START, PLAN_READS, PLAN_SECOND, PLAN_STATUS, PLAN_STRIDE, SLOT, SLOTS, SLOT_FULL_AT, SLOT_PENDING, SLOT_STORED,
};
use crate::batch::{decide_batch, Item, Mode, Slot};
use crate::calendar::CalendarUnit;
use crate::fixed_window::calendar_window;
use crate::error::Error;
use super::io::{MAX_ITEMS, MAX_SLOTS};
use crate::config::{Config, ConfigInput, Given, GivenKind, Kind};
use crate::figures::Figures;
use crate::limiter::{decide_planned, prepare, write_info, Outcome};
use crate::plan::{draws_needed, plan};
use crate::settle::settle_draws_needed;

/// The buffer's address in memory.
#[no_mangle]
pub extern "C" fn rb_io() -> usize {
    io::io_address()
}

/// The layout: 0 `ITEMS`, 1 `PLAN`, 2 `MAP`, 3 `SLOTS`, 4 `OUT`, 5 `EXTRA`,
/// 6 item stride, 7 plan stride, 8 slot stride, 9 answer stride, 10 most
/// items, 11 most slots, 12 the buffer's length. (The package has the same
/// numbers, generated, in `ts/core/boundary.ts`.)
#[no_mangle]
pub extern "C" fn rb_layout(which: u32) -> u32 {
    let value = match which {
        0 => io::ITEMS,
        1 => PLAN,
        2 => MAP,
        3 => SLOTS,
        4 => OUT,
        5 => EXTRA,
        6 => ITEM,
        7 => PLAN_STRIDE,
        8 => SLOT,
        9 => OUT_STRIDE,
        10 => io::MAX_ITEMS,
        11 => io::MAX_SLOTS,
        12 => io::IO_LEN,
        _ => 0,
    };
    value as u32
}

pub(super) fn given(tag: f64, value: f64) -> Given {
    match tag as u8 {
        0 => Given::Absent,
        1 => Given::Null,
        2 => Given::Number(value),
        tag if usize::from(tag) == super::io::COMPILE_TAG_CALENDAR => CalendarUnit::from_code(value).map_or(Given::Other, Given::Calendar),
        _ => Given::Other,
    }
}

/// Validates a config: `EXTRA` holds `kind` (0 token bucket, 1 fixed window,
/// 2 sliding window, 3 anything else), then a (tag, value) pair for `rate`, `period`,
/// `capacity`, `maxReserved`, `shards`, `start` (tags: 0 absent, 1 null,
/// 2 number, 3 anything else). Answers at `EXTRA` the seven numbers of the
/// config, how many draws a decision on it takes, and how many a settle does.
#[no_mangle]
pub extern "C" fn rb_compile() -> f64 {
    let io = io();
    let kind = match io[EXTRA + COMPILE_KIND] as u8 {
        0 => GivenKind::Known(Kind::TokenBucket),
        1 => GivenKind::Known(Kind::FixedWindow),
        2 => GivenKind::Known(Kind::SlidingWindow),
        _ => GivenKind::Other,
    };
    let field = |index: usize| given(io[EXTRA + COMPILE_FIELDS + 2 * index], io[EXTRA + COMPILE_FIELDS + 1 + 2 * index]);
    let input = ConfigInput {
        kind,
        rate: field(0),
        period: field(1),
        capacity: field(2),
        max_reserved: field(3),
        shards: field(4),
        start: field(5),
    };
    match Config::try_from(&input) {
        Ok(config) => {
            put_config(io, EXTRA + io::COMPILED_CONFIG, &config);
            io[EXTRA + COMPILED_DRAWS] = draws_needed(&config) as f64;
            io[EXTRA + COMPILED_SETTLE_DRAWS] = settle_draws_needed(&config) as f64;
            0.0
        }
        Err(error) => put_error(io, OUT, &error),
    }
}

/// Where item `index`'s record starts.
pub(super) fn item_at(index: usize) -> usize {
    io::ITEMS + index * ITEM
}

/// The four draws of the item at `item`.
pub(super) fn draws_of(io: &[f64], item: usize) -> [f64; 4] {
    core::array::from_fn(|draw| io[item + ITEM_DRAWS + draw])
}

/// Plans items `0..count`: checks each call (bad input fails here, before
/// any read) and names the shards it reads, in `PLAN`. Returns 0, or the
/// first error's `-code` (each item's status is in its plan and answer).
#[no_mangle]
pub extern "C" fn rb_plan(count: u32) -> f64 {
    let io = io();
    let mut first_error = 0.0;
    for index in 0..(count as usize).min(io::MAX_ITEMS) {
        let item = item_at(index);
        let config = config_at(io, item);
        let now = io[item + ITEM_NOW];
        let planned = prepare(&config, request_at(io, item), now).and_then(|()| plan(&config, now, &draws_of(io, item)));
        let at = PLAN + index * PLAN_STRIDE;
        match planned {
            Ok(planned) => {
                io[at + PLAN_FIRST] = f64::from(planned.shards[0]);
                io[at + PLAN_SECOND] = f64::from(planned.shards[1]);
                io[at + PLAN_READS] = planned.reads as f64;
                put_state(io, at + PLAN_FRESH, Some(planned.fresh[0]));
                put_state(io, at + PLAN_FRESH + 2, Some(planned.fresh[1]));
                io[at + PLAN_STATUS] = 0.0;
                let shard = config.per_shard();
                io[at + PLAN_RATE] = shard.rate;
                io[at + PLAN_CAPACITY] = shard.capacity;
                io[at + PLAN_MAX_RESERVED] = or_nan(shard.max_reserved);
                io[at + PLAN_PERIOD] = shard.period_ms;
                let window = shard.calendar.map(|unit| (calendar_window(&shard, unit, now), unit.longest_ms()));
                io[at + PLAN_WINDOW_START] = window.map_or(f64::NAN, |(window, _)| window.start_ms);
                io[at + PLAN_WINDOW_END] = window.map_or(f64::NAN, |(window, _)| window.end_ms);
                io[at + PLAN_WINDOW_LONGEST] = window.map_or(f64::NAN, |(_, longest)| longest);
            }
            Err(error) => {
                let status = put_error(io, OUT + index * OUT_STRIDE, &error);
                io[at + PLAN_STATUS] = status;
                if first_error == 0.0 {
                    first_error = status;
                }
            }
        }
    }
    first_error
}

/// Writes a decision's answer at `out`: status, wait, the figures when asked, the shares.
pub(super) fn put_answer(io: &mut [f64], out: usize, outcome: &Outcome, config: &Config, now: f64, commits: bool, figures: bool) {
    io[out + OUT_STATUS] = f64::from(u8::from(outcome.result.is_ok()));
    io[out + OUT_RETRY_AFTER] = or_nan(outcome.result.retry_after_ms());
    if figures {
        put_figures(io, out + OUT_FIGURES, &outcome.figures(config, now, commits));
    }
    io[out + OUT_SHARES] = outcome.shares[0];
    io[out + OUT_SHARES + 1] = outcome.shares[1];
}

/// Writes the header figures at `at`.
pub(super) fn put_figures(io: &mut [f64], at: usize, shown: &Figures) {
    io[at + FIGURE_LIMIT] = shown.limit;
    io[at + FIGURE_REMAINING] = shown.remaining;
    io[at + FIGURE_RESET] = shown.reset;
    io[at + FIGURE_WINDOW] = shown.window;
    io[at + FIGURE_RETRY_AFTER] = or_nan(shown.retry_after);
    io[at + FIGURE_SAMPLED] = f64::from(shown.sampled);
    io[at + FIGURE_EFFECTIVE_WINDOW] = shown.effective_window;
}

/// Decides items `0..count` on the states in `SLOTS` (each item's reads
/// mapped in `MAP`), in order: `mode` 1 is all or nothing (`limitAll`), 0
/// each item its own call at its own `now`. Writes each item's answer to
/// `OUT`, and to each slot the state to write (pending; NaN: nothing) and
/// its `fullAt`. Returns the batch's status: 1 granted, 0 refused (its wait
/// at `EXTRA`), or the first error's `-code`.
#[no_mangle]
pub extern "C" fn rb_decide(count: u32, slot_count: u32, mode: u32) -> f64 {
    let io = io();
    let count = (count as usize).min(io::MAX_ITEMS);
    let slot_count = (slot_count as usize).clamp(1, io::MAX_SLOTS);
    let (items, slots, answers) = scratch();
    for (index, slot) in slots.iter_mut().enumerate().take(slot_count) {
        *slot = Slot { stored: state_at(io, SLOTS + index * SLOT + SLOT_STORED), ..Slot::EMPTY };
    }
    for (index, entry) in items.iter_mut().enumerate().take(count) {
        let item = item_at(index);
        let slot_of = |which: usize| (io[MAP + 2 * index + which] as usize).min(slot_count - 1);
        *entry = Item {
            config: config_at(io, item),
            request: request_at(io, item),
            write: io[item + ITEM_WRITE] != 0.0,
            draws: draws_of(io, item),
            slots: [slot_of(0), slot_of(1)],
            now_ms: io[item + ITEM_NOW],
        };
    }
    let mode = if mode == 1 { Mode::AllOrNothing } else { Mode::Each };
    for index in 0..count {
        io[OUT + index * OUT_STRIDE + OUT_STATUS] = f64::NAN;
    }
    let items = &items[..count];
    let result = decide_batch(items, &mut slots[..slot_count], mode, |index, outcome| answers[index] = Some(*outcome));
    // An item's figures show what the limit holds after the call: its writes only when they commit.
    let batch_commits = matches!(result, Ok(result) if result.is_ok());
    for (index, answer) in answers.iter_mut().enumerate().take(count) {
        let out = OUT + index * OUT_STRIDE;
        let item = &items[index];
        match answer.take() {
            Some(Ok(outcome)) => {
                let commits = item.write && if mode == Mode::AllOrNothing { batch_commits } else { outcome.result.is_ok() };
                let figures = io[item_at(index) + ITEM_FIGURES] != 0.0;
                put_answer(io, out, &outcome, &item.config, item.now_ms, commits, figures);
            }
            Some(Err(error)) => {
                put_error(io, out, &error);
            }
            None => {}
        }
    }
    for (index, slot) in slots.iter().enumerate().take(slot_count) {
        let at = SLOTS + index * SLOT;
        put_state(io, at + SLOT_PENDING, slot.pending);
        io[at + SLOT_FULL_AT] = slot.full_at_ms;
    }
    match result {
        Ok(result) => {
            io[EXTRA + BATCH_WAIT] = or_nan(result.retry_after_ms());
            f64::from(u8::from(result.is_ok()))
        }
        Err(error) => -f64::from(error.number()),
    }
}

/// One call's decision (item 0, planned by `rb_plan`, its states in slots 0
/// and 1): the answer at `OUT`, and each slot's state to write (pending;
/// NaN: nothing) with its `fullAt`. The common case, without a batch's
/// bookkeeping. Returns the status (1 granted, 0 refused, `-code`).
#[no_mangle]
pub extern "C" fn rb_decide_one() -> f64 {
    let io = io();
    let item = item_at(0);
    let config = config_at(io, item);
    let request = request_at(io, item);
    let now = io[item + ITEM_NOW];
    let decided = plan(&config, now, &draws_of(io, item)).and_then(|planned| {
        let stored = [state_at(io, SLOTS + SLOT_STORED), if planned.reads == 2 { state_at(io, SLOTS + SLOT + SLOT_STORED) } else { None }];
        decide_planned(&config, request, now, &planned, stored).map(|outcome| (outcome, planned))
    });
    let (outcome, planned) = match decided {
        Ok(decided) => decided,
        Err(error) => return put_error(io, OUT, &error),
    };
    let write = io[item + ITEM_WRITE] != 0.0;
    let commits = write && outcome.result.is_ok();
    let figures = io[item + ITEM_FIGURES] != 0.0;
    put_answer(io, OUT, &outcome, &config, now, commits, figures);
    for slot in 0..2 {
        let at = SLOTS + slot * SLOT;
        let written = outcome.writes.iter().flatten().find(|(shard, _)| commits && *shard == planned.shards[slot] && slot < planned.reads);
        put_state(io, at + SLOT_PENDING, written.map(|(_, state)| *state));
        io[at + SLOT_FULL_AT] = written.map_or(0.0, |(_, state)| write_info(&config, *state, now).full_at_ms);
    }
    io[OUT + OUT_STATUS]
}

/// One item's answer, kept until the batch knows whether it commits.
pub type Answer = Option<Result<Outcome, Error>>;

static mut ITEMS_SCRATCH: [Item; MAX_ITEMS] = [Item::EMPTY; MAX_ITEMS];
static mut SLOTS_SCRATCH: [Slot; MAX_SLOTS] = [Slot::EMPTY; MAX_SLOTS];
static mut ANSWERS_SCRATCH: [Answer; MAX_ITEMS] = [None; MAX_ITEMS];

/// Room for one batch's items, slots and answers, reused by every call
/// (nothing to clear: a call writes the prefix it uses before reading it).
pub fn scratch() -> (&'static mut [Item; MAX_ITEMS], &'static mut [Slot; MAX_SLOTS], &'static mut [Answer; MAX_ITEMS]) {
    // SAFETY: as for `io`: one call at a time, and `rb_decide` alone takes them (see `io::io`).
    unsafe {
        (
            &mut *core::ptr::addr_of_mut!(ITEMS_SCRATCH),
            &mut *core::ptr::addr_of_mut!(SLOTS_SCRATCH),
            &mut *core::ptr::addr_of_mut!(ANSWERS_SCRATCH),
        )
    }
}
