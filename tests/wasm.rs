//! The core compiled to wasm32 and run where the package runs it: in Node and
//! in headless Chromium (`wasm-bindgen-test-runner`, `scripts/test.sh`), and
//! natively too (`cargo test`), where each test means the same.
//!
//! - The exports (`ratebound::wasm`: compile, plan, decide, through the shared
//!   buffer) against the reference driver (`decide_call` over an in-memory
//!   store), call for call, on a deterministic stream of random limits, calls
//!   and clocks.
//! - A digest of every number a long random run decides: the same constant
//!   on every target, so the `.wasm` computes bit for bit what native code does.
//! - The behaviour a caller relies on, one sentence per test.
//!
//! The stream is the suites' one SplitMix64 (`tests/common/split_mix.rs`).

use std::collections::HashMap;
use std::sync::Mutex;

use ratebound::wasm::decide::{rb_compile, rb_decide_one, rb_plan};
use ratebound::wasm::io::{self as layout, io};
use ratebound::{
    calculate_rate_limit, decide_call, draws_needed, with_jitter, Config, ConfigInput, Error, Field, Kind, Outcome, RateLimitResult, Request, Rule, State,
    StateRef, StateStore, WriteInfo,
};
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

#[path = "common/split_mix.rs"]
#[allow(dead_code)]
mod split_mix;
use split_mix::SplitMix64;

/// The shared deterministic stream, with the picks this suite makes from it.
struct Stream(SplitMix64);

impl Stream {
    fn next_unit(&mut self) -> f64 {
        self.0.next_unit()
    }

    /// A number from `choices`.
    fn pick(&mut self, choices: &[f64]) -> f64 {
        choices[((self.next_unit() * choices.len() as f64) as usize).min(choices.len() - 1)]
    }

    /// A valid limit: either kind, rates and periods from tiny to large, sometimes sharded or reserving.
    fn config(&mut self) -> Config {
        let rate = self.pick(&[1.0, 3.0, 10.0, 100.0, 0.5, 1e6]);
        let period = self.pick(&[1.0, 1000.0, 60_000.0, 3_600_000.0]);
        let mut input = if self.next_unit() < 0.5 { ConfigInput::token_bucket(rate, period) } else { ConfigInput::fixed_window(rate, period) };
        if self.next_unit() < 0.3 {
            input = input.with("shards", self.pick(&[2.0, 3.0, 8.0]));
        }
        if self.next_unit() < 0.3 {
            input = input.with("maxReserved", self.pick(&[0.0, 5.0, 100.0]));
        }
        if self.next_unit() < 0.5 {
            input = input.with("capacity", rate * self.pick(&[1.0, 2.0, 0.5]));
        }
        Config::try_from(&input).expect("a valid config")
    }

    fn draws(&mut self, config: &Config) -> Vec<f64> {
        (0..draws_needed(config)).map(|_| self.next_unit()).collect()
    }
}

/// `{ value, ts }` per shard of one limit and key.
#[derive(Default)]
struct Memory(HashMap<u32, State>);

impl StateStore for Memory {
    type Error = Error;

    fn read(&mut self, at: StateRef<'_>) -> Result<Option<State>, Error> {
        Ok(self.0.get(&at.shard).copied())
    }

    fn write(&mut self, at: StateRef<'_>, state: Option<State>, _info: WriteInfo) -> Result<(), Error> {
        match state {
            Some(state) => self.0.insert(at.shard, state),
            None => self.0.remove(&at.shard),
        };
        Ok(())
    }
}

/// One call through the exports, as the package makes it: compile, plan, read, decide, write.
fn through_exports(store: &mut Memory, config: &Config, request: Request, now: f64, draws: &[f64], write: bool) -> Result<(bool, f64), f64> {
    let io = io();
    let input = |given: Option<f64>| given.map_or((0.0, 0.0), |number| (2.0, number));
    io[layout::EXTRA + layout::COMPILE_KIND] = f64::from(u8::from(config.kind == Kind::FixedWindow));
    let fields = [Some(config.rate), Some(config.period_ms), Some(config.capacity), config.max_reserved, Some(f64::from(config.shard_count)), config.start_ms];
    for (index, field) in fields.iter().enumerate() {
        let (tag, value) = input(*field);
        io[layout::EXTRA + layout::COMPILE_FIELDS + 2 * index] = tag;
        io[layout::EXTRA + layout::COMPILE_FIELDS + 2 * index + 1] = value;
    }
    assert_eq!(rb_compile(), 0.0);
    assert_eq!(io[layout::EXTRA + layout::COMPILED_DRAWS], draws.len() as f64);
    let item = layout::ITEMS;
    for at in 0..layout::CONFIG_LEN {
        io[item + at] = io[layout::EXTRA + layout::COMPILED_CONFIG + at];
    }
    io[item + layout::ITEM_COUNT] = request.count;
    io[item + layout::ITEM_RESERVE] = f64::from(u8::from(request.reserve));
    io[item + layout::ITEM_WRITE] = f64::from(u8::from(write));
    io[item + layout::ITEM_NOW] = now;
    for draw in 0..4 {
        io[item + layout::ITEM_DRAWS + draw] = draws.get(draw).copied().unwrap_or(0.0);
    }
    io[item + layout::ITEM_FIGURES] = 0.0;
    let status = rb_plan(1);
    if status < 0.0 {
        return Err(status);
    }
    let reads = io[layout::PLAN + layout::PLAN_READS] as usize;
    let shards = [io[layout::PLAN + layout::PLAN_FIRST] as u32, io[layout::PLAN + layout::PLAN_SECOND] as u32];
    for (slot, shard) in shards.iter().enumerate().take(reads) {
        let at = layout::SLOTS + slot * layout::SLOT + layout::SLOT_STORED;
        let stored = store.0.get(shard).copied();
        io[at + layout::STATE_VALUE] = stored.map_or(f64::NAN, |state| state.value);
        io[at + layout::STATE_TS] = stored.map_or(f64::NAN, |state| state.ts);
    }
    let status = rb_decide_one();
    if status < 0.0 {
        return Err(status);
    }
    for (slot, shard) in shards.iter().enumerate().take(reads) {
        let at = layout::SLOTS + slot * layout::SLOT + layout::SLOT_PENDING;
        if !io[at].is_nan() {
            store.0.insert(*shard, State { value: io[at + layout::STATE_VALUE], ts: io[at + layout::STATE_TS] });
        }
    }
    Ok((status == 1.0, io[layout::OUT + layout::OUT_RETRY_AFTER]))
}

/// The buffer is one static: one test at a time uses it.
static BUFFER: Mutex<()> = Mutex::new(());

#[test]
fn the_exports_decide_as_the_reference_driver_call_for_call() {
    let _guard = BUFFER.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut stream = Stream(SplitMix64(30));
    for _ in 0..60 {
        let config = stream.config();
        let (mut reference, mut exported) = (Memory::default(), Memory::default());
        let mut now = 1_750_000_000_000.0 + stream.next_unit() * 1e6;
        for _ in 0..40 {
            now += stream.pick(&[0.0, 1.0, 250.0, 10_000.0, 1e7]);
            let count = stream.pick(&[0.0, 1.0, 1.0, 2.0, 7.0, 1e9, -1.0]);
            let request = Request { count, reserve: stream.next_unit() < 0.2 };
            let write = stream.next_unit() < 0.8;
            let draws = stream.draws(&config);
            let expected = decide_call(&mut reference, "wasm", Some("key"), &config, request, now, &draws, write);
            let got = through_exports(&mut exported, &config, request, now, &draws, write);
            match (expected, got) {
                (Ok(outcome), Ok((ok, wait))) => {
                    assert_eq!(outcome.result.is_ok(), ok, "{config:?} {request:?} at {now}");
                    assert_eq!(outcome.result.retry_after_ms().map(f64::to_bits), (!wait.is_nan()).then_some(wait.to_bits()));
                }
                (Err(error), Err(status)) => assert_eq!(-f64::from(error.number()), status),
                (expected, got) => panic!("{config:?} {request:?} at {now}: reference {expected:?}, exports {got:?}"),
            }
            let mut states: Vec<_> = reference.0.iter().map(|(shard, state)| (*shard, state.value.to_bits(), state.ts.to_bits())).collect();
            let mut theirs: Vec<_> = exported.0.iter().map(|(shard, state)| (*shard, state.value.to_bits(), state.ts.to_bits())).collect();
            states.sort_unstable();
            theirs.sort_unstable();
            assert_eq!(states, theirs);
        }
    }
}

/// FNV-1a over the bits of every number a run decides.
struct Digest(u64);

impl Digest {
    fn add(&mut self, number: f64) {
        for byte in number.to_bits().to_le_bytes() {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(0x0100_0000_01B3);
        }
    }
}

#[test]
fn a_long_random_run_decides_the_same_numbers_on_every_target() {
    let mut stream = Stream(SplitMix64(7));
    let mut digest = Digest(0xCBF2_9CE4_8422_2325);
    for _ in 0..200 {
        let config = stream.config();
        let mut store = Memory::default();
        let mut now = stream.next_unit() * 1e12;
        for _ in 0..50 {
            now += stream.pick(&[0.0, 0.5, 3.0, 999.0, 123_456.0]);
            let request = Request { count: stream.pick(&[1.0, 2.0, 0.25, 13.0]), reserve: stream.next_unit() < 0.3 };
            let draws = stream.draws(&config);
            match decide_call(&mut store, "digest", None, &config, request, now, &draws, true) {
                Ok(Outcome { result, shares, .. }) => {
                    digest.add(f64::from(u8::from(result.is_ok())));
                    digest.add(result.retry_after_ms().unwrap_or(-1.0));
                    digest.add(shares[0]);
                    digest.add(shares[1]);
                }
                Err(error) => digest.add(-f64::from(error.number())),
            }
            let mut states: Vec<_> = store.0.iter().collect();
            states.sort_unstable_by_key(|(shard, _)| **shard);
            for (_, state) in states {
                digest.add(state.value);
                digest.add(state.ts);
            }
        }
    }
    assert_eq!(digest.0, 6_890_069_505_286_477_401, "the digest of this run, natively");
}

fn bucket(rate: f64, period_ms: f64) -> Config {
    Config::try_from(&ConfigInput::token_bucket(rate, period_ms)).expect("a valid config")
}

fn take(store: &mut Memory, config: &Config, count: f64, now: f64) -> RateLimitResult {
    decide_call(store, "send", Some("ada"), config, Request { count, reserve: false }, now, &vec![0.5; draws_needed(config)], true).expect("no error").result
}

#[test]
fn a_token_bucket_grants_its_capacity_then_refills_at_its_rate() {
    let config = bucket(10.0, 1000.0);
    let mut store = Memory::default();
    for _ in 0..10 {
        assert!(take(&mut store, &config, 1.0, 0.0).is_ok());
    }
    assert_eq!(take(&mut store, &config, 1.0, 0.0).retry_after_ms(), Some(100.0));
    assert!(take(&mut store, &config, 1.0, 100.0).is_ok());
    assert!(!take(&mut store, &config, 2.0, 150.0).is_ok());
}

#[test]
fn a_fixed_window_resets_at_its_edge() {
    let config = Config::try_from(&ConfigInput::fixed_window(3.0, 1000.0).with("start", 0.0)).expect("a valid config");
    let mut store = Memory::default();
    for _ in 0..3 {
        assert!(take(&mut store, &config, 1.0, 10.0).is_ok());
    }
    assert_eq!(take(&mut store, &config, 1.0, 10.0).retry_after_ms(), Some(990.0));
    assert!(take(&mut store, &config, 3.0, 1000.0).is_ok());
}

#[test]
fn a_sharded_limit_never_grants_more_than_its_rate() {
    let config = Config::try_from(&ConfigInput::token_bucket(100.0, 1000.0).with("shards", 4.0)).expect("a valid config");
    let mut store = Memory::default();
    let mut stream = Stream(SplitMix64(3));
    let granted = (0..400)
        .filter(|_| {
            let draws = stream.draws(&config);
            decide_call(&mut store, "send", None, &config, Request { count: 1.0, reserve: false }, 0.0, &draws, true).expect("no error").result.is_ok()
        })
        .count();
    assert!((90..=100).contains(&granted), "{granted}");
}

#[test]
fn bad_input_is_a_coded_error_that_writes_nothing() {
    let config = bucket(10.0, 1000.0);
    let mut store = Memory::default();
    let draws = vec![0.5; draws_needed(&config)];
    let error = decide_call(&mut store, "send", None, &config, Request { count: -1.0, reserve: false }, 0.0, &draws, true).expect_err("a negative count");
    assert_eq!(error.code(), "INVALID_REQUEST");
    assert_eq!(error.field(), Some(Field::Count));
    let error = decide_call(&mut store, "send", None, &config, Request { count: 11.0, reserve: false }, 0.0, &draws, true).expect_err("more than capacity");
    assert_eq!(error.code(), "COUNT_EXCEEDS_MAX");
    let error = Config::try_from(&ConfigInput::token_bucket(-1.0, 1000.0)).expect_err("a negative rate");
    assert_eq!(error.problem().map(|problem| (problem.field, problem.rule)), Some((Field::Rate, Rule::PositiveFinite)));
    assert!(store.0.is_empty());
}

#[test]
fn calculate_rate_limit_and_with_jitter_are_pure_arithmetic() {
    let config = bucket(10.0, 1000.0);
    let taken = calculate_rate_limit(None, &config, 0.0, 4.0, 0.0);
    assert_eq!((taken.value, taken.ts, taken.retry_after_ms), (6.0, 0.0, None));
    let short = calculate_rate_limit(Some(State { value: 0.0, ts: 0.0 }), &config, 50.0, 1.0, 0.0);
    assert_eq!(short.retry_after_ms, Some(50.0));
    assert_eq!(with_jitter(100.0, 10.0, 0.0), Ok(100.0));
    assert!(with_jitter(100.0, 10.0, 1.0).is_err());
}
