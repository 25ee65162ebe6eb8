//! Sequences of decisions over a store that fails, forgets, or finds corrupt
//! and absurd states, with a clock that jumps anywhere and random numbers
//! that misbehave. Every call runs the core's reference drivers (plan, read,
//! decide, write) and passes `check_call`: nothing non-finite is stored,
//! nothing is written on a refusal, a check or an error (bar the writes
//! before a failed write), and a grant takes exactly the tokens asked from
//! shards that held them. Bad input fails before the store is touched.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use ratebound::{
    decide_call, draws_needed, limit_all, plan_value, value_draws_needed, value_of, BatchItem, Config, ConfigInput, Error, RateLimitResult,
    Request, Rule, State, StateRef, StateStore, WriteInfo, MAX_KEY_BYTES,
};
/// The test suites' random stream (`tests/common/split_mix.rs`).
#[path = "../../tests/common/split_mix.rs"]
#[allow(dead_code)]
mod split_mix;

use split_mix::SplitMix64;
use ratebound_fuzz::{check_call, Asked, Fault, FaultyStore, Num, Observed, Param, StoreError};

#[derive(Debug, Arbitrary)]
struct LimitSpec {
    token_bucket: bool,
    rate: Param,
    period: Param,
    capacity: Option<Param>,
    max_reserved: Option<Param>,
    shards: u8,
    start: Option<Start>,
}

/// A fixed window's `start`: whole seconds around today, or any number at all.
#[derive(Debug, Arbitrary)]
enum Start {
    Whole(i32),
    Any(Num),
}

impl Start {
    fn ms(&self) -> f64 {
        match self {
            Start::Whole(seconds) => 1.7e12 + f64::from(*seconds) * 1000.0,
            Start::Any(number) => number.0,
        }
    }
}

impl LimitSpec {
    fn config(&self) -> Result<Config, Error> {
        let mut raw = if self.token_bucket {
            ConfigInput::token_bucket(self.rate.0, self.period.0)
        } else {
            ConfigInput::fixed_window(self.rate.0, self.period.0)
        };
        if let Some(capacity) = self.capacity {
            raw = raw.with("capacity", capacity.0);
        }
        if let Some(max_reserved) = self.max_reserved {
            raw = raw.with("maxReserved", max_reserved.0);
        }
        raw = raw.with("shards", f64::from(1 + self.shards % 12));
        if let (false, Some(start)) = (self.token_bucket, &self.start) {
            raw = raw.with("start", start.ms());
        }
        Config::try_from(&raw)
    }
}

/// How the clock moves before a call.
#[derive(Debug, Arbitrary)]
enum Tick {
    Stay,
    /// Forward by a few periods' worth of ms.
    Forward(u16),
    /// Forward by a fraction of a period, rounded to whole ms.
    Fraction(u16),
    /// Forward by a fraction of a period, not rounded.
    Exactly(u16),
    /// Backwards by 1 s to 10 years.
    Back(u8),
    /// Forwards by 1 s to 10 years.
    Jump(u8),
    /// To any number at all.
    To(Num),
}

const STEPS_MS: [f64; 8] = [1_000.0, 60_000.0, 3_600_000.0, 86_400_000.0, 604_800_000.0, 31_536_000_000.0, 315_360_000_000.0, 1.0];

#[derive(Debug, Arbitrary)]
enum Count {
    /// A fraction (in 1/1000) of the largest count validation allows.
    Fraction(u16),
    Whole(u8),
    Any(Num),
}

#[derive(Debug, Arbitrary)]
enum Key {
    None,
    Short(u8),
    Proto,
    Empty,
    /// Longer than the package allows: the core never sees a key's bytes.
    TooLong,
}

#[derive(Debug, Arbitrary)]
struct Ask {
    second_limit: bool,
    key: Key,
    count: Count,
    reserve: bool,
}

#[derive(Debug, Arbitrary)]
enum Call {
    Limit(Ask),
    Check(Ask),
    Batch(Vec<Ask>, bool),
    GetValue(Ask, Option<Num>),
    /// The package's `reset`: the host deletes every shard of the name and key.
    Reset(Ask),
}

#[derive(Debug, Arbitrary)]
struct Step {
    tick: Tick,
    call: Call,
    fault: Option<Fault>,
    /// The call's random numbers: all from the seed, or with an arbitrary
    /// number first (or one number too few).
    odd_random: Option<Num>,
    short_of_draws: bool,
}

#[derive(Debug, Arbitrary)]
struct Input {
    first: LimitSpec,
    second: LimitSpec,
    start_ms: Num,
    seed: u64,
    steps: Vec<Step>,
}

fn largest_count(config: &Config, reserve: bool) -> f64 {
    let shard_factor = if config.shard_count < 3 { 1.0 } else { f64::from(config.shard_count) / 2.0 };
    let max = config.capacity / shard_factor;
    match (reserve, config.max_reserved) {
        (false, _) => max,
        (true, Some(max_reserved)) => max + max_reserved / shard_factor,
        (true, None) => 2.0 * max + 1.0,
    }
}

const NAMES: [&str; 2] = ["first", "second"];

fn key_text(key: &Key, long: &str) -> Option<String> {
    match key {
        Key::None => None,
        Key::Short(n) => Some(format!("k{}", n % 4)),
        Key::Proto => Some("__proto__".into()),
        Key::Empty => Some(String::new()),
        Key::TooLong => Some(long.into()),
    }
}

fuzz_target!(|input: Input| {
    let (Ok(first), Ok(second)) = (input.first.config(), input.second.config()) else { return };
    let configs = [first, second];
    let long_key = "é".repeat(MAX_KEY_BYTES / 2 + 1);
    let mut store = FaultyStore::default();
    let mut now_ms = if input.start_ms.0.is_finite() { input.start_ms.0 } else { 1.7e12 };
    let mut random = SplitMix64(input.seed);
    for step in input.steps.iter().take(48) {
        let period_ms = configs[0].period_ms;
        now_ms = match step.tick {
            Tick::Stay => now_ms,
            Tick::Forward(ms) => now_ms + f64::from(ms % 4096),
            Tick::Fraction(part) => now_ms + (period_ms * f64::from(part) / 65536.0).round(),
            Tick::Exactly(part) => now_ms + period_ms * f64::from(part) / 65536.0,
            Tick::Back(size) => now_ms - STEPS_MS[usize::from(size) % STEPS_MS.len()] * f64::from(1 + size / 8),
            Tick::Jump(size) => now_ms + STEPS_MS[usize::from(size) % STEPS_MS.len()] * f64::from(1 + size / 8),
            Tick::To(number) => number.0,
        };
        // Seeded numbers in [0, 1), drawn before the call reads anything; one odd number first, or one too few.
        let mut odd = step.odd_random.map(|number| number.0);
        let mut draw = |needed: usize| -> Vec<f64> {
            let mut drawn = Vec::with_capacity(needed);
            for _ in 0..needed {
                if let Some(number) = odd.take() {
                    drawn.push(number);
                    continue;
                }
                drawn.push(random.next_unit());
            }
            if step.short_of_draws {
                drawn.pop();
            }
            drawn
        };
        let resolve = |ask: &Ask| {
            let which = usize::from(ask.second_limit);
            let config = &configs[which];
            let count = match ask.count {
                Count::Fraction(part) => largest_count(config, ask.reserve) * f64::from(part % 1001) / 1000.0,
                Count::Whole(n) => f64::from(n),
                Count::Any(number) => number.0,
            };
            (NAMES[which], key_text(&ask.key, &long_key), config, Request { count, reserve: ask.reserve })
        };
        store.begin(step.fault);
        match &step.call {
            Call::Limit(ask) | Call::Check(ask) => {
                let writes_allowed = matches!(step.call, Call::Limit(_));
                let (name, key, config, request) = resolve(ask);
                let drawn = draw(draws_needed(config));
                let result = decide_call(&mut store, name, key.as_deref(), config, request, now_ms, &drawn, writes_allowed)
                    .map(|outcome| outcome.result);
                let asked = [Asked { name, key: key.as_deref(), config, count: request.count, reserve: request.reserve }];
                verify(&asked, writes_allowed, &result, &store, now_ms);
            }
            Call::Batch(asks, write) => {
                let resolved: Vec<_> = asks.iter().take(4).map(resolve).collect();
                let drawn: Vec<Vec<f64>> = resolved.iter().map(|(_, _, config, _)| draw(draws_needed(config))).collect();
                let items: Vec<BatchItem<'_>> = resolved
                    .iter()
                    .zip(&drawn)
                    .map(|((name, key, config, request), draws)| BatchItem { name, key: key.as_deref(), config, request: *request, draws })
                    .collect();
                let result = limit_all(&mut store, &items, now_ms, *write);
                let asked: Vec<Asked<'_>> = items
                    .iter()
                    .map(|item| Asked { name: item.name, key: item.key, config: item.config, count: item.request.count, reserve: item.request.reserve })
                    .collect();
                verify(&asked, *write, &result, &store, now_ms);
            }
            Call::GetValue(ask, sample) => {
                let (name, key, config, _) = resolve(ask);
                let wanted = sample.map(|n| n.0);
                let drawn = draw(value_draws_needed(config, wanted).unwrap_or(0));
                let result = get_value(&mut store, name, key.as_deref(), config, wanted, now_ms, &drawn);
                assert!(store.write_log.is_empty(), "getValue wrote {:?}", store.write_log);
                assert!(store.read_log.len() <= config.shard_count as usize);
                let all_read_finite = store.read_log.iter().all(|(_, s)| s.is_none_or(|s| s.value.is_finite() && s.ts.is_finite()));
                match result {
                    Ok(report) => {
                        assert!(all_read_finite, "getValue counted a corrupt state: {report:?}");
                        assert!(!report.value.is_nan() && !report.ts.is_nan(), "getValue reported {report:?}");
                        assert!(report.shard < config.shard_count);
                    }
                    Err(StoreError::Core(error)) => {
                        assert!(matches!(error, Error::InvalidRequest(_) | Error::InvalidConfig(_) | Error::InvalidRandom { .. }), "{error:?}");
                        assert!(store.read_log.is_empty(), "getValue read before refusing bad input: {error:?}");
                    }
                    Err(StoreError::Injected(_)) => {}
                    Err(StoreError::Corrupt(_)) => assert!(!all_read_finite),
                }
            }
            Call::Reset(ask) => {
                // The core has no reset: the host deletes each shard (the package's `reset`).
                let (name, key, config, _) = resolve(ask);
                for shard in 0..config.shard_count {
                    let info = WriteInfo::delete(now_ms);
                    if store.write(StateRef { name, key: key.as_deref(), shard }, None, info).is_err() {
                        break;
                    }
                }
            }
        }
    }
});

fn verify(asked: &[Asked<'_>], writes_allowed: bool, result: &Result<RateLimitResult, StoreError>, store: &FaultyStore, now_ms: f64) {
    let observed = Observed { writes_allowed, result, reads: &store.read_log, writes: &store.write_log, now_ms };
    if let Err(broken) = check_call(asked, &observed) {
        panic!("{broken}\n  asked {asked:?}\n  at {now_ms}\n  answered {result:?}\n  reads {:?}\n  writes {:?}\n  fault {:?}", store.read_log, store.write_log, store.fired);
    }
    // Bad input (a count, a clock, random numbers, a request that can never
    // succeed, a wait no clock can keep) is refused before the store is touched.
    // (An unstorable state is found by deciding, after the reads.)
    let bad_input = match result {
        Err(StoreError::Core(Error::InvalidRequest(problem))) => problem.rule != Rule::Unstorable,
        Err(StoreError::Core(Error::InvalidConfig(_) | Error::CountExceedsMax { .. } | Error::InvalidRandom { .. })) => true,
        _ => false,
    };
    if bad_input {
        assert!(store.read_log.is_empty() && store.write_log.is_empty(), "validated after reading: {result:?}");
    }
}

/// `getValue` as a host runs it: plan the sampled shards, read them, report.
fn get_value(
    store: &mut FaultyStore,
    name: &str,
    key: Option<&str>,
    config: &Config,
    wanted: Option<f64>,
    now_ms: f64,
    draws: &[f64],
) -> Result<ratebound::ValueReport, StoreError> {
    let mut shards = [0.0; 1024];
    let sampled = plan_value(config, wanted, now_ms, draws, &mut shards)?;
    let mut states: Vec<(u32, Option<State>)> = Vec::with_capacity(sampled);
    for &shard in &shards[..sampled] {
        let shard = shard as u32;
        states.push((shard, store.read(StateRef { name, key, shard })?));
    }
    Ok(value_of(config, now_ms, sampled, |index| states[index]))
}
