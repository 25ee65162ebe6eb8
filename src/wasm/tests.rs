//! The boundary's records, natively: what each export writes into the buffer
//! for a few calls, errors included, read back through the named offsets of
//! [`io`](super::io). The buffer is one static, so each test holds [`LOCK`].

use std::sync::{Mutex, MutexGuard};

use super::decide::{rb_compile, rb_decide, rb_decide_one, rb_layout, rb_plan};
use super::limits::{rb_limit_encode, rb_limit_resolve};
use super::grants::{rb_charge, rb_plan_charge, rb_settle, rb_settle_reads};
use super::io::*;
use super::limits_layout::*;
use super::pure::{rb_calculate, rb_decide_state, rb_figures, rb_jitter};
use super::value::{rb_check_now, rb_plan_value, rb_value, rb_value_draws};
use crate::config::{Config, ConfigInput};
use crate::error::{Field, Rule};

static LOCK: Mutex<()> = Mutex::new(());

pub(super) fn buffer() -> (MutexGuard<'static, ()>, &'static mut [f64; IO_LEN]) {
    let guard = LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let io = io();
    io.fill(0.0);
    (guard, io)
}

/// Compiles a config through `rb_compile` (kind, then rate, period, capacity, maxReserved, shards, start; NaN: absent).
fn compile(io: &mut [f64], kind: f64, fields: [f64; 6]) -> f64 {
    io[EXTRA + COMPILE_KIND] = kind;
    for (index, value) in fields.iter().enumerate() {
        io[EXTRA + COMPILE_FIELDS + 2 * index] = if value.is_nan() { 0.0 } else { 2.0 };
        io[EXTRA + COMPILE_FIELDS + 2 * index + 1] = *value;
    }
    let status = rb_compile();
    // The export wrote the buffer through a reference of its own: have the optimiser read `io`
    // again. (Built with opt-level 2, as the mutation run builds, it forwarded the capacity's tag
    // written at EXTRA + 5 to a read of the compiled shard count there.)
    std::hint::black_box(&mut *io);
    status
}

/// A token bucket of `capacity` refilling `capacity` per second, compiled into item `index`.
fn bucket_item(io: &mut [f64], index: usize, capacity: f64, shards: f64, count: f64, now: f64) -> usize {
    assert_eq!(compile(io, 0.0, [capacity, 1000.0, capacity, f64::NAN, shards, f64::NAN]), 0.0);
    let item = ITEMS + index * ITEM;
    let compiled: [f64; CONFIG_LEN] = core::array::from_fn(|at| io[EXTRA + COMPILED_CONFIG + at]);
    io[item..item + CONFIG_LEN].copy_from_slice(&compiled);
    io[item + ITEM_COUNT] = count;
    io[item + ITEM_RESERVE] = 0.0;
    io[item + ITEM_WRITE] = 1.0;
    io[item + ITEM_NOW] = now;
    io[item + ITEM_DRAWS..item + ITEM_DRAWS + 4].copy_from_slice(&[0.25, 0.75, 0.5, 0.5]);
    io[item + ITEM_FIGURES] = 1.0;
    item
}

#[test]
fn the_layout_export_answers_the_named_regions() {
    let (_guard, _io) = buffer();
    let named = [ITEMS, PLAN, MAP, SLOTS, OUT, EXTRA, ITEM, PLAN_STRIDE, SLOT, OUT_STRIDE, MAX_ITEMS, MAX_SLOTS, IO_LEN];
    for (which, value) in named.iter().enumerate() {
        assert_eq!(rb_layout(which as u32) as usize, *value);
    }
    assert_eq!(rb_layout(13), 0);
}

#[test]
fn compile_writes_the_config_and_its_draws_or_an_error_record() {
    let (_guard, io) = buffer();
    assert_eq!(compile(io, 1.0, [10.0, 60_000.0, 12.0, f64::NAN, 4.0, 5.0]), 0.0);
    let config: Vec<f64> = (0..CONFIG_LEN).map(|at| io[EXTRA + COMPILED_CONFIG + at]).collect();
    assert_eq!(config[..CONFIG_MAX_RESERVED], [1.0, 10.0, 60_000.0, 12.0]);
    assert!(config[CONFIG_MAX_RESERVED].is_nan());
    assert_eq!((config[CONFIG_SHARDS], config[CONFIG_START]), (4.0, 5.0));
    let compiled = config_at(io, EXTRA + COMPILED_CONFIG);
    assert_eq!(io[EXTRA + COMPILED_DRAWS], crate::plan::draws_needed(&compiled) as f64);
    assert_eq!(io[EXTRA + COMPILED_SETTLE_DRAWS], crate::settle::settle_draws_needed(&compiled) as f64);

    assert_eq!(compile(io, 0.0, [-1.0, 1000.0, 10.0, f64::NAN, 1.0, f64::NAN]), -1.0);
    assert_eq!(io[OUT + OUT_STATUS], -1.0);
    assert_eq!(io[OUT + OUT_FIELD], f64::from(Field::Rate as u8));
    assert_eq!(io[OUT + OUT_RULE], f64::from(Rule::PositiveFinite as u8));
    assert_eq!(io[OUT + OUT_NUMBERS], -1.0);
    assert_eq!(io[OUT + OUT_RESERVE], 0.0);
}

/// A calendar period crosses as minus its unit's code (tag `COMPILE_TAG_CALENDAR` in, `-code` in
/// the compiled config), and a plan carries its window at now, mean length and longest window.
#[test]
fn a_calendar_period_compiles_to_minus_its_code_and_its_plan_carries_the_window() {
    let (_guard, io) = buffer();
    // A fixed window of rate 10 whose period is the calendar unit of `code` (the compile's output
    // overwrites its input: each compile writes the whole input again).
    let calendar = |io: &mut [f64; IO_LEN], code: f64| {
        io[EXTRA + COMPILE_KIND] = 1.0;
        io[EXTRA + COMPILE_FIELDS..EXTRA + COMPILE_FIELDS + 12].fill(0.0);
        io[EXTRA + COMPILE_FIELDS..EXTRA + COMPILE_FIELDS + 4].copy_from_slice(&[2.0, 10.0, COMPILE_TAG_CALENDAR as f64, code]);
        let status = rb_compile();
        std::hint::black_box(&mut *io);
        status
    };
    assert_eq!(calendar(io, 3.0), 0.0, "\"month\"");
    let compiled: [f64; CONFIG_LEN] = core::array::from_fn(|at| io[EXTRA + COMPILED_CONFIG + at]);
    assert_eq!((compiled[CONFIG_KIND], compiled[CONFIG_PERIOD], compiled[CONFIG_START]), (1.0, -3.0, 0.0));
    assert_eq!(calendar(io, 9.0), -1.0, "no unit has code 9: anything else");
    assert_eq!((io[OUT + OUT_FIELD], io[OUT + OUT_RULE]), (f64::from(Field::Period as u8), f64::from(Rule::PeriodName as u8)));
    let item = ITEMS;
    io[item..item + CONFIG_LEN].copy_from_slice(&compiled);
    let now = 1_709_251_200_000.0 + 3_600_000.0; // 2024-03-01T01:00Z
    io[item + ITEM_COUNT] = 1.0;
    io[item + ITEM_NOW] = now;
    assert_eq!(rb_plan(1), 0.0);
    std::hint::black_box(&mut *io);
    let plan = [PLAN_PERIOD, PLAN_WINDOW_START, PLAN_WINDOW_END, PLAN_WINDOW_LONGEST].map(|field| io[PLAN + field]);
    assert_eq!(plan, [2_629_746_000.0, 1_709_251_200_000.0, 1_711_929_600_000.0, 31.0 * 86_400_000.0]);
    assert_eq!(io[PLAN + PLAN_FRESH + STATE_TS], 1_709_251_200_000.0, "a fresh state starts at the window's start");
}

#[test]
fn plan_and_decide_one_write_the_plan_the_answer_the_figures_and_the_write() {
    let (_guard, io) = buffer();
    bucket_item(io, 0, 2.0, 1.0, 1.0, 1_000.0);
    assert_eq!(rb_plan(1), 0.0);
    assert_eq!((io[PLAN + PLAN_FIRST], io[PLAN + PLAN_READS], io[PLAN + PLAN_STATUS]), (0.0, 1.0, 0.0));
    assert_eq!((io[PLAN + PLAN_RATE], io[PLAN + PLAN_CAPACITY]), (2.0, 2.0));
    assert!(io[PLAN + PLAN_MAX_RESERVED].is_nan());
    assert_eq!(io[PLAN + PLAN_FRESH + STATE_VALUE], 2.0);
    // Nothing stored: the call takes one of two tokens.
    io[SLOTS + SLOT_STORED + STATE_VALUE] = f64::NAN;
    assert_eq!(rb_decide_one(), 1.0);
    assert_eq!(io[OUT + OUT_STATUS], 1.0);
    assert!(io[OUT + OUT_RETRY_AFTER].is_nan());
    assert_eq!(io[OUT + OUT_FIGURES + FIGURE_LIMIT], 2.0);
    assert_eq!(io[OUT + OUT_FIGURES + FIGURE_REMAINING], 1.0);
    assert_eq!(io[OUT + OUT_FIGURES + FIGURE_SAMPLED], 1.0);
    assert_eq!((io[SLOTS + SLOT_PENDING + STATE_VALUE], io[SLOTS + SLOT_PENDING + STATE_TS]), (1.0, 1_000.0));
    assert_eq!(io[SLOTS + SLOT_FULL_AT], 1_500.0);
    // On an empty bucket: refused, its wait (500 ms for one token at 2 per second), nothing to write.
    io[SLOTS + SLOT_STORED + STATE_VALUE] = 0.0;
    io[SLOTS + SLOT_STORED + STATE_TS] = 1_000.0;
    assert_eq!(rb_decide_one(), 0.0);
    assert_eq!(io[OUT + OUT_RETRY_AFTER], 500.0);
    assert!(io[SLOTS + SLOT_PENDING + STATE_VALUE].is_nan());
}

#[test]
fn a_bad_call_is_refused_at_its_plan_with_an_error_record() {
    let (_guard, io) = buffer();
    bucket_item(io, 0, 2.0, 1.0, 1.0, 1_000.0);
    let second = bucket_item(io, 1, 2.0, 1.0, -3.0, 1_000.0);
    assert_eq!(rb_plan(2), -2.0);
    assert_eq!(io[PLAN + PLAN_STATUS], 0.0);
    assert_eq!(io[PLAN + PLAN_STRIDE + PLAN_STATUS], -2.0);
    let out = OUT + OUT_STRIDE;
    assert_eq!((io[out + OUT_STATUS], io[out + OUT_FIELD], io[out + OUT_NUMBERS]), (-2.0, f64::from(Field::Count as u8), -3.0));
    // More than the limit can ever grant: COUNT_EXCEEDS_MAX, its count, max and shards.
    io[second + ITEM_COUNT] = 3.0;
    assert_eq!(rb_plan(2), -3.0);
    assert_eq!([io[out + OUT_NUMBERS], io[out + OUT_NUMBERS + 1], io[out + OUT_NUMBERS + 2], io[out + OUT_RESERVE]], [3.0, 2.0, 1.0, 0.0]);
}

#[test]
fn an_all_or_nothing_batch_that_refuses_writes_nothing_and_answers_its_wait() {
    let (_guard, io) = buffer();
    bucket_item(io, 0, 2.0, 1.0, 1.0, 1_000.0);
    bucket_item(io, 1, 2.0, 1.0, 2.0, 1_000.0);
    assert_eq!(rb_plan(2), 0.0);
    // Item 0 on slot 0 (full), item 1 on slot 1 (one token left).
    io[MAP..MAP + 4].copy_from_slice(&[0.0, 0.0, 1.0, 1.0]);
    io[SLOTS + SLOT_STORED + STATE_VALUE] = f64::NAN;
    io[SLOTS + SLOT + SLOT_STORED..SLOTS + SLOT + SLOT_STORED + 2].copy_from_slice(&[1.0, 1_000.0]);
    assert_eq!(rb_decide(2, 2, 1), 0.0);
    assert_eq!(io[EXTRA + BATCH_WAIT], 500.0);
    assert_eq!((io[OUT + OUT_STATUS], io[OUT + OUT_STRIDE + OUT_STATUS]), (1.0, 0.0));
    assert!(io[SLOTS + SLOT_PENDING].is_nan() && io[SLOTS + SLOT + SLOT_PENDING].is_nan());
    // Each its own call: the first commits, its write pending.
    assert_eq!(rb_decide(2, 2, 0), 0.0);
    assert_eq!(io[SLOTS + SLOT_PENDING + STATE_VALUE], 1.0);
}

#[test]
fn a_grant_charges_its_record_and_settles_what_it_did_not_use() {
    let (_guard, io) = buffer();
    let item = bucket_item(io, 0, 10.0, 1.0, 6.0, 1_000.0);
    assert_eq!(rb_plan_charge(7), 0.0);
    assert_eq!(io[PLAN + PLAN_READS], 1.0);
    for at in 0..10 {
        io[EXTRA + CHARGE_STATES + at] = f64::NAN;
    }
    assert_eq!(rb_charge(7, 42.0), 1.0);
    let grant = EXTRA + CHARGE_GRANT;
    assert_eq!((io[grant + GRANT_COUNT], io[grant + GRANT_CHARGED_AT], io[grant + GRANT_SHARD_COUNT]), (6.0, 1_000.0, 1.0));
    let part = grant + GRANT_PARTS;
    assert_eq!((io[part + PART_SHARD], io[part + PART_COUNT], io[part + PART_VALUE]), (0.0, 6.0, 4.0));
    let writes = EXTRA + CHARGE_WRITES;
    assert!(io[writes + WRITES_COUNT] >= 2.0, "the shard and the grant's record");
    assert_eq!(io[writes + WRITES_FIRST + WRITE_SHARD], 0.0);
    assert_eq!(io[writes + WRITES_FIRST + WRITE_STATE + STATE_VALUE], 4.0);
    // What a store holds after the charge (the settle's records overlap the charge's).
    let written: Vec<(f64, f64, f64)> = (0..io[writes + WRITES_COUNT] as usize)
        .map(|index| {
            let at = writes + WRITES_FIRST + WRITE * index;
            (io[at + WRITE_SHARD], io[at + WRITE_STATE], io[at + WRITE_STATE + 1])
        })
        .collect();
    // The settle: the config, the grant as charged (slot, tag), the states as written.
    let config: [f64; CONFIG_LEN] = core::array::from_fn(|at| io[item + at]);
    io[EXTRA + SETTLE_CONFIG..EXTRA + SETTLE_CONFIG + CONFIG_LEN].copy_from_slice(&config);
    let charged: [f64; 13] = core::array::from_fn(|at| io[grant + at]);
    io[EXTRA + SETTLE_GRANT..EXTRA + SETTLE_GRANT + 13].copy_from_slice(&charged);
    io[EXTRA + SETTLE_GRANT + GRANT_SLOT] = 7.0;
    io[EXTRA + SETTLE_GRANT + GRANT_TAG] = 42.0;
    assert_eq!(rb_settle_reads(), 0.0);
    let reads: Vec<f64> = (0..5).map(|at| io[EXTRA + SETTLE_READS + at]).collect();
    for (index, shard) in reads.iter().enumerate() {
        let state = written.iter().find(|(written, _, _)| written == shard).map_or((f64::NAN, f64::NAN), |(_, value, ts)| (*value, *ts));
        io[EXTRA + SETTLE_STATES + 2 * index] = state.0;
        io[EXTRA + SETTLE_STATES + 2 * index + 1] = state.1;
    }
    io[EXTRA + SETTLE_DRAWS..EXTRA + SETTLE_DRAWS + 2].copy_from_slice(&[0.5, 0.5]);
    assert_eq!(rb_settle(2.0, 1_000.0), 0.0);
    let answer = EXTRA + SETTLE_ANSWER;
    assert_eq!((io[answer + SETTLED_REFUNDED], io[answer + SETTLED_CHARGED], io[answer + SETTLED_UNPAID]), (4.0, 0.0, 0.0));
    assert!(io[answer + SETTLED_RETRY_AFTER].is_nan());
    assert!(io[EXTRA + SETTLE_WRITES + WRITES_COUNT] >= 1.0);
    // Settled twice: GRANT_SETTLED, once the record says so.
    let record = (0..io[EXTRA + SETTLE_WRITES + WRITES_COUNT] as usize)
        .map(|index| EXTRA + SETTLE_WRITES + WRITES_FIRST + WRITE * index)
        .find(|at| io[*at + WRITE_SHARD] == reads[4])
        .expect("the settle writes the grant's record");
    let (value, ts) = (io[record + WRITE_STATE], io[record + WRITE_STATE + 1]);
    io[EXTRA + SETTLE_STATES + 8] = value;
    io[EXTRA + SETTLE_STATES + 9] = ts;
    assert_eq!(rb_settle(2.0, 1_000.0), -6.0);
    assert_eq!(io[OUT + OUT_STATUS], -6.0);
}

#[test]
fn get_value_samples_shards_and_reports_their_state() {
    let (_guard, io) = buffer();
    bucket_item(io, 0, 8.0, 4.0, 1.0, 1_000.0);
    let draws = rb_value_draws(1, 2.0);
    assert!(draws >= 1.0);
    for at in 0..draws as usize {
        io[EXTRA + VALUE_DRAWS + at] = 0.5;
    }
    let sampled = rb_plan_value(1, 2.0, 1_000.0);
    assert_eq!(sampled, 2.0);
    for index in 0..2 {
        assert!(io[EXTRA + VALUE_SHARDS + index] < 4.0);
        io[EXTRA + VALUE_STATES + 2 * index] = 1.0;
        io[EXTRA + VALUE_STATES + 2 * index + 1] = 1_000.0;
    }
    assert_eq!(rb_value(2, 1_000.0), 0.0);
    assert_eq!((io[EXTRA + REPORT_VALUE], io[EXTRA + REPORT_TS]), (4.0, 1_000.0), "two shards of four, one token each");
    assert!(io[EXTRA + REPORT_START].is_nan());
    assert_eq!(rb_value_draws(1, 0.0), -2.0);
    assert_eq!(io[OUT + OUT_FIELD], f64::from(Field::SampleShards as u8));
    assert_eq!(rb_check_now(f64::NAN), -2.0);
    assert_eq!(io[OUT + OUT_FIELD], f64::from(Field::Now as u8));
}

#[test]
fn the_pure_functions_answer_at_their_offsets() {
    let (_guard, io) = buffer();
    // calculateRateLimit: a fresh bucket of 10 at 10 per second, 3 taken.
    assert_eq!(rb_calculate(0.0, 10.0, 1000.0, 10.0, f64::NAN, 1.0, f64::NAN, f64::NAN, 0.0, 5_000.0, 3.0, 0.5), 7.0);
    let answer = EXTRA + PURE_ANSWER;
    assert_eq!((io[answer + CALCULATED_TS], io[answer + CALCULATED_STATUS]), (5_000.0, 0.0));
    assert!(io[answer + CALCULATED_RETRY_AFTER].is_nan());
    assert!(rb_calculate(0.0, 10.0, 1000.0, 10.0, f64::NAN, 1.0, f64::NAN, f64::NAN, 0.0, f64::INFINITY, 3.0, 0.5).is_nan());
    assert_eq!(io[answer + CALCULATED_STATUS], -2.0);
    assert_eq!((io[OUT + OUT_FIELD], io[OUT + OUT_RULE]), (f64::from(Field::Now as u8), f64::from(Rule::FiniteMs as u8)));
    // decideRateLimit on an empty bucket: refused, its wait in whole ms.
    bucket_item(io, 0, 10.0, 1.0, 1.0, 0.0);
    let config: [f64; CONFIG_LEN] = core::array::from_fn(|at| io[at]);
    io[EXTRA + PURE_CONFIG..EXTRA + PURE_CONFIG + CONFIG_LEN].copy_from_slice(&config);
    assert_eq!(rb_decide_state(0.0, 1_000.0, 1_000.0, 1.0, 0, 0.5), 0.0);
    assert_eq!([io[answer + DECIDED_OK], io[answer + DECIDED_RETRY_AFTER], io[answer + DECIDED_TS]], [0.0, 100.0, 1_000.0]);
    // rateLimitFigures of a half-full bucket.
    assert_eq!(rb_figures(5.0, 1_000.0, 1_000.0, f64::NAN, 1), 0.0);
    assert_eq!((io[answer + FIGURE_LIMIT], io[answer + FIGURE_REMAINING], io[answer + FIGURE_SAMPLED]), (10.0, 5.0, 1.0));
    // withJitter: a random outside [0, 1) is an INVALID_RANDOM record.
    assert_eq!(rb_jitter(100.0, 10.0, 0.0), 100.0);
    assert!(rb_jitter(100.0, 10.0, 1.0).is_nan());
    assert_eq!((io[OUT + OUT_STATUS], io[OUT + OUT_NUMBERS]), (-5.0, 1.0));
}

#[test]
fn a_limit_goes_into_records_and_back_into_an_item() {
    let (_guard, io) = buffer();
    let code = Config::try_from(&ConfigInput::token_bucket(10.0, 1000.0)).unwrap();
    let stored = Config::try_from(&ConfigInput::token_bucket(2.0, 1000.0).with("capacity", 3.0)).unwrap();
    crate::wasm::io::put_config(io, EXTRA + LIMIT_CODE, &code);
    crate::wasm::io::put_config(io, EXTRA + LIMIT_STORED, &stored);
    assert_eq!(rb_limit_encode(), 0.0);
    let records: [f64; 4] = core::array::from_fn(|at| io[EXTRA + LIMIT_WRITE + at]);
    assert_eq!(records, [2.0, 1000.0, 3.0, -1.0]);
    // As the name's limit, with no key's: the item decides on it.
    let item = ITEMS + ITEM;
    crate::wasm::io::put_config(io, item, &code);
    io[item + ITEM_COUNT] = 3.0;
    io[item + ITEM_NOW] = 5.0;
    io[EXTRA + LIMIT_KEY..EXTRA + LIMIT_KEY + 4].fill(f64::NAN);
    io[EXTRA + LIMIT_NAME..EXTRA + LIMIT_NAME + 4].copy_from_slice(&records);
    assert_eq!(rb_limit_resolve(1), 2.0);
    assert_eq!([io[item + CONFIG_RATE], io[item + CONFIG_CAPACITY]], [2.0, 3.0]);
    // A count past the stored capacity fails as it would in code; records that are no limit fail closed.
    io[item + ITEM_COUNT] = 4.0;
    assert!(rb_limit_resolve(1) < 0.0);
    io[item + ITEM_COUNT] = 1.0;
    io[EXTRA + LIMIT_KEY] = -1.0;
    io[EXTRA + LIMIT_KEY + 1] = 1000.0;
    assert!(rb_limit_resolve(1) < 0.0 && io[OUT + OUT_STRIDE + OUT_STATUS] < 0.0);
}
