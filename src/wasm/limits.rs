//! The exports of limits stored in the host (`crate::stored_limit`): a
//! config as its two records, and the limit an item decides on from the
//! records read with its states. TypeScript reads and writes the records;
//! every number in them is made and checked here.

use super::decide::item_at;
use super::io::{config_at, io, put_config, put_error, request_at, state_at, EXTRA, ITEM_NOW, OUT, OUT_STRIDE};
use super::limits_layout::{LIMIT_CODE, LIMIT_KEY, LIMIT_NAME, LIMIT_STORED, LIMIT_WRITE};
use crate::limiter::prepare;
use crate::state::State;
use crate::stored_limit::{encode_limit, resolve_limit};

/// The two records of the config at `EXTRA + LIMIT_STORED`, a limit whose
/// config in code is at `EXTRA + LIMIT_CODE`, written at `EXTRA + LIMIT_WRITE`.
/// Returns 0, or `-code` (a config of another kind, shard count or start).
#[no_mangle]
pub extern "C" fn rb_limit_encode() -> f64 {
    let io = io();
    let code = config_at(io, EXTRA + LIMIT_CODE);
    let stored = config_at(io, EXTRA + LIMIT_STORED);
    match encode_limit(&code, &stored) {
        Ok(records) => {
            for (index, record) in records.iter().enumerate() {
                io[EXTRA + LIMIT_WRITE + 2 * index] = record.value;
                io[EXTRA + LIMIT_WRITE + 2 * index + 1] = record.ts;
            }
            0.0
        }
        Err(error) => put_error(io, OUT, &error),
    }
}

/// The two records at `at` (NaN value: none).
fn records_at(io: &[f64], at: usize) -> [Option<State>; 2] {
    [state_at(io, at), state_at(io, at + 2)]
}

/// Item `index` decides on its stored limit: the key's records at
/// `EXTRA + LIMIT_KEY` when there are any, else the name's at
/// `EXTRA + LIMIT_NAME`, else its config as it is. Writes the limit into the
/// item's config and checks the call against it (as `rb_plan` does). Returns
/// where the limit came from (0 code, 1 the key, 2 the name), or `-code`
/// with the error in the item's answer (records that are not a limit:
/// `INVALID_CONFIG`; a count the stored limit can never grant).
#[no_mangle]
pub extern "C" fn rb_limit_resolve(index: u32) -> f64 {
    let io = io();
    let item = item_at(index as usize);
    let out = OUT + index as usize * OUT_STRIDE;
    let code = config_at(io, item);
    let resolved = resolve_limit(&code, records_at(io, EXTRA + LIMIT_KEY), records_at(io, EXTRA + LIMIT_NAME));
    let (config, source) = match resolved {
        Ok(resolved) => resolved,
        Err(error) => return put_error(io, out, &error),
    };
    put_config(io, item, &config);
    match prepare(&config, request_at(io, item), io[item + ITEM_NOW]) {
        Ok(()) => f64::from(source as u8),
        Err(error) => put_error(io, out, &error),
    }
}
