//! The module's exports. Each reads its numbers from the buffer ([`io`]),
//! runs the core, and writes the answer back; a negative return is an
//! error's `-code`, with its details in the answer's record (`OUT`).

use super::io::{self, config_at, io, maybe, or_nan, put_config, put_error, put_state, request_at, state_at, EXTRA, ITEM, MAP, OUT, OUT_STRIDE, PLAN, PLAN_STRIDE, SLOT, SLOTS};
use crate::batch::{decide_batch, Item, Mode, Slot};
use crate::config::{Config, ConfigInput, Given, GivenKind, Kind};
use crate::decision::decide;
use crate::error::Error;
use crate::figures::{figures, Figures};
use crate::limiter::{decide_planned, prepare, Outcome};
use crate::plan::{draws_needed, plan, unit_random};
use crate::random::with_jitter;
use crate::result::caller_wait;
use crate::request::{check_count, check_now, validate_request, Request};
use crate::settle::{charge_planned, charge_reads, plan_charge, settle_draws_needed, settle_planned, settle_reads, Grant, GrantShard, Writes};
use crate::state::State;
use crate::transition::{calculate_rate_limit, initial_state};
use crate::value::{plan_value, value_draws_needed, value_of};

/// The buffer's address in memory.
#[no_mangle]
pub extern "C" fn rb_io() -> usize {
    io::io_address()
}

/// The layout: 0 `ITEMS`, 1 `PLAN`, 2 `MAP`, 3 `SLOTS`, 4 `OUT`, 5 `EXTRA`,
/// 6 item stride, 7 plan stride, 8 slot stride, 9 answer stride, 10 most
/// items, 11 most slots, 12 the buffer's length.
#[no_mangle]
pub extern "C" fn rb_layout(which: u32) -> u32 {
    let value = match which {
        0 => io::ITEMS,
        1 => io::PLAN,
        2 => io::MAP,
        3 => io::SLOTS,
        4 => io::OUT,
        5 => io::EXTRA,
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

fn given(tag: f64, value: f64) -> Given {
    match tag as u8 {
        0 => Given::Absent,
        1 => Given::Null,
        2 => Given::Number(value),
        _ => Given::Other,
    }
}

/// Validates a config: `EXTRA` holds `kind` (0 token bucket, 1 fixed window,
/// 2 anything else), then a (tag, value) pair for `rate`, `period`,
/// `capacity`, `maxReserved`, `shards`, `start` (tags: 0 absent, 1 null,
/// 2 number, 3 anything else). Answers at `EXTRA` the seven numbers of the
/// config, how many draws a decision on it takes, and how many a settle does.
#[no_mangle]
pub extern "C" fn rb_compile() -> f64 {
    let io = io();
    let kind = match io[EXTRA] as u8 {
        0 => GivenKind::Known(Kind::TokenBucket),
        1 => GivenKind::Known(Kind::FixedWindow),
        _ => GivenKind::Other,
    };
    let field = |index: usize| given(io[EXTRA + 1 + 2 * index], io[EXTRA + 2 + 2 * index]);
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
            put_config(io, EXTRA, &config);
            io[EXTRA + 7] = draws_needed(&config) as f64;
            io[EXTRA + 8] = settle_draws_needed(&config) as f64;
            0.0
        }
        Err(error) => put_error(io, OUT, &error),
    }
}

fn item_at(index: usize) -> usize {
    io::ITEMS + index * ITEM
}

fn draws_of(io: &[f64], item: usize) -> [f64; 4] {
    [io[item + 11], io[item + 12], io[item + 13], io[item + 14]]
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
        let now = io[item + 10];
        let planned = prepare(&config, request_at(io, item), now).and_then(|()| plan(&config, now, &draws_of(io, item)));
        let at = PLAN + index * PLAN_STRIDE;
        match planned {
            Ok(planned) => {
                io[at] = f64::from(planned.shards[0]);
                io[at + 1] = f64::from(planned.shards[1]);
                io[at + 2] = planned.reads as f64;
                put_state(io, at + 3, Some(planned.fresh[0]));
                put_state(io, at + 5, Some(planned.fresh[1]));
                io[at + 7] = 0.0;
                let shard = config.per_shard();
                io[at + 8] = shard.rate;
                io[at + 9] = shard.capacity;
                io[at + 10] = or_nan(shard.max_reserved);
            }
            Err(error) => {
                let status = put_error(io, OUT + index * OUT_STRIDE, &error);
                io[at + 7] = status;
                if first_error == 0.0 {
                    first_error = status;
                }
            }
        }
    }
    first_error
}

pub(super) fn put_answer(io: &mut [f64], out: usize, outcome: &Outcome, config: &Config, now: f64, commits: bool, figures: bool) {
    io[out] = f64::from(u8::from(outcome.result.is_ok()));
    io[out + 1] = or_nan(outcome.result.retry_after_ms());
    if figures {
        put_figures(io, out + 2, &outcome.figures(config, now, commits));
    }
    io[out + 8] = outcome.shares[0];
    io[out + 9] = outcome.shares[1];
}

fn put_figures(io: &mut [f64], at: usize, shown: &Figures) {
    io[at] = shown.limit;
    io[at + 1] = shown.remaining;
    io[at + 2] = shown.reset;
    io[at + 3] = shown.window;
    io[at + 4] = or_nan(shown.retry_after);
    io[at + 5] = f64::from(shown.sampled);
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
    let (items, slots, answers) = io::scratch();
    for (index, slot) in slots.iter_mut().enumerate().take(slot_count) {
        *slot = Slot { stored: state_at(io, SLOTS + index * SLOT), ..Slot::EMPTY };
    }
    for (index, entry) in items.iter_mut().enumerate().take(count) {
        let item = item_at(index);
        let slot_of = |which: usize| (io[MAP + 2 * index + which] as usize).min(slot_count - 1);
        *entry = Item {
            config: config_at(io, item),
            request: request_at(io, item),
            write: io[item + 9] != 0.0,
            draws: draws_of(io, item),
            slots: [slot_of(0), slot_of(1)],
            now_ms: io[item + 10],
        };
    }
    let mode = if mode == 1 { Mode::AllOrNothing } else { Mode::Each };
    for index in 0..count {
        io[OUT + index * OUT_STRIDE] = f64::NAN;
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
                let figures = io[item_at(index) + 15] != 0.0;
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
        put_state(io, at + 2, slot.pending);
        io[at + 4] = slot.full_at_ms;
    }
    match result {
        Ok(result) => {
            io[EXTRA] = or_nan(result.retry_after_ms());
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
    let now = io[item + 10];
    let decided = plan(&config, now, &draws_of(io, item)).and_then(|planned| {
        let stored = [state_at(io, SLOTS), if planned.reads == 2 { state_at(io, SLOTS + SLOT) } else { None }];
        decide_planned(&config, request, now, &planned, stored).map(|outcome| (outcome, planned))
    });
    let (outcome, planned) = match decided {
        Ok(decided) => decided,
        Err(error) => return put_error(io, OUT, &error),
    };
    let write = io[item + 9] != 0.0;
    let commits = write && outcome.result.is_ok();
    let figures = io[item + 15] != 0.0;
    put_answer(io, OUT, &outcome, &config, now, commits, figures);
    for slot in 0..2 {
        let at = SLOTS + slot * SLOT;
        let written = outcome.writes.iter().flatten().find(|(shard, _)| commits && *shard == planned.shards[slot] && slot < planned.reads);
        put_state(io, at + 2, written.map(|(_, state)| *state));
        io[at + 4] = written.map_or(0.0, |(_, state)| crate::limiter::write_info(&config, *state, now).full_at_ms);
    }
    io[OUT]
}

/// Plans a grant's charge on item 0: its plan in `PLAN`, and at `EXTRA` the
/// shards of the two ledgers and of the grant's record (from `slot`).
#[no_mangle]
pub extern "C" fn rb_plan_charge(slot: u32) -> f64 {
    let io = io();
    let item = item_at(0);
    let config = config_at(io, item);
    match plan_charge(&config, request_at(io, item), io[item + 10], &draws_of(io, item)) {
        Ok(planned) => {
            io[PLAN] = f64::from(planned.shards[0]);
            io[PLAN + 1] = f64::from(planned.shards[1]);
            io[PLAN + 2] = planned.reads as f64;
            for (index, shard) in charge_reads(&planned, slot).iter().enumerate() {
                io[EXTRA + index] = f64::from(*shard);
            }
            0.0
        }
        Err(error) => put_error(io, OUT, &error),
    }
}

fn put_writes(io: &mut [f64], at: usize, writes: &Writes) {
    io[at] = writes.len() as f64;
    for (index, (shard, state, full_at)) in writes.iter().enumerate() {
        let to = at + 1 + 4 * index;
        io[to] = f64::from(*shard);
        put_state(io, to + 1, Some(*state));
        io[to + 3] = *full_at;
    }
}

/// Charges a grant on item 0: `EXTRA` holds the five states read (the two
/// shards, their ledgers, the record; NaN value: none). Answers in `OUT`, and
/// at `EXTRA + 16` the grant (count, chargedAt, shards, then shard, count,
/// value, ts, refunded for each) and at `EXTRA + 32` the writes.
#[no_mangle]
pub extern "C" fn rb_charge(slot: u32, tag: f64) -> f64 {
    let io = io();
    let item = item_at(0);
    let config = config_at(io, item);
    let request = request_at(io, item);
    let now = io[item + 10];
    let states: [Option<State>; 5] = core::array::from_fn(|index| state_at(io, EXTRA + 2 * index));
    let charged = plan_charge(&config, request, now, &draws_of(io, item))
        .and_then(|planned| charge_planned(&config, request, now, &planned, [states[0], states[1]], [states[2], states[3]], states[4], (slot, tag)));
    match charged {
        Ok((outcome, grant, writes)) => {
            let figures = io[item + 15] != 0.0;
            put_answer(io, OUT, &outcome, &config, now, outcome.result.is_ok(), figures);
            if let Some(grant) = grant {
                io[EXTRA + 16] = grant.count;
                io[EXTRA + 17] = grant.charged_at_ms;
                io[EXTRA + 18] = grant.shard_count as f64;
                for (index, part) in grant.parts().iter().enumerate() {
                    let at = EXTRA + 19 + 5 * index;
                    io[at..at + 5].copy_from_slice(&[f64::from(part.shard), part.count, part.value, part.ts, part.refunded]);
                }
            }
            put_writes(io, EXTRA + 32, &writes);
            io[OUT]
        }
        Err(error) => put_error(io, OUT, &error),
    }
}

/// A grant from `EXTRA + 8`: count, chargedAt, shards used, five numbers for
/// each of two shards (shard, count, value, ts, refunded), slot, tag.
fn grant_at(io: &[f64]) -> Grant {
    let at = EXTRA + 8;
    let part = |index: usize| {
        let from = at + 3 + 5 * index;
        GrantShard { shard: io[from] as u32, count: io[from + 1], value: io[from + 2], ts: io[from + 3], refunded: io[from + 4] }
    };
    Grant {
        count: io[at],
        charged_at_ms: io[at + 1],
        shard_count: io[at + 2] as usize,
        shards: [part(0), part(1)],
        slot: io[at + 13] as u32,
        tag: io[at + 14],
    }
}

/// The five shards a settle reads (at `EXTRA + 32`): its two shards, their
/// ledgers, the grant's record. The config is at `EXTRA`, the grant at `EXTRA + 8`.
#[no_mangle]
pub extern "C" fn rb_settle_reads() -> f64 {
    let io = io();
    let grant = grant_at(io);
    for (index, shard) in settle_reads(&grant).iter().enumerate() {
        io[EXTRA + 32 + index] = f64::from(*shard);
    }
    0.0
}

/// Settles the grant at `EXTRA + 8` (config at `EXTRA`, draws at `EXTRA + 24`,
/// the five states read at `EXTRA + 40`) at `actual` tokens. Answers at
/// `EXTRA + 64`: refunded, charged, unpaid, retryAfter (NaN: none); the
/// writes at `EXTRA + 72`.
#[no_mangle]
pub extern "C" fn rb_settle(actual: f64, now: f64) -> f64 {
    let io = io();
    let config = config_at(io, EXTRA);
    let grant = grant_at(io);
    let draws = [io[EXTRA + 24], io[EXTRA + 25]];
    let states: [Option<State>; 5] = core::array::from_fn(|index| state_at(io, EXTRA + 40 + 2 * index));
    match settle_planned(&grant, &config, actual, now, &draws, [states[0], states[1]], [states[2], states[3]], states[4]) {
        Ok((settled, writes)) => {
            io[EXTRA + 64] = settled.refunded;
            io[EXTRA + 65] = settled.charged;
            io[EXTRA + 66] = settled.unpaid;
            io[EXTRA + 67] = or_nan(settled.retry_after_ms);
            put_writes(io, EXTRA + 72, &writes);
            0.0
        }
        Err(error) => put_error(io, OUT, &error),
    }
}

/// How many draws `getValue` takes on item 0's config for `wanted` shards (`asked` 0: the default).
#[no_mangle]
pub extern "C" fn rb_value_draws(asked: u32, wanted: f64) -> f64 {
    let io = io();
    match value_draws_needed(&config_at(io, item_at(0)), (asked != 0).then_some(wanted)) {
        Ok(count) => count as f64,
        Err(error) => put_error(io, OUT, &error),
    }
}

/// Plans `getValue` on item 0's config (`asked` 0: `sampleShards` absent):
/// draws at `EXTRA`, the sampled shards written at `EXTRA + 1024`. Returns
/// how many, or `-code`.
#[no_mangle]
pub extern "C" fn rb_plan_value(asked: u32, wanted: f64, now: f64) -> f64 {
    let io = io();
    let config = config_at(io, item_at(0));
    let (draws, rest) = io[EXTRA..].split_at_mut(1024);
    match plan_value(&config, (asked != 0).then_some(wanted), now, draws, &mut rest[..1024]) {
        Ok(count) => count as f64,
        Err(error) => put_error(io, OUT, &error),
    }
}

/// `getValue`'s report from the `count` sampled shards at `EXTRA + 1024` and
/// their states at `EXTRA + 2048`: value, ts, shard, and a fixed window's
/// start (NaN: none), at `EXTRA`.
#[no_mangle]
pub extern "C" fn rb_value(count: u32, now: f64) -> f64 {
    let io = io();
    let config = config_at(io, item_at(0));
    let count = (count as usize).min(1024);
    let report = value_of(&config, now, count, |index| (io[EXTRA + 1024 + index] as u32, state_at(io, EXTRA + 2048 + 2 * index)));
    io[EXTRA] = report.value;
    io[EXTRA + 1] = report.ts;
    io[EXTRA + 2] = f64::from(report.shard);
    io[EXTRA + 3] = or_nan(report.start_ms);
    0.0
}

/// Checks `now` against item 0's config (for `reset`).
#[no_mangle]
pub extern "C" fn rb_check_now(now: f64) -> f64 {
    let io = io();
    match check_now(&config_at(io, item_at(0)), now) {
        Ok(()) => 0.0,
        Err(error) => put_error(io, OUT, &error),
    }
}

/// `calculateRateLimit` on a compiled config (its seven numbers), the state
/// (`value` NaN: none), `now`, `count`, and a phase for a fresh fixed window.
/// Returns the new value; `ts`, `retryAfter` and `windowStart` (NaN: none)
/// go to `EXTRA + 8`, and the status to `EXTRA + 11` (0, or `-code`).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn rb_calculate(kind: f64, rate: f64, period: f64, capacity: f64, max_reserved: f64, shards: f64, start: f64, value: f64, ts: f64, now: f64, count: f64, phase: f64) -> f64 {
    let io = io();
    let config = Config {
        kind: if kind == 1.0 { Kind::FixedWindow } else { Kind::TokenBucket },
        rate,
        period_ms: period,
        capacity,
        max_reserved: maybe(max_reserved),
        shard_count: shards as u32,
        start_ms: maybe(start),
    };
    let checked = if !now.is_finite() {
        Err(Error::request(crate::error::Field::Now, crate::error::Rule::FiniteMs, now))
    } else {
        check_count(count).and_then(|count| {
            let state = maybe(value).map(|value| State { value, ts });
            let phase = if state.is_none() && config.kind == Kind::FixedWindow && config.start_ms.is_none() { unit_random(phase)? } else { 0.0 };
            Ok(calculate_rate_limit(state, &config, now, count, phase))
        })
    };
    match checked {
        Ok(transition) => {
            io[EXTRA + 8] = transition.ts;
            io[EXTRA + 9] = or_nan(transition.retry_after_ms);
            io[EXTRA + 10] = or_nan(transition.window_start_ms);
            io[EXTRA + 11] = 0.0;
            transition.value
        }
        Err(error) => {
            io[EXTRA + 11] = put_error(io, OUT, &error);
            f64::NAN
        }
    }
}

/// `decideRateLimit`: the decision `limit` makes on one state the caller
/// holds (a sharded limit's state taken as a whole), on the config at
/// `EXTRA`. Answers at `EXTRA + 8`: ok, retryAfter (NaN: none), value, ts.
#[no_mangle]
pub extern "C" fn rb_decide_state(value: f64, ts: f64, now: f64, count: f64, reserve: u32, phase: f64) -> f64 {
    let io = io();
    let config = config_at(io, EXTRA);
    let request = Request { count, reserve: reserve != 0 };
    let decided = validate_request(&config, request).and_then(|()| check_now(&config, now)).and_then(|()| {
        let state = match maybe(value) {
            Some(value) => State { value, ts },
            None => initial_state(&config, now, unit_random(phase)?),
        };
        Ok(decide(state, &config, now, request))
    });
    match decided {
        Ok(decision) => {
            io[EXTRA + 8] = f64::from(u8::from(decision.ok));
            // An answer's wait, as the limiter's: whole ms, rounded up.
            io[EXTRA + 9] = match decision.ok {
                true => or_nan(decision.retry_after_ms.map(caller_wait)),
                false => caller_wait(decision.retry_after_ms.unwrap_or(f64::INFINITY)),
            };
            io[EXTRA + 10] = decision.next.value;
            io[EXTRA + 11] = decision.next.ts;
            0.0
        }
        Err(error) => put_error(io, OUT, &error),
    }
}

/// `rateLimitFigures` from a whole limit's `{ value, ts }` on the config at
/// `EXTRA`, at `now`, with a refusal's wait (NaN: none) and how many shards
/// were sampled. Answers at `EXTRA + 8`: limit, remaining, reset, window,
/// retryAfter in seconds (NaN: none), sampled.
#[no_mangle]
pub extern "C" fn rb_figures(value: f64, ts: f64, now: f64, retry_after: f64, sampled: u32) -> f64 {
    let io = io();
    let config = config_at(io, EXTRA);
    let shown = figures(State { value, ts }, &config, now, maybe(retry_after), sampled.min(config.shard_count));
    put_figures(io, EXTRA + 8, &shown);
    0.0
}

/// `withJitter`: `retryAfter` plus a random delay below `maxJitter`.
#[no_mangle]
pub extern "C" fn rb_jitter(retry_after: f64, max_jitter: f64, random: f64) -> f64 {
    match with_jitter(retry_after, max_jitter, random) {
        Ok(jittered) => jittered,
        Err(error) => {
            let io = io();
            put_error(io, OUT, &error);
            f64::NAN
        }
    }
}
