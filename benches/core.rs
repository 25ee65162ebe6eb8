//! The native floor: what one decision of the Rust core costs with no
//! WebAssembly boundary, no JavaScript, no store and no allocation.
//!
//! Each decision benchmark is one call's two halves on one key's states,
//! kept in a `Vec` (a slab: slot `s` holds shard `s`): `prepare` and `plan`
//! (check the call, draw, name the shards), the read of the planned slots,
//! `decide_planned`, and the granted writes put back in the slab. Nothing is
//! allocated per call. The configs are the ones `scripts/bench.mjs` gives
//! the JavaScript side: "allowed" never runs out, "refused" was exhausted
//! before timing starts. The clock moves 1 µs per decision; random numbers
//! (sharded limits draw two) come from the tests' SplitMix64 stream, where the npm
//! package draws from a pool of cryptographic bytes. The target for
//! the token bucket, allowed, unsharded case is 10 ns.
//!
//! `scripts/bench.mjs` reads the mean of each from
//! `target/criterion/<id>/new/estimates.json`. After criterion's, each
//! granted case's floor is printed: the least time per decision over short
//! batches, which a busy machine's preemptions do not inflate.
//!
//!   cargo bench --bench core

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion};
use ratebound::{calculate_rate_limit, decide_planned, draws_needed, plan, prepare, Config, ConfigInput, RateLimitResult, Request, State};

/// Milliseconds since the epoch when every benchmark's clock starts.
const START_MS: f64 = 1_750_000_000_000.0;
const HOUR_MS: f64 = 3_600_000.0;

/// The test suites' random stream (`tests/common/split_mix.rs`): cheap and deterministic.
#[path = "../tests/common/split_mix.rs"]
#[allow(dead_code)]
mod split_mix;

use split_mix::SplitMix64;

fn config(input: ConfigInput) -> Config {
    Config::try_from(&input).expect("a valid benchmark config")
}

/// One case: a limit, and whether every timed decision is granted or refused.
struct Case {
    id: &'static str,
    config: Config,
    granted: bool,
}

/// The eight decision cases: both algorithms, allowed and refused, 1 and 10 shards.
fn cases() -> Vec<Case> {
    // "Allowed" limits hold so many tokens that no benchmark can run them out.
    let plenty = 1e12;
    let mut cases = Vec::new();
    for (algorithm, allowed, refused) in [
        ("token_bucket", ConfigInput::token_bucket(plenty, 1_000.0), ConfigInput::token_bucket(10.0, HOUR_MS)),
        // Windows aligned just before the clock starts: the refused one stays refused for an hour.
        (
            "fixed_window",
            ConfigInput::fixed_window(plenty, 1_000.0).with("start", START_MS - 1.0),
            ConfigInput::fixed_window(10.0, HOUR_MS).with("start", START_MS - 1.0),
        ),
    ] {
        for (sharding, shards) in [("unsharded", 1.0), ("10_shards", 10.0)] {
            cases.push(Case { id: leak(format!("{algorithm}-allowed-{sharding}")), config: config(allowed.with("shards", shards)), granted: true });
            cases.push(Case { id: leak(format!("{algorithm}-refused-{sharding}")), config: config(refused.with("shards", shards)), granted: false });
        }
    }
    cases
}

fn leak(id: String) -> &'static str {
    Box::leak(id.into_boxed_str())
}

/// One key's shards, and the decision `limit` makes on them.
struct Slab {
    states: Vec<Option<State>>,
    random: SplitMix64,
}

impl Slab {
    fn new(config: &Config) -> Slab {
        Slab { states: vec![None; config.shard_count as usize], random: SplitMix64(0x9E37_79B9_7F4A_7C15) }
    }

    /// `limit`: plan, read the planned slots, decide, write what was
    /// granted, and answer. A function of its own, as a host's call site is
    /// (`rb_decide_one`): inlined into criterion's loop it shares that loop's
    /// inlining budget, and the core's calls inside it stop being inlined
    /// (30 ns instead of 11 for the common call, the same work).
    #[inline(never)]
    fn limit(&mut self, config: &Config, request: Request, now_ms: f64) -> RateLimitResult {
        let mut draws = [0.0; 4];
        for drawn in draws.iter_mut().take(draws_needed(config)) {
            *drawn = self.random.next_unit();
        }
        prepare(config, request, now_ms).expect("a valid request");
        let planned = plan(config, now_ms, &draws).expect("valid draws");
        let second = if planned.reads == 2 { self.states[planned.shards[1] as usize] } else { None };
        let stored = [self.states[planned.shards[0] as usize], second];
        let outcome = decide_planned(config, request, now_ms, &planned, stored).expect("a decision");
        for (shard, state) in outcome.writes.iter().flatten() {
            self.states[*shard as usize] = Some(*state);
        }
        outcome.result
    }
}

/// `limit` on one key's slab: the state exists (a hot key), and for a
/// refused case every shard has been run dry first.
fn bench_decision(c: &mut Criterion, case: &Case) {
    let request = Request { count: 1.0, reserve: false };
    let mut slab = Slab::new(&case.config);
    let mut now_ms = START_MS;
    // Write the first state; then, to refuse, take every token (the power of
    // two choices may need many tries to find the last ones on 10 shards).
    assert!(slab.limit(&case.config, request, now_ms).is_ok());
    if !case.granted {
        let mut refusals_in_a_row = 0;
        while refusals_in_a_row < 1_000 {
            refusals_in_a_row = if slab.limit(&case.config, request, now_ms).is_ok() { 0 } else { refusals_in_a_row + 1 };
        }
    }
    assert_eq!(slab.limit(&case.config, request, now_ms).is_ok(), case.granted, "{}: the case does not take the path it names", case.id);
    c.bench_function(case.id, |b| {
        b.iter(|| {
            now_ms += 0.001;
            black_box(slab.limit(black_box(&case.config), black_box(request), black_box(now_ms)))
        })
    });
    assert_eq!(slab.limit(&case.config, request, now_ms).is_ok(), case.granted, "{}: the path changed while timing", case.id);
}

/// The pure transition, as `calculateRateLimit` in JavaScript computes it.
fn bench_transition(c: &mut Criterion) {
    let state = State { value: 5.0, ts: START_MS };
    for (id, config) in [
        ("calculate_rate_limit-token_bucket", config(ConfigInput::token_bucket(10.0, 60_000.0))),
        ("calculate_rate_limit-fixed_window", config(ConfigInput::fixed_window(10.0, 60_000.0).with("start", 0.0))),
    ] {
        c.bench_function(id, |b| {
            b.iter(|| calculate_rate_limit(black_box(Some(state)), black_box(&config), black_box(START_MS + 1_000.0), black_box(1.0), 0.5))
        });
    }
}

fn benches(c: &mut Criterion) {
    for case in cases() {
        bench_decision(c, &case);
    }
    bench_transition(c);
}

criterion_group! {
    name = core;
    // Short: `npm run bench` runs all ten within its five-minute budget.
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30)
        .without_plots();
    targets = benches
}
/// The floor on a shared machine: criterion's figures are means, and on a
/// busy machine every preemption lands in them. The least time per decision
/// over many short batches (2,000 of 1,000 decisions) is what a decision
/// costs when nothing else runs; printed after criterion's, for each
/// granted case (`scripts/bench.mjs` reads only criterion's estimates).
fn floor() {
    for case in cases().into_iter().filter(|case| case.granted) {
        let request = Request { count: 1.0, reserve: false };
        let mut slab = Slab::new(&case.config);
        let mut now_ms = START_MS;
        let mut least = f64::INFINITY;
        for _ in 0..2_000 {
            let started = Instant::now();
            for _ in 0..1_000 {
                now_ms += 0.001;
                black_box(slab.limit(black_box(&case.config), black_box(request), black_box(now_ms)));
            }
            least = least.min(started.elapsed().as_secs_f64() * 1e9 / 1_000.0);
        }
        assert!(slab.limit(&case.config, request, now_ms).is_ok(), "{}: the path changed while timing", case.id);
        println!("{:<32} floor: {least:.2} ns (the least of 2,000 batches of 1,000)", case.id);
    }
}

fn main() {
    core();
    floor();
    Criterion::default().configure_from_args().final_summary();
}
