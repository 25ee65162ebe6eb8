//! The native floor: what one decision of the Rust core costs with no
//! WebAssembly boundary, no JavaScript and no Promise. `npm run bench` sets
//! these next to `limit()` on a `MemoryStore`, which decides on the same
//! [`Slab`] inside WebAssembly.
//!
//! Each benchmark is one `decide_and_maybe_write` on one key's block of a
//! slab (the `MemoryStore` fast path), or one `calculate_rate_limit`. The
//! configs are the ones `scripts/bench.mjs` gives the JavaScript side:
//! "allowed" never runs out, "refused" was exhausted before timing starts.
//! The clock moves 1 µs per decision; random numbers (only sharded limits
//! draw them) come from a xorshift generator, where the npm package draws
//! from a pool of cryptographic bytes.
//!
//! `scripts/bench.mjs` reads the mean of each from
//! `target/criterion/<id>/new/estimates.json`.
//!
//!   cargo bench --bench core

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use ratebound::{calculate_rate_limit, decide_and_maybe_write, BatchItem, Config, Error, RawConfig, Request, Slab, State};

/// Milliseconds since the epoch when every benchmark's clock starts.
const START_MS: f64 = 1_750_000_000_000.0;
const HOUR_MS: f64 = 3_600_000.0;

/// Completes a future over a synchronous store, which is ready on its first poll.
fn ready<T>(future: impl Future<Output = T>) -> T {
    match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("a decision over a slab block did not complete at once"),
    }
}

/// Numbers in `[0, 1)` from xorshift64: cheap and deterministic.
fn xorshift() -> impl FnMut() -> Result<f64, Error> {
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        Ok((seed >> 11) as f64 / (1u64 << 53) as f64)
    }
}

fn config(raw: RawConfig) -> Config {
    Config::try_from(&raw).expect("a valid benchmark config")
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
    for (algorithm, raw_allowed, raw_refused) in [
        ("token_bucket", RawConfig::token_bucket(plenty, 1_000.0), RawConfig::token_bucket(10.0, HOUR_MS)),
        // Windows aligned just before the clock starts: the refused one stays refused for an hour.
        (
            "fixed_window",
            RawConfig::fixed_window(plenty, 1_000.0).with("start", START_MS - 1.0),
            RawConfig::fixed_window(10.0, HOUR_MS).with("start", START_MS - 1.0),
        ),
    ] {
        for (sharding, shards) in [("unsharded", 1.0), ("10_shards", 10.0)] {
            cases.push(Case {
                id: leak(format!("{algorithm}-allowed-{sharding}")),
                config: config(raw_allowed.clone().with("shards", shards)),
                granted: true,
            });
            cases.push(Case {
                id: leak(format!("{algorithm}-refused-{sharding}")),
                config: config(raw_refused.clone().with("shards", shards)),
                granted: false,
            });
        }
    }
    cases
}

fn leak(id: String) -> &'static str {
    Box::leak(id.into_boxed_str())
}

/// `limit` on one key's block: the state exists (a hot key), and for a
/// refused case every shard has been run dry first.
fn bench_decision(c: &mut Criterion, case: &Case) {
    let request = Request { count: 1.0, reserve: false };
    let item = BatchItem { name: "bench", key: None, config: &case.config, request };
    let mut random = xorshift();
    let mut slab = Slab::new();
    let base = slab.allocate(case.config.shard_count as u16);
    let mut now_ms = START_MS;
    let mut decide_once = |slab: &mut Slab, now_ms: f64| {
        ready(decide_and_maybe_write(&mut slab.block(base), item, now_ms, &mut random, true)).expect("a valid request")
    };
    // Write the first state; then, to refuse, take every token (power of two
    // choices may need many tries to find the last ones on 10 shards).
    assert!(decide_once(&mut slab, now_ms).is_ok());
    if !case.granted {
        let mut refusals_in_a_row = 0;
        while refusals_in_a_row < 1_000 {
            refusals_in_a_row = if decide_once(&mut slab, now_ms).is_ok() { 0 } else { refusals_in_a_row + 1 };
        }
    }
    assert_eq!(decide_once(&mut slab, now_ms).is_ok(), case.granted, "{}: the case does not take the path it names", case.id);
    c.bench_function(case.id, |b| {
        b.iter(|| {
            now_ms += 0.001;
            black_box(decide_once(&mut slab, black_box(now_ms)))
        })
    });
    assert_eq!(decide_once(&mut slab, now_ms).is_ok(), case.granted, "{}: the path changed while timing", case.id);
}

/// The pure transition, as `calculateRateLimit` in JavaScript computes it.
fn bench_transition(c: &mut Criterion) {
    let state = State { value: 5.0, ts: START_MS };
    for (id, config) in [
        ("calculate_rate_limit-token_bucket", config(RawConfig::token_bucket(10.0, 60_000.0))),
        ("calculate_rate_limit-fixed_window", config(RawConfig::fixed_window(10.0, 60_000.0).with("start", 0.0))),
    ] {
        c.bench_function(id, |b| {
            b.iter(|| {
                calculate_rate_limit(black_box(Some(state)), black_box(&config), black_box(START_MS + 1_000.0), black_box(1.0), || Ok(0.5))
                    .expect("no random number is drawn for an existing state")
            })
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
criterion_main!(core);
