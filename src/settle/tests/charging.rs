//! Charges: the writes a grant's transaction makes, and what it records.

use super::*;

#[test]
fn a_ledger_is_kept_until_the_grants_refund_window_closes_and_never_shortened() {
    let limit = config(ConfigInput::token_bucket(10.0, 1_000.0));
    let mut store = Shards::default();
    // 4 of 10 at 0: full again at 400 ms; the ledger and the grant's record are kept until then.
    let _grant = charge(&mut store, &limit, 4.0, 0.0, &[], 1);
    assert_eq!(store.0[&ledger_shard(0)], (State { value: 0.0, ts: 400.0 }, 400.0));
    assert_eq!(full_at_of(&store, grant_record_shard(1)), Some(400.0));
    // A later, smaller grant whose window closes sooner (2 at 180 ms, full again at 380) leaves it as it is.
    store.0.insert(0, (State { value: 10.0, ts: 180.0 }, 180.0));
    let _small = charge(&mut store, &limit, 2.0, 180.0, &[], 2);
    assert_eq!(store.0[&ledger_shard(0)], (State { value: 0.0, ts: 400.0 }, 400.0));
    // A larger one that closes later extends it.
    let _large = charge(&mut store, &limit, 8.0, 180.0, &[], 3);
    assert_eq!(store.0[&ledger_shard(0)], (State { value: 0.0, ts: 1_180.0 }, 1_180.0));
}

#[test]
fn writes_past_six_are_dropped_rather_than_overflow() {
    let mut writes = Writes::default();
    assert!(writes.is_empty());
    for shard in 0..7 {
        writes.push(shard, State { value: 1.0, ts: 0.0 }, 0.0);
    }
    assert_eq!((writes.len(), writes.is_empty()), (6, false));
    assert_eq!(writes.iter().map(|(shard, _, _)| *shard).collect::<Vec<_>>(), vec![0, 1, 2, 3, 4, 5]);
}


#[test]
fn a_charge_writes_the_state_its_ledger_and_its_record_and_a_refused_one_nothing() {
    let limit = config(ConfigInput::token_bucket(10.0, 1_000.0));
    let store = Shards::default();
    let (grant, writes) = charge_writes(&store, &limit, 4.0, 0.0, 9, 9.0);
    assert!(grant.is_some());
    assert_eq!(shards_written(&writes), vec![0, ledger_shard(0), grant_record_shard(9)]);
    let mut empty = Shards::default();
    empty.0.insert(0, (State { value: 0.0, ts: 0.0 }, f64::INFINITY));
    let (grant, writes) = charge_writes(&empty, &limit, 4.0, 0.0, 9, 9.0);
    assert_eq!((grant, writes.len(), writes.is_empty()), (None, 0, true));
}

#[test]
fn a_grant_that_takes_nothing_from_a_full_limit_writes_no_ledger_and_no_record() {
    let limit = config(ConfigInput::token_bucket(10.0, 1_000.0));
    let (_, writes) = charge_writes(&Shards::default(), &limit, 0.0, 0.0, 1, 1.0);
    assert_eq!(shards_written(&writes), vec![0]);
}

#[test]
fn a_charge_whose_refund_window_closes_with_the_ledgers_does_not_rewrite_it() {
    let limit = config(ConfigInput::token_bucket(10.0, 1_000.0));
    let mut store = Shards::default();
    let _first = charge(&mut store, &limit, 4.0, 0.0, &[], 1);
    // Nothing more taken: full again at 400 ms, as the ledger already says.
    let (_, writes) = charge_writes(&store, &limit, 0.0, 0.0, 2, 2.0);
    assert_eq!(shards_written(&writes), vec![0, grant_record_shard(2)]);
}

#[test]
fn a_grant_whose_record_slot_holds_another_live_grant_writes_no_record_and_refunds_nothing() {
    let limit = config(ConfigInput::token_bucket(10.0, 1_000.0));
    let mut store = Shards::default();
    // Another grant's open record in slot 5, live until 1 000 ms.
    store.0.insert(grant_record_shard(5), (crate::records::open_record(77.0, 1_000.0), 1_000.0));
    let (_, writes) = charge_writes(&store, &limit, 4.0, 0.0, 5, 8.0);
    assert_eq!(shards_written(&writes), vec![0, ledger_shard(0)]);
    let grant = charge(&mut store, &limit, 4.0, 0.0, &[], 5);
    assert_eq!(settle_at(&mut store, &grant, &limit, 0.0, 0.0).unwrap().refunded, 0.0);
    assert_eq!(store.0[&grant_record_shard(5)].0.value, 77.0, "the other grant's record is left as it is");
    // Once that record has lapsed, the slot is free again.
    let (_, writes) = charge_writes(&store, &limit, 1.0, 1_000.0, 5, 8.0);
    assert_eq!(shards_written(&writes), vec![0, ledger_shard(0), grant_record_shard(5)]);
    // A record with this grant's own tag (settled, say, by a replay) does not hold the slot against it.
    store.0.insert(grant_record_shard(5), (crate::records::settled_record(8.0, 5_000.0), 5_000.0));
    let (_, writes) = charge_writes(&store, &limit, 1.0, 1_000.0, 5, 8.0);
    assert_eq!(shards_written(&writes), vec![0, ledger_shard(0), grant_record_shard(5)]);
}

#[test]
fn a_grant_taken_after_a_refund_is_not_charged_for_that_refund() {
    for limit in both_kinds(10.0, 1_000.0, &[]) {
        let mut store = Shards::default();
        let first = charge(&mut store, &limit, 4.0, 0.0, &[], 1);
        assert_eq!(settle_at(&mut store, &first, &limit, 0.0, 0.0).unwrap().refunded, 4.0);
        // The ledger says 4 came back; the next grant records that, and its own refund is whole.
        let second = charge(&mut store, &limit, 4.0, 0.0, &[], 2);
        assert_eq!(second.parts()[0].refunded, 4.0);
        assert_eq!(settle_at(&mut store, &second, &limit, 0.0, 0.0).unwrap().refunded, 4.0, "{:?}", limit.kind);
        assert_eq!(store.value(0), Some(10.0));
    }
}

/// A ledger below what the grant saw when charged was deleted and started

#[test]
fn a_grant_two_shards_serve_sees_what_each_shards_ledger_already_gave_back() {
    let limit = config(ConfigInput::token_bucket(40.0, 1_000.0).with("shards", 4.0));
    let mut store = Shards::default();
    // Shard 1 alone (draws 0.25 then 0.0: shards 1 and 2, shard 1 fresh and granting) gives 4 and gets them back.
    let first = charge(&mut store, &limit, 4.0, 0.0, &[0.25, 0.0], 1);
    assert_eq!(first.parts().iter().map(|part| part.shard).collect::<Vec<_>>(), vec![1]);
    settle_at(&mut store, &first, &limit, 0.0, 0.0).unwrap();
    assert_eq!(store.value(ledger_shard(1)), Some(4.0));
    // Shards 0 and 1 at 6 and 4 serve 8 together: shard 1's part knows its ledger said 4.
    store.0.insert(0, (State { value: 6.0, ts: 0.0 }, f64::INFINITY));
    store.0.insert(1, (State { value: 4.0, ts: 0.0 }, f64::INFINITY));
    let second = charge(&mut store, &limit, 8.0, 0.0, &[0.0, 0.0], 2);
    let refunded: Vec<(u32, f64)> = second.parts().iter().map(|part| (part.shard, part.refunded)).collect();
    assert_eq!(refunded, vec![(0, 0.0), (1, 4.0)]);
    assert_eq!(store.value(ledger_shard(1)), Some(4.0), "the charge kept the ledger's count");
    // And so its whole refund is allowed on both.
    assert_eq!(settle_at(&mut store, &second, &limit, 0.0, 0.0).unwrap().refunded, 8.0);
}
