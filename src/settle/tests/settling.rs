//! Settles: refunds within the rule, extras into debt, checks, records.

use super::*;

/// Issue 24, item 8: `grant.settle(1e308)` without `maxReserved` stored
/// -1e308 and answered `retryAfter: Infinity`, locking the key for good.
/// An extra no clock could repay is refused like the reservation it is.
#[test]
fn a_settle_whose_extra_no_clock_could_repay_is_wait_unbounded_and_writes_nothing() {
    for (shards, draws) in [(1.0, &[][..]), (4.0, &[0.0, 0.0][..])] {
        for limit in both_kinds(4.0, 1_000.0, &[("shards", shards)]) {
            let mut store = Shards::default();
            if shards > 1.0 {
                // Shards 0 and 1 hold half a shard each: 1 token takes both, combined.
                store.0.insert(0, (State { value: 0.5, ts: 0.0 }, f64::INFINITY));
                store.0.insert(1, (State { value: 0.5, ts: 0.0 }, f64::INFINITY));
            }
            let grant = charge(&mut store, &limit, 1.0, 0.0, draws, 7);
            assert_eq!(grant.parts().len(), if shards > 1.0 { 2 } else { 1 }, "{:?}", limit.kind);
            let before = store.clone();
            let error = settle_at(&mut store, &grant, &limit, 1e308, 0.0).unwrap_err();
            assert_eq!(error, Error::WaitUnbounded { count: 1e308 }, "{:?}, {shards} shards", limit.kind);
            assert_eq!(store, before, "{:?}, {shards} shards: a refused settle wrote", limit.kind);
            // The key is not locked and the grant can still settle.
            let settled = settle_at(&mut store, &grant, &limit, 0.0, 0.0).unwrap();
            assert_eq!(settled.refunded, 1.0, "{:?}, {shards} shards", limit.kind);
        }
    }
}

#[test]
fn a_settle_whose_extra_a_clock_can_repay_is_taken_into_debt_with_a_finite_wait() {
    for limit in both_kinds(4.0, 1_000.0, &[]) {
        let mut store = Shards::default();
        let grant = charge(&mut store, &limit, 1.0, 0.0, &[], 1);
        // 1e12 tokens at 4 a second, less the 3 left: about 2.5e11 s, finite.
        let settled = settle_at(&mut store, &grant, &limit, 1e12 + 1.0, 0.0).unwrap();
        assert_eq!((settled.charged, settled.unpaid), (1e12, 0.0));
        let wait = settled.retry_after_ms.expect("in debt");
        assert!(wait.is_finite() && wait > 2.49e14, "{:?}: {wait}", limit.kind);
        assert_eq!(store.value(0), Some(3.0 - 1e12));
    }
}

#[test]
fn a_grant_two_shards_served_gives_back_what_was_not_used_in_proportion_to_what_each_gave() {
    for kind in [Kind::TokenBucket, Kind::FixedWindow] {
        let mut store = Shards::default();
        let (limit, grant) = two_shard_grant(&mut store, kind);
        // 4 of 8 used: 2.5 back to shard 0 (which gave 5), 1.5 to shard 1 (which gave 3).
        let settled = settle_at(&mut store, &grant, &limit, 4.0, 0.0).unwrap();
        assert_eq!((settled.refunded, settled.charged, settled.unpaid, settled.retry_after_ms), (4.0, 0.0, 0.0, None), "{kind:?}");
        assert_eq!((store.value(0), store.value(1)), (Some(3.5), Some(2.5)), "{kind:?}");
        // Each shard's ledger says what it got back.
        assert_eq!((store.value(ledger_shard(0)), store.value(ledger_shard(1))), (Some(2.5), Some(1.5)), "{kind:?}");
    }
}

#[test]
fn a_grant_two_shards_served_takes_what_was_used_beyond_it_in_the_same_proportion() {
    for kind in [Kind::TokenBucket, Kind::FixedWindow] {
        let mut store = Shards::default();
        let (limit, grant) = two_shard_grant(&mut store, kind);
        // 12 used: 4 more, 2.5 from shard 0 and 1.5 from shard 1 (no maxReserved: all taken, into debt).
        let settled = settle_at(&mut store, &grant, &limit, 12.0, 0.0).unwrap();
        assert_eq!((settled.refunded, settled.charged, settled.unpaid), (0.0, 4.0, 0.0), "{kind:?}");
        assert_eq!((store.value(0), store.value(1)), (Some(-1.5), Some(-0.5)), "{kind:?}");
        // Paid off when the deeper shard is: 150 ms at 10 a second, or the next window.
        let expected = if kind == Kind::TokenBucket { 150.0 } else { 1_000.0 };
        assert_eq!(settled.retry_after_ms, Some(expected), "{kind:?}");
        // Nothing given back: the ledgers are as the charge left them.
        assert_eq!((store.value(ledger_shard(0)), store.value(ledger_shard(1))), (Some(0.0), Some(0.0)), "{kind:?}");
    }
}

#[test]
fn a_second_grants_refund_counts_what_the_first_gave_back_to_the_same_shard() {
    for limit in both_kinds(10.0, 1_000.0, &[]) {
        // Two grants of 4 at 0: 10, then 6, then 2.
        let mut store = Shards::default();
        let first = charge(&mut store, &limit, 4.0, 0.0, &[], 1);
        let second = charge(&mut store, &limit, 4.0, 0.0, &[], 2);
        assert_eq!(store.value(0), Some(2.0));
        // Settled in the order taken, both unused: each gives its 4 back, and the limit is full.
        assert_eq!(settle_at(&mut store, &first, &limit, 0.0, 0.0).unwrap().refunded, 4.0, "{:?}", limit.kind);
        assert_eq!(settle_at(&mut store, &second, &limit, 0.0, 0.0).unwrap().refunded, 4.0, "{:?}", limit.kind);
        assert_eq!((store.value(0), store.value(ledger_shard(0))), (Some(10.0), Some(8.0)), "{:?}", limit.kind);
    }
}

#[test]
fn a_refund_after_a_later_grants_refund_gives_only_the_room_left() {
    for limit in both_kinds(10.0, 1_000.0, &[]) {
        let mut store = Shards::default();
        let first = charge(&mut store, &limit, 4.0, 0.0, &[], 1);
        let second = charge(&mut store, &limit, 4.0, 0.0, &[], 2);
        // The later one first: 2 back to 6. The earlier one's charge left 6 and 4 came back to
        // the shard since, so its room is 10 - 6 - 4 = 0: nothing. (A limit that charged neither
        // would hold 10; this one holds 6. The rule errs towards fewer tokens, never more.)
        assert_eq!(settle_at(&mut store, &second, &limit, 0.0, 0.0).unwrap().refunded, 4.0, "{:?}", limit.kind);
        assert_eq!(settle_at(&mut store, &first, &limit, 0.0, 0.0).unwrap().refunded, 0.0, "{:?}", limit.kind);
        assert_eq!(store.value(0), Some(6.0), "{:?}", limit.kind);
    }
}

#[test]
fn a_grant_whose_ledger_was_dropped_refunds_nothing() {
    let limit = config(ConfigInput::token_bucket(10.0, 1_000.0));
    let mut store = Shards::default();
    let grant = charge(&mut store, &limit, 4.0, 0.0, &[], 1);
    store.0.remove(&ledger_shard(0));
    assert_eq!(settle_at(&mut store, &grant, &limit, 0.0, 100.0).unwrap().refunded, 0.0);
    assert_eq!(store.value(0), Some(6.0));
}

#[test]
fn a_zero_token_grant_refunds_nothing_and_takes_what_was_used_from_its_shard() {
    for limit in both_kinds(10.0, 1_000.0, &[]) {
        let mut store = Shards::default();
        let grant = charge(&mut store, &limit, 0.0, 0.0, &[], 1);
        assert_eq!((grant.count, grant.parts().len(), grant.parts()[0].count), (0.0, 1, 0.0));
        // Nothing was taken from a full limit: no refund window, so no record, and settling twice is harmless.
        assert_eq!(full_at_of(&store, grant_record_shard(1)), None);
        for _ in 0..2 {
            let settled = settle_at(&mut store, &grant, &limit, 0.0, 0.0).unwrap();
            assert_eq!((settled.refunded, settled.charged), (0.0, 0.0), "{:?}", limit.kind);
        }
        assert_eq!(store.value(0), Some(10.0), "{:?}", limit.kind);
        let grant = charge(&mut store, &limit, 0.0, 0.0, &[], 2);
        let settled = settle_at(&mut store, &grant, &limit, 3.0, 0.0).unwrap();
        assert_eq!((settled.refunded, settled.charged), (0.0, 3.0), "{:?}", limit.kind);
        assert_eq!(store.value(0), Some(7.0), "{:?}", limit.kind);
    }
}

#[test]
fn settling_exactly_the_estimate_on_a_shard_in_debt_changes_no_state() {
    for limit in both_kinds(10.0, 1_000.0, &[("maxReserved", 10.0)]) {
        let mut store = Shards::default();
        store.0.insert(0, (State { value: 0.0, ts: 0.0 }, f64::INFINITY));
        let request = Request { count: 5.0, reserve: true };
        let grant = limit_with_grant(&mut store, "llm", None, &limit, request, 0.0, &[], (1, 1.0)).unwrap().1.unwrap();
        let state = store.0[&0];
        assert_eq!(state.0.value, -5.0);
        let settled = settle_at(&mut store, &grant, &limit, 5.0, 100.0).unwrap();
        assert_eq!(settled, Settled { refunded: 0.0, charged: 0.0, unpaid: 0.0, retry_after_ms: None }, "{:?}", limit.kind);
        assert_eq!(store.0[&0], state, "{:?}: the state was rewritten", limit.kind);
        // Only the record changed: settled now (no state, no ledger was written).
        let ledger = store.0.get(&ledger_shard(0)).map(|(state, _)| *state);
        let record = store.0.get(&grant_record_shard(1)).map(|(state, _)| *state);
        let unsettled = Some(crate::records::open_record(1.0, record.unwrap().ts));
        let (_, writes) = settle_planned(&grant, &limit, 5.0, 100.0, &[], [Some(state.0), None], [ledger, None], unsettled).unwrap();
        assert_eq!(writes.iter().map(|(shard, _, _)| *shard).collect::<Vec<_>>(), vec![grant_record_shard(1)]);
        assert_eq!(settle_at(&mut store, &grant, &limit, 0.0, 100.0).unwrap_err(), Error::GrantSettled);
    }
}

#[test]
fn a_grant_is_checked_against_the_limit_it_names_before_anything_is_read() {
    let limit = config(ConfigInput::token_bucket(40.0, 1_000.0).with("shards", 4.0));
    let mut store = Shards::default();
    store.0.insert(0, (State { value: 6.0, ts: 0.0 }, f64::INFINITY));
    store.0.insert(1, (State { value: 4.0, ts: 0.0 }, f64::INFINITY));
    let good = charge(&mut store, &limit, 8.0, 0.0, &[0.0, 0.0], 3);
    let before = store.clone();
    let part = |index: usize, change: &dyn Fn(&mut GrantShard)| {
        let mut grant = good;
        change(&mut grant.shards[index]);
        grant
    };
    let problem = |field, rule, got| Error::request(field, rule, got);
    let cases: Vec<(Grant, f64, Error)> = vec![
        (good, -1.0, problem(Field::Actual, Rule::FiniteNonNegative, -1.0)),
        (good, f64::INFINITY, problem(Field::Actual, Rule::FiniteNonNegative, f64::INFINITY)),
        (Grant { count: -8.0, ..good }, 1.0, problem(Field::GrantCount, Rule::FiniteNonNegative, -8.0)),
        (Grant { count: f64::NAN, ..good }, 1.0, problem(Field::GrantCount, Rule::FiniteNonNegative, f64::NAN)),
        (Grant { charged_at_ms: f64::INFINITY, ..good }, 1.0, problem(Field::GrantChargedAt, Rule::FiniteMs, f64::INFINITY)),
        (Grant { shard_count: 0, ..good }, 1.0, problem(Field::GrantShards, Rule::OneOrTwoShards, 0.0)),
        (Grant { shard_count: 3, ..good }, 1.0, problem(Field::GrantShards, Rule::OneOrTwoShards, 3.0)),
        (part(1, &|part| part.shard = 4), 1.0, Error::InvalidRequest(Problem::with_numbers(Field::GrantShards, Rule::GrantShard, [4.0, 4.0, f64::NAN]))),
        (part(1, &|part| part.shard = 0), 1.0, Error::InvalidRequest(Problem::with_numbers(Field::GrantShards, Rule::GrantShard, [0.0, 4.0, f64::NAN]))),
        // A negative share would have the settle give back to one shard what it takes from the other.
        (part(1, &|part| part.count = -3.0), 1.0, problem(Field::GrantShardCount, Rule::FiniteNonNegative, -3.0)),
        (part(0, &|part| part.count = f64::INFINITY), 1.0, problem(Field::GrantShardCount, Rule::FiniteNonNegative, f64::INFINITY)),
        (part(0, &|part| part.refunded = -1.0), 1.0, problem(Field::GrantShardRefunded, Rule::FiniteNonNegative, -1.0)),
        (part(1, &|part| part.refunded = f64::NAN), 1.0, problem(Field::GrantShardRefunded, Rule::FiniteNonNegative, f64::NAN)),
        (part(0, &|part| part.value = f64::NEG_INFINITY), 1.0, problem(Field::GrantShardValue, Rule::Finite, f64::NEG_INFINITY)),
        (part(1, &|part| part.ts = f64::NAN), 1.0, problem(Field::GrantShardValue, Rule::Finite, f64::NAN)),
    ];
    for (grant, actual, expected) in cases {
        assert_eq!(settle_at(&mut store, &grant, &limit, actual, 0.0), Err(expected));
        let planned = settle_planned(&grant, &limit, actual, 0.0, &[], [None, None], [None, None], None);
        assert_eq!(planned.map(|_| ()), Err(expected));
    }
    assert_eq!(store, before);
    // The first part's shard is checked too, and one shard is enough.
    let one = Grant { shard_count: 1, ..good };
    assert!(settle_at(&mut store, &one, &limit, 8.0, 0.0).is_ok());
    let outside = part(0, &|part| part.shard = 7);
    let expected = Error::InvalidRequest(Problem::with_numbers(Field::GrantShards, Rule::GrantShard, [7.0, 4.0, f64::NAN]));
    assert_eq!(settle_at(&mut store, &outside, &limit, 1.0, 0.0), Err(expected));
}

#[test]
fn a_settle_reads_each_part_its_ledger_and_the_record_and_repeats_a_single_part() {
    let part = |shard| GrantShard { shard, count: 1.0, value: 0.0, ts: 0.0, refunded: 0.0 };
    let one = Grant { count: 1.0, charged_at_ms: 0.0, shards: [part(3), part(0)], shard_count: 1, slot: 5, tag: 5.0 };
    assert_eq!(settle_reads(&one), [3, 3, ledger_shard(3), ledger_shard(3), grant_record_shard(5)]);
    let two = Grant { shards: [part(3), part(1)], shard_count: 2, ..one };
    assert_eq!(settle_reads(&two), [3, 1, ledger_shard(3), ledger_shard(1), grant_record_shard(5)]);
}

#[test]
fn a_settle_draws_a_phase_per_shard_only_for_a_fixed_window_without_start() {
    let needed = |input: ConfigInput| settle_draws_needed(&config(input));
    assert_eq!(needed(ConfigInput::fixed_window(10.0, 1_000.0)), 2);
    assert_eq!(needed(ConfigInput::fixed_window(10.0, 1_000.0).with("start", 0.0)), 0);
    assert_eq!(needed(ConfigInput::token_bucket(10.0, 1_000.0)), 0);
}

/// A settle that finds a shard's state gone (dropped, or reset) starts
/// it full; for a fixed window without `start` its windows are placed by
/// the settle's own phase, one per shard.
#[test]
fn a_settle_that_finds_a_windows_state_gone_places_it_by_its_own_phase() {
    let limit = config(ConfigInput::fixed_window(40.0, 1_000.0).with("shards", 4.0));
    let mut store = Shards::default();
    store.0.insert(0, (State { value: 6.0, ts: 0.0 }, f64::INFINITY));
    store.0.insert(1, (State { value: 4.0, ts: 0.0 }, f64::INFINITY));
    let grant = charge(&mut store, &limit, 8.0, 0.0, &[0.0, 0.0, 0.0, 0.0], 3);
    assert_eq!(grant.parts().len(), 2);
    store.0.remove(&0);
    store.0.remove(&1);
    // 4 used beyond the estimate, taken from fresh shards placed 250 and 750 ms back.
    settle(&mut store, "llm", None, &grant, &limit, 12.0, 10_000.0, &[0.25, 0.75]).unwrap();
    assert_eq!(store.0[&0].0, State { value: 7.5, ts: 9_750.0 });
    assert_eq!(store.0[&1].0, State { value: 8.5, ts: 9_250.0 });
}

#[test]
fn a_ledger_that_went_back_refunds_nothing() {
    let limit = config(ConfigInput::token_bucket(10.0, 1_000.0));
    let mut store = Shards::default();
    let first = charge(&mut store, &limit, 4.0, 0.0, &[], 1);
    settle_at(&mut store, &first, &limit, 0.0, 0.0).unwrap();
    let second = charge(&mut store, &limit, 4.0, 0.0, &[], 2);
    store.0.insert(ledger_shard(0), (State { value: 1.0, ts: 400.0 }, 400.0));
    assert_eq!(settle_at(&mut store, &second, &limit, 0.0, 0.0).unwrap().refunded, 0.0);
    assert_eq!(store.value(0), Some(6.0));
}

#[test]
fn a_settle_whose_extra_max_reserved_leaves_no_room_for_takes_nothing_and_writes_no_state() {
    for limit in both_kinds(10.0, 1_000.0, &[("maxReserved", 5.0)]) {
        let mut store = Shards::default();
        let request = Request { count: 15.0, reserve: true };
        let grant = limit_with_grant(&mut store, "llm", None, &limit, request, 0.0, &[], (1, 1.0)).unwrap().1.unwrap();
        let state = store.0[&0];
        assert_eq!(state.0.value, -5.0);
        // Nothing to write but the settled record.
        let ledger = store.0.get(&ledger_shard(0)).map(|(state, _)| *state);
        let record = store.0.get(&grant_record_shard(1)).map(|(state, _)| *state);
        let (_, writes) = settle_planned(&grant, &limit, 20.0, 0.0, &[], [Some(state.0), None], [ledger, None], record).unwrap();
        assert_eq!(writes.iter().map(|(shard, _, _)| *shard).collect::<Vec<_>>(), vec![grant_record_shard(1)], "{:?}", limit.kind);
        let settled = settle_at(&mut store, &grant, &limit, 20.0, 0.0).unwrap();
        // Still in the reservation's debt: paid off in 500 ms, or at the next window.
        let paid_off = if limit.kind == Kind::TokenBucket { 500.0 } else { 1_000.0 };
        assert_eq!((settled.charged, settled.unpaid, settled.retry_after_ms), (0.0, 5.0, Some(paid_off)), "{:?}", limit.kind);
        assert_eq!(store.0[&0], state, "{:?}", limit.kind);
    }
}
