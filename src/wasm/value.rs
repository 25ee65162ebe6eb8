//! The exports of `getValue` and `reset`: how many draws a report takes, the
//! shards it samples, the report from their states, and a check of `now`.

use super::decide::item_at;
use super::io::{config_at, io, or_nan, put_error, state_at, EXTRA, MAX_SAMPLED, OUT, REPORT_SHARD, REPORT_START, REPORT_TS, REPORT_VALUE, VALUE_DRAWS, VALUE_REPORT, VALUE_SHARDS, VALUE_STATES};
use crate::request::check_now;
use crate::value::{plan_value, value_draws_needed, value_of};

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
/// draws at `EXTRA + VALUE_DRAWS`, the sampled shards written at
/// `EXTRA + VALUE_SHARDS`. Returns how many, or `-code`.
#[no_mangle]
pub extern "C" fn rb_plan_value(asked: u32, wanted: f64, now: f64) -> f64 {
    let io = io();
    let config = config_at(io, item_at(0));
    let (draws, rest) = io[EXTRA + VALUE_DRAWS..].split_at_mut(VALUE_SHARDS - VALUE_DRAWS);
    match plan_value(&config, (asked != 0).then_some(wanted), now, draws, &mut rest[..MAX_SAMPLED]) {
        Ok(count) => count as f64,
        Err(error) => put_error(io, OUT, &error),
    }
}

/// `getValue`'s report from the `count` sampled shards at `EXTRA + VALUE_SHARDS`
/// and their states at `EXTRA + VALUE_STATES`: value, ts, shard, and a fixed
/// window's start (NaN: none), at `EXTRA + VALUE_REPORT`.
#[no_mangle]
pub extern "C" fn rb_value(count: u32, now: f64) -> f64 {
    let io = io();
    let config = config_at(io, item_at(0));
    let count = (count as usize).min(MAX_SAMPLED);
    let report = value_of(&config, now, count, |index| (io[EXTRA + VALUE_SHARDS + index] as u32, state_at(io, EXTRA + VALUE_STATES + 2 * index)));
    let at = EXTRA + VALUE_REPORT;
    io[at + REPORT_VALUE] = report.value;
    io[at + REPORT_TS] = report.ts;
    io[at + REPORT_SHARD] = f64::from(report.shard);
    io[at + REPORT_START] = or_nan(report.start_ms);
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
