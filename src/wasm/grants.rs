//! The exports of grants: charging a grant on one call and settling it later
//! at the tokens it used. What they read and write sits at `EXTRA` (the
//! `CHARGE_*`, `SETTLE_*`, `GRANT_*` and `WRITE*` offsets of [`io`]).

use super::decide::{draws_of, item_at, put_answer};
use super::io::{
    config_at, io, or_nan, put_error, put_state, request_at, state_at, CHARGE_GRANT, CHARGE_READS, CHARGE_STATES, CHARGE_WRITES, EXTRA, GRANT_CHARGED_AT,
    GRANT_COUNT, GRANT_PART, GRANT_PARTS, GRANT_SHARD_COUNT, GRANT_SLOT, GRANT_TAG, ITEM_FIGURES, ITEM_NOW, OUT, OUT_STATUS, PART_COUNT, PART_REFUNDED,
    PART_SHARD, PART_TS, PART_VALUE, PLAN, PLAN_FIRST, PLAN_READS, PLAN_SECOND, SETTLE_ANSWER, SETTLE_CONFIG, SETTLE_DRAWS, SETTLE_GRANT, SETTLE_READS,
    SETTLE_STATES, SETTLE_WRITES, SETTLED_CHARGED, SETTLED_REFUNDED, SETTLED_RETRY_AFTER, SETTLED_UNPAID, WRITE, WRITES_COUNT, WRITES_FIRST, WRITE_FULL_AT, WRITE_SHARD, WRITE_STATE,
};
use crate::settle::{charge_planned, charge_reads, plan_charge, settle_planned, settle_reads, Grant, GrantShard, Writes};
use crate::state::State;

/// Plans a grant's charge on item 0: its plan in `PLAN`, and at `EXTRA` the
/// shards of the two ledgers and of the grant's record (from `slot`).
#[no_mangle]
pub extern "C" fn rb_plan_charge(slot: u32) -> f64 {
    let io = io();
    let item = item_at(0);
    let config = config_at(io, item);
    match plan_charge(&config, request_at(io, item), io[item + ITEM_NOW], &draws_of(io, item)) {
        Ok(planned) => {
            io[PLAN + PLAN_FIRST] = f64::from(planned.shards[0]);
            io[PLAN + PLAN_SECOND] = f64::from(planned.shards[1]);
            io[PLAN + PLAN_READS] = planned.reads as f64;
            for (index, shard) in charge_reads(&planned, slot).iter().enumerate() {
                io[EXTRA + CHARGE_READS + index] = f64::from(*shard);
            }
            0.0
        }
        Err(error) => put_error(io, OUT, &error),
    }
}

/// Writes `writes` at `at`: how many, then shard, value, ts, fullAt for each.
fn put_writes(io: &mut [f64], at: usize, writes: &Writes) {
    io[at + WRITES_COUNT] = writes.len() as f64;
    for (index, (shard, state, full_at)) in writes.iter().enumerate() {
        let to = at + WRITES_FIRST + WRITE * index;
        io[to + WRITE_SHARD] = f64::from(*shard);
        put_state(io, to + WRITE_STATE, Some(*state));
        io[to + WRITE_FULL_AT] = *full_at;
    }
}

/// The five states at `at` (two shards, their ledgers, the record; NaN value: none).
fn five_states(io: &[f64], at: usize) -> [Option<State>; 5] {
    core::array::from_fn(|index| state_at(io, at + 2 * index))
}

/// Charges a grant on item 0: `EXTRA` holds the five states read (the two
/// shards, their ledgers, the record; NaN value: none). Answers in `OUT`, and
/// at `EXTRA + CHARGE_GRANT` the grant (count, chargedAt, shards, then shard,
/// count, value, ts, refunded for each) and at `EXTRA + CHARGE_WRITES` the writes.
#[no_mangle]
pub extern "C" fn rb_charge(slot: u32, tag: f64) -> f64 {
    let io = io();
    let item = item_at(0);
    let config = config_at(io, item);
    let request = request_at(io, item);
    let now = io[item + ITEM_NOW];
    let states = five_states(io, EXTRA + CHARGE_STATES);
    let charged = plan_charge(&config, request, now, &draws_of(io, item))
        .and_then(|planned| charge_planned(&config, request, now, &planned, [states[0], states[1]], [states[2], states[3]], states[4], (slot, tag)));
    match charged {
        Ok((outcome, grant, writes)) => {
            let figures = io[item + ITEM_FIGURES] != 0.0;
            put_answer(io, OUT, &outcome, &config, now, outcome.result.is_ok(), figures);
            if let Some(grant) = grant {
                let at = EXTRA + CHARGE_GRANT;
                io[at + GRANT_COUNT] = grant.count;
                io[at + GRANT_CHARGED_AT] = grant.charged_at_ms;
                io[at + GRANT_SHARD_COUNT] = grant.shard_count as f64;
                for (index, part) in grant.parts().iter().enumerate() {
                    let to = at + GRANT_PARTS + GRANT_PART * index;
                    io[to + PART_SHARD] = f64::from(part.shard);
                    io[to + PART_COUNT] = part.count;
                    io[to + PART_VALUE] = part.value;
                    io[to + PART_TS] = part.ts;
                    io[to + PART_REFUNDED] = part.refunded;
                }
            }
            put_writes(io, EXTRA + CHARGE_WRITES, &writes);
            io[OUT + OUT_STATUS]
        }
        Err(error) => put_error(io, OUT, &error),
    }
}

/// The grant at `EXTRA + SETTLE_GRANT`: count, chargedAt, shards used, five
/// numbers for each of two shards (shard, count, value, ts, refunded), slot, tag.
fn grant_at(io: &[f64]) -> Grant {
    let at = EXTRA + SETTLE_GRANT;
    let part = |index: usize| {
        let from = at + GRANT_PARTS + GRANT_PART * index;
        GrantShard {
            shard: io[from + PART_SHARD] as u32,
            count: io[from + PART_COUNT],
            value: io[from + PART_VALUE],
            ts: io[from + PART_TS],
            refunded: io[from + PART_REFUNDED],
        }
    };
    Grant {
        count: io[at + GRANT_COUNT],
        charged_at_ms: io[at + GRANT_CHARGED_AT],
        shard_count: io[at + GRANT_SHARD_COUNT] as usize,
        shards: [part(0), part(1)],
        slot: io[at + GRANT_SLOT] as u32,
        tag: io[at + GRANT_TAG],
    }
}

/// The five shards a settle reads (at `EXTRA + SETTLE_READS`): its two shards,
/// their ledgers, the grant's record, from the grant at `EXTRA + SETTLE_GRANT`.
#[no_mangle]
pub extern "C" fn rb_settle_reads() -> f64 {
    let io = io();
    let grant = grant_at(io);
    for (index, shard) in settle_reads(&grant).iter().enumerate() {
        io[EXTRA + SETTLE_READS + index] = f64::from(*shard);
    }
    0.0
}

/// Settles the grant at `EXTRA + SETTLE_GRANT` (config at `SETTLE_CONFIG`,
/// draws at `SETTLE_DRAWS`, the five states read at `SETTLE_STATES`) at
/// `actual` tokens. Answers at `SETTLE_ANSWER`: refunded, charged, unpaid,
/// retryAfter (NaN: none); the writes at `SETTLE_WRITES`.
#[no_mangle]
pub extern "C" fn rb_settle(actual: f64, now: f64) -> f64 {
    let io = io();
    let config = config_at(io, EXTRA + SETTLE_CONFIG);
    let grant = grant_at(io);
    let draws = [io[EXTRA + SETTLE_DRAWS], io[EXTRA + SETTLE_DRAWS + 1]];
    let states = five_states(io, EXTRA + SETTLE_STATES);
    match settle_planned(&grant, &config, actual, now, &draws, [states[0], states[1]], [states[2], states[3]], states[4]) {
        Ok((settled, writes)) => {
            let at = EXTRA + SETTLE_ANSWER;
            io[at + SETTLED_REFUNDED] = settled.refunded;
            io[at + SETTLED_CHARGED] = settled.charged;
            io[at + SETTLED_UNPAID] = settled.unpaid;
            io[at + SETTLED_RETRY_AFTER] = or_nan(settled.retry_after_ms);
            put_writes(io, EXTRA + SETTLE_WRITES, &writes);
            0.0
        }
        Err(error) => put_error(io, OUT, &error),
    }
}
