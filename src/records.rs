//! Where the library keeps records of its own beside a limit's states: at
//! shards no limit has (`MAX_SHARDS` and up) of the same name and key, so no
//! call's `(name, key, shard)` can reach them (issue 24), every store keeps
//! them apart from states without knowing about them, and a Redis Cluster
//! puts them in the slot of the states they belong to.
//!
//! - The refund ledger of shard `s`, at shard `LEDGER_BASE + s`: `value` is
//!   every token settles gave back to that shard, `ts` the instant until
//!   which some grant may still read it.
//! - A grant's record, at shard `GRANT_BASE + slot`, where `slot` (30 bits)
//!   and `tag` (34 bits) come from the grant's id: written by the charge
//!   inside the host's transaction (so a charge that rolled back leaves
//!   none), `value` is the tag while the grant may refund and `-1 - tag`
//!   once it has settled, `ts` the instant until which it may refund.

use crate::config::MAX_SHARDS;
use crate::state::State;

/// The first shard of the refund ledgers.
pub const LEDGER_BASE: u32 = MAX_SHARDS;

/// The first shard of grants' records.
pub const GRANT_BASE: u32 = 2 * MAX_SHARDS;

/// How many record slots grants spread over (30 bits).
pub const GRANT_SLOTS: u32 = 1 << 30;

/// The largest tag a grant's id gives (34 bits), exact as a number.
pub const MAX_GRANT_TAG: f64 = 17_179_869_183.0;

/// The shard of the refund ledger of `shard`.
pub fn ledger_shard(shard: u32) -> u32 {
    LEDGER_BASE + shard
}

/// The shard of the record of a grant whose id gives `slot`.
pub fn grant_record_shard(slot: u32) -> u32 {
    GRANT_BASE + slot % GRANT_SLOTS
}

/// What a grant's record says of the grant whose id gives `tag`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrantRecord {
    /// Its charge committed and it has not settled: it may refund.
    Open,
    /// It settled already.
    Settled,
    /// No record of it: its charge never committed (it rolled back), or its
    /// refund window closed and the store dropped the record, or another
    /// grant's record holds the slot. It refunds nothing.
    Unknown,
}

impl GrantRecord {
    /// Reads the record found at the grant's slot.
    pub fn of(found: Option<State>, tag: f64) -> GrantRecord {
        match found {
            Some(record) if record.value == tag => GrantRecord::Open,
            Some(record) if record.value == -1.0 - tag => GrantRecord::Settled,
            _ => GrantRecord::Unknown,
        }
    }
}

/// The record of an open grant, kept until `until_ms`.
pub fn open_record(tag: f64, until_ms: f64) -> State {
    State { value: tag, ts: until_ms }
}

/// The record of a settled grant, kept until `until_ms`.
pub fn settled_record(tag: f64, until_ms: f64) -> State {
    State { value: -1.0 - tag, ts: until_ms }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_live_beyond_every_shard_a_limit_can_have() {
        assert!(ledger_shard(0) >= MAX_SHARDS && ledger_shard(MAX_SHARDS - 1) < GRANT_BASE);
        assert_eq!(grant_record_shard(0), GRANT_BASE);
        assert!(grant_record_shard(GRANT_SLOTS - 1) <= i32::MAX as u32, "fits a signed 32-bit column");
        assert_eq!(grant_record_shard(GRANT_SLOTS), GRANT_BASE);
    }

    #[test]
    fn each_shard_has_its_own_ledger_at_1024_past_it_and_each_slot_its_own_record_at_2048_past_it() {
        assert_eq!([ledger_shard(0), ledger_shard(1), ledger_shard(1023)], [1024, 1025, 2047]);
        assert_eq!([grant_record_shard(0), grant_record_shard(5), grant_record_shard(GRANT_SLOTS + 5)], [2048, 2053, 2053]);
        assert_eq!(grant_record_shard(GRANT_SLOTS - 1), 2048 + GRANT_SLOTS - 1);
    }

    #[test]
    fn a_record_tells_open_settled_and_someone_elses_apart() {
        let tag = MAX_GRANT_TAG;
        assert_eq!(GrantRecord::of(Some(open_record(tag, 5.0)), tag), GrantRecord::Open);
        assert_eq!(GrantRecord::of(Some(settled_record(tag, 5.0)), tag), GrantRecord::Settled);
        assert_eq!(GrantRecord::of(Some(open_record(7.0, 5.0)), tag), GrantRecord::Unknown);
        assert_eq!(GrantRecord::of(None, 0.0), GrantRecord::Unknown);
        assert_eq!(GrantRecord::of(Some(settled_record(0.0, 1.0)), 0.0), GrantRecord::Settled);
    }
}
