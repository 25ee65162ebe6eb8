//! Issue 28, item 7: a grant's charge answers the header figures a plain
//! decision answers. `charge_planned` decides with `decide_planned` and the
//! wasm boundary (`rb_charge`) writes `Outcome::figures` as `rb_decide_one`
//! does; these tests hold the core to it, for both algorithms, a sharded
//! limit, and granted, reserved and refused charges, on the same states.

use ratebound::{charge_planned, decide_planned, plan_charge, Config, ConfigInput, Request, State};

fn configs() -> Vec<Config> {
    let inputs = [
        ConfigInput::token_bucket(1_000.0, 60_000.0).with("maxReserved", 500.0),
        ConfigInput::fixed_window(1_000.0, 60_000.0).with("start", 0.0).with("maxReserved", 500.0),
        ConfigInput::token_bucket(4_000.0, 60_000.0).with("shards", 4.0).with("maxReserved", 1_000.0),
        ConfigInput::fixed_window(4_000.0, 60_000.0).with("start", 0.0).with("shards", 4.0),
    ];
    inputs.iter().map(|input| Config::try_from(input).unwrap()).collect()
}

#[test]
fn a_charge_answers_the_figures_of_the_same_decision_granted_reserved_or_refused() {
    let now_ms = 90_500.0;
    let stored = [Some(State { value: 120.0, ts: 60_000.0 }), Some(State { value: 40.0, ts: 60_000.0 })];
    let mut refused = 0;
    for config in configs() {
        for (count, reserve) in [(50.0, false), (200.0, false), (300.0, true), (900.0, true), (700.0, false), (0.0, false)] {
            let request = Request { count, reserve };
            let draws = [0.1, 0.7];
            let Ok(plan) = plan_charge(&config, request, now_ms, &draws) else { continue };
            let plain = decide_planned(&config, request, now_ms, &plan, stored).unwrap();
            let (charged, grant, _) = charge_planned(&config, request, now_ms, &plan, stored, [None, None], None, (7, 7.0)).unwrap();
            let what = format!("{:?}, {} shards, count {count}, reserve {reserve}", config.kind, config.shard_count);
            assert_eq!(charged.result, plain.result, "{what}");
            assert_eq!(grant.is_some(), plain.result.is_ok(), "{what}");
            let committed = plain.result.is_ok();
            refused += usize::from(!committed);
            assert_eq!(charged.figures(&config, now_ms, committed), plain.figures(&config, now_ms, committed), "{what}");
        }
    }
    assert!(refused >= 4, "the traffic refuses some charges ({refused})");
}
