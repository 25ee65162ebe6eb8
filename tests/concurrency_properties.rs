//! Properties of concurrency limits over random traffic, checked with proptest.
//!
//! The traffic: a random limit (`max` 1–64, a lease of 1–1,000 ms), then up
//! to 120 steps on one key, each a gap of whole ms (0–400) and one of: take a
//! random count of slots for a fresh id, release a lease (one still held, one
//! released or expired, or a forged id on real slots), or extend a lease.
//! A model of the leases (who holds what until when, kept apart from the
//! stored states) says what each answer must be: the core's answers and the
//! stored slots must agree with it at every step.
//!
//! Native only: proptest is a native dev-dependency.
#![cfg(not(target_arch = "wasm32"))]

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use ratebound::{extend_slots, release_slots, slot_list, take_slots, ConcurrencyConfig, Error, SlotWrites, State, Taken};

/// One step of the traffic.
#[derive(Debug, Clone)]
enum Step {
    Take { count: u32 },
    Release { pick: usize },
    Forge { pick: usize },
    Extend { pick: usize, extend_ms: f64 },
}

fn step(max: u32) -> impl Strategy<Value = (f64, Step)> {
    let step = prop_oneof![
        4 => (1..=max).prop_map(|count| Step::Take { count }),
        2 => any::<usize>().prop_map(|pick| Step::Release { pick }),
        1 => any::<usize>().prop_map(|pick| Step::Forge { pick }),
        2 => (any::<usize>(), 1..2_000u32).prop_map(|(pick, extend_ms)| Step::Extend { pick, extend_ms: f64::from(extend_ms) }),
    ];
    // Whole ms, so that steps often land exactly on an expiry.
    (prop_oneof![3 => Just(0.0), 7 => (0..400u32).prop_map(f64::from)], step)
}

fn traffic() -> impl Strategy<Value = (u32, f64, Vec<(f64, Step)>)> {
    (1..=64u32, 1..1_000u32).prop_flat_map(|(max, lease_ms)| (Just(max), Just(f64::from(lease_ms)), prop::collection::vec(step(max), 1..120)))
}

/// A lease as its holder knows it: released or not, and until when.
#[derive(Debug, Clone, Copy)]
struct Lease {
    id: f64,
    slots: u64,
    expires_at_ms: f64,
    released: bool,
}

impl Lease {
    fn live(&self, now_ms: f64) -> bool {
        !self.released && self.expires_at_ms > now_ms
    }
}

fn apply(stored: &mut [Option<State>], writes: SlotWrites) {
    for slot in slot_list(writes.slots) {
        stored[slot as usize] = writes.state;
    }
}

fn run(max: u32, lease_ms: f64, steps: &[(f64, Step)]) -> Result<(), TestCaseError> {
    let config = ConcurrencyConfig { max, lease_ms };
    let mut stored = vec![None; max as usize];
    let mut leases: Vec<Lease> = Vec::new();
    let mut now_ms = 1_700_000_000_000.0;
    let mut next_id = 1.0;
    for (gap_ms, step) in steps {
        now_ms += gap_ms;
        let live: Vec<Lease> = leases.iter().copied().filter(|lease| lease.live(now_ms)).collect();
        let held: u32 = live.iter().map(|lease| lease.slots.count_ones()).sum();
        // Never more than max held, and no slot held by two leases at once.
        prop_assert!(held <= max);
        let union = live.iter().fold(0u64, |union, lease| union | lease.slots);
        prop_assert_eq!(union.count_ones(), held);
        let before = stored.clone();
        match *step {
            Step::Take { count } => {
                let id = next_id;
                next_id += 1.0;
                let (taken, writes) = take_slots(&config, f64::from(count), id, now_ms, &stored).unwrap();
                match taken {
                    Taken::Granted { slots, expires_at_ms } => {
                        prop_assert!(held + count <= max, "granted {count} with {held} of {max} held");
                        prop_assert_eq!(slots.count_ones(), count);
                        prop_assert_eq!(slots & union, 0, "took a slot a live lease holds");
                        prop_assert_eq!(expires_at_ms, now_ms + lease_ms);
                        prop_assert_eq!(writes, SlotWrites { slots, state: Some(State { value: id, ts: expires_at_ms }) });
                        apply(&mut stored, writes);
                        leases.push(Lease { id, slots, expires_at_ms, released: false });
                    }
                    Taken::Refused { retry_after_ms } => {
                        prop_assert!(held + count > max, "refused {count} with {held} of {max} held");
                        prop_assert_eq!(writes, SlotWrites::NONE);
                        // The earliest instant enough slots can be free: the
                        // (count - free)-th earliest expiry of the live leases' slots.
                        let mut expiries: Vec<f64> =
                            live.iter().flat_map(|lease| std::iter::repeat_n(lease.expires_at_ms, lease.slots.count_ones() as usize)).collect();
                        expiries.sort_by(f64::total_cmp);
                        let short = (held + count - max) as usize;
                        prop_assert_eq!(retry_after_ms, expiries[short - 1] - now_ms);
                        prop_assert!(retry_after_ms > 0.0);
                    }
                }
            }
            Step::Release { pick } if !leases.is_empty() => {
                let index = pick % leases.len();
                let lease = leases[index];
                let (released, writes) = release_slots(&config, lease.id, now_ms, lease.slots, &stored).unwrap();
                let expected = if lease.live(now_ms) { lease.slots.count_ones() } else { 0 };
                prop_assert_eq!(released, expected, "{:?} at {}", lease, now_ms);
                apply(&mut stored, writes);
                if !lease.live(now_ms) {
                    // A second release or an expired lease's gives back nothing: nothing another holds changes.
                    prop_assert!(stored.iter().zip(&before).all(|(after, was)| after == was || was.is_some_and(|was| was.ts <= now_ms)));
                }
                leases[index].released = true;
            }
            Step::Forge { pick } => {
                // A forged id on real slots (all of them, or a live lease's) releases nothing and extends nothing.
                let slots = live.get(pick % live.len().max(1)).map_or(u64::MAX >> (64 - max), |lease| lease.slots);
                let forged = next_id + 1_000_000.0;
                let (released, writes) = release_slots(&config, forged, now_ms, slots, &stored).unwrap();
                prop_assert_eq!((released, writes.slots), (0, 0));
                prop_assert_eq!(extend_slots(&config, forged, now_ms, 1_000.0, slots, &stored), Err(Error::LeaseLost));
            }
            Step::Extend { pick, extend_ms } if !leases.is_empty() => {
                let index = pick % leases.len();
                let lease = leases[index];
                match extend_slots(&config, lease.id, now_ms, extend_ms, lease.slots, &stored) {
                    Ok((expires_at_ms, writes)) => {
                        prop_assert!(lease.live(now_ms), "extended {:?} at {}", lease, now_ms);
                        prop_assert_eq!(expires_at_ms, lease.expires_at_ms.max(now_ms + extend_ms));
                        prop_assert_eq!(writes.slots, lease.slots);
                        apply(&mut stored, writes);
                        leases[index].expires_at_ms = expires_at_ms;
                    }
                    Err(error) => {
                        prop_assert_eq!(error, Error::LeaseLost);
                        prop_assert!(!lease.live(now_ms), "lost {:?} at {}", lease, now_ms);
                    }
                }
            }
            Step::Release { .. } | Step::Extend { .. } => {}
        }
        if !matches!(step, Step::Take { .. } | Step::Release { .. } | Step::Extend { .. }) {
            prop_assert_eq!(&stored, &before, "a forged lease wrote");
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct("proptest-regressions/concurrency_properties.txt"))),
        ..ProptestConfig::default()
    })]

    /// Never more than `max` slots held at any instant, a refusal exactly when
    /// too few are free with the earliest wait, and a release or extend of a
    /// lease that is not held any more (or never was) changes nothing.
    #[test]
    fn leases_never_hold_more_than_max_slots_and_stale_ones_give_back_nothing((max, lease_ms, steps) in traffic()) {
        run(max, lease_ms, &steps)?;
    }
}
