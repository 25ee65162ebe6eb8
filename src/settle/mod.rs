//! Grants that settle to what was really used. A grant remembers what it
//! took from each shard and the state it left there; settling gives back
//! what was not used, within the refund rule, or takes what was used beyond
//! the estimate, as a reservation would.
//!
//! The refund rule: a refund to a shard is at most
//! `capacity - project(after, now) - refundedSince`: the room that the state
//! the charge left (`after`) would have now with no traffic since, less what
//! other settles gave back to that shard since the charge. Charges only lower
//! a state, refunds raise it by what they gave, and a cap only ever cuts what
//! a charge took back, so a limit that never saw the unused tokens holds at
//! least that much more than this one: a refund never raises a limit above
//! what it would have been had the unused tokens never been charged
//! (`tests/settle_properties.rs` checks it against such a model).
//!
//! A refund needs proof that the charge committed: the grant's record, which
//! the charge writes in the same transaction (see [`crate::records`]). A
//! charge that rolled back left none, so its grant refunds nothing (issue 24).
//! What other settles gave back lives in the refund ledger beside the state.

mod charge;
mod grant;
mod settling;
#[cfg(test)]
mod tests;

pub use charge::{charge_planned, charge_reads, limit_with_grant, plan_charge};
pub use grant::{refund_bound, Grant, GrantShard, Settled, Writes};
pub use settling::{settle, settle_draws_needed, settle_planned, settle_reads};
