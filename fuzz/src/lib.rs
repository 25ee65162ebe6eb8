//! What the fuzz targets share: numbers that reach every edge of `f64`, a
//! store that fails on request (and, as a host must, refuses to hand the core
//! a stored state that is not two finite numbers), and the checks every
//! decision must pass.
//!
//! The checks are an oracle written apart from the core: they project a
//! stored state forward with the SPEC formulas and compare tokens taken with
//! tokens asked, so a decision that admits without tokens, consumes less than
//! it was asked, writes a non-finite number or writes on a refusal fails them.
//! `cargo test` in `fuzz/` shows each check catching a broken decision.

use std::collections::HashMap;

use arbitrary::{Arbitrary, Result as ArbitraryResult, Unstructured};
use ratebound::{Config, Error, Kind, RateLimitResult, State, StateRef, StateStore, WriteInfo};

/// Numbers at the edges: zeros, NaN, infinities, subnormals, the extremes,
/// around 2^53, JavaScript's `Date` range, and values near 1 for random sources.
pub const SPECIAL: [f64; 36] = [
    0.0,
    -0.0,
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::MIN_POSITIVE,
    5e-324,
    -5e-324,
    2.225e-308,
    f64::MAX,
    f64::MIN,
    f64::EPSILON,
    9_007_199_254_740_992.0,  // 2^53
    9_007_199_254_740_994.0,  // 2^53 + 2
    9_007_199_254_740_991.0,  // 2^53 - 1
    -9_007_199_254_740_992.0, // -2^53
    18_446_744_073_709_551_616.0,
    1e21,
    8.64e15, // the last instant a JavaScript Date can hold
    -8.64e15,
    1.7e12, // about today, in ms since the epoch
    0.1,
    0.5,
    1.0,
    -1.0,
    2.5,
    3.0,
    1000.0,
    1024.0,
    1025.0,
    1e-7,
    0.9999999999999999,
    1e300,
    1e-300,
    604_800_000.0,  // a week
    31_536_000_000.0, // a year
];

/// An `f64` drawn to hit the edges often: a special value, any bit pattern,
/// a small integer, a fraction, a wide magnitude, a time near today or near 2^53.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Num(pub f64);

impl<'a> Arbitrary<'a> for Num {
    fn arbitrary(u: &mut Unstructured<'a>) -> ArbitraryResult<Self> {
        let number = match u.int_in_range(0u8..=7)? {
            0 | 1 => *u.choose(&SPECIAL)?,
            2 => f64::from_bits(u.arbitrary()?),
            3 => f64::from(u.arbitrary::<i16>()?),
            4 => f64::from(u.arbitrary::<i32>()?) / 1024.0,
            5 => {
                let mantissa = f64::from(u.arbitrary::<u32>()?);
                let exponent = u.int_in_range(-1100i32..=1030)?;
                let sign = if u.arbitrary()? { -1.0 } else { 1.0 };
                sign * mantissa * 2f64.powi(exponent)
            }
            6 => 1.7e12 + f64::from(u.arbitrary::<i32>()?),
            _ => 9_007_199_254_740_992.0 + f64::from(u.arbitrary::<i16>()?),
        };
        Ok(Num(number))
    }
}

/// A positive number drawn mostly from values a host would use, sometimes from anywhere.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Param(pub f64);

impl<'a> Arbitrary<'a> for Param {
    fn arbitrary(u: &mut Unstructured<'a>) -> ArbitraryResult<Self> {
        const USUAL: [f64; 12] = [1.0, 2.0, 3.0, 5.0, 10.0, 40.0, 100.0, 1000.0, 60_000.0, 0.5, 1.5, 604_800_000.0];
        Ok(Param(if u.ratio(3u8, 4u8)? { *u.choose(&USUAL)? } else { Num::arbitrary(u)?.0 }))
    }
}

/// Where a state lives: name, key, shard.
pub type Slot = (String, Option<String>, u32);

fn slot_of(at: StateRef<'_>) -> Slot {
    (at.name.to_string(), at.key.map(Into::into), at.shard)
}

/// One fault for one call, counted in that call's reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Arbitrary)]
pub enum Fault {
    /// The `at`-th read (from 0) fails.
    ReadFails { at: u8 },
    /// The `at`-th write fails; the writes before it stay (a non-transactional store).
    WriteFails { at: u8 },
    /// The `at`-th read finds a state that is not two finite numbers (the
    /// store, as the package's store layer does, fails the call naming the ref).
    ReadsCorrupt { at: u8, value: Num, ts: Num, which: u8 },
    /// The `at`-th read answers some finite state, however absurd.
    ReadsHostile { at: u8, value: Num, ts: Num },
    /// The `at`-th read answers "no state" although one is stored.
    Forgets { at: u8 },
}

/// The store's errors: the core's, an injected failure, or a corrupt state found.
#[derive(Debug, Clone, PartialEq)]
pub enum StoreError {
    /// An error of the limiter itself.
    Core(Error),
    /// The store failed on purpose.
    Injected(&'static str),
    /// What the store found at this ref is not two finite numbers: the call
    /// fails (never "full"), as the package's store layer makes it.
    Corrupt(Slot),
}

impl From<Error> for StoreError {
    fn from(error: Error) -> Self {
        StoreError::Core(error)
    }
}

/// An in-memory store that injects one [`Fault`] per call and logs what each call saw and did.
#[derive(Debug, Default, Clone)]
pub struct FaultyStore {
    /// The stored states.
    pub states: HashMap<Slot, State>,
    fault: Option<Fault>,
    reads: u8,
    writes: u8,
    /// This call's reads: the slot and the answer the limiter got.
    pub read_log: Vec<(Slot, Option<State>)>,
    /// This call's writes that took effect.
    pub write_log: Vec<(Slot, Option<State>)>,
    /// Whether this call's fault fired, and what it was.
    pub fired: Option<Fault>,
}

impl FaultyStore {
    /// Starts a call: forgets the logs and arms `fault`.
    pub fn begin(&mut self, fault: Option<Fault>) {
        self.fault = fault;
        self.reads = 0;
        self.writes = 0;
        self.read_log.clear();
        self.write_log.clear();
        self.fired = None;
    }
}

/// A state made non-finite in `value`, `ts` or both, whatever the numbers drawn.
pub fn corrupt(value: f64, ts: f64, which: u8) -> State {
    let non_finite = |x: f64| if x.is_finite() { f64::NAN } else { x };
    match which % 3 {
        0 => State { value: non_finite(value), ts },
        1 => State { value, ts: non_finite(ts) },
        _ => State { value: non_finite(value), ts: non_finite(ts) },
    }
}

fn finite(x: f64, fallback: f64) -> f64 {
    if x.is_finite() { x } else { fallback }
}

impl StateStore for FaultyStore {
    type Error = StoreError;

    fn read(&mut self, at: StateRef<'_>) -> Result<Option<State>, StoreError> {
        let index = self.reads;
        self.reads = self.reads.saturating_add(1);
        let slot = slot_of(at);
        let stored = self.states.get(&slot).copied();
        let answer = match self.fault {
            Some(fault @ Fault::ReadFails { at }) if at == index => {
                self.fired = Some(fault);
                return Err(StoreError::Injected("read failed"));
            }
            Some(fault @ Fault::ReadsCorrupt { at, value, ts, which }) if at == index => {
                self.fired = Some(fault);
                Some(corrupt(value.0, ts.0, which))
            }
            Some(fault @ Fault::ReadsHostile { at, value, ts }) if at == index => {
                self.fired = Some(fault);
                Some(State { value: finite(value.0, 0.0), ts: finite(ts.0, 0.0) })
            }
            Some(fault @ Fault::Forgets { at }) if at == index => {
                self.fired = Some(fault);
                None
            }
            _ => stored,
        };
        self.read_log.push((slot.clone(), answer));
        // The host's check (the core's contract: a stored state is two finite numbers).
        if answer.is_some_and(|state| !(state.value.is_finite() && state.ts.is_finite())) {
            return Err(StoreError::Corrupt(slot));
        }
        Ok(answer)
    }

    fn write(&mut self, at: StateRef<'_>, state: Option<State>, _info: WriteInfo) -> Result<(), StoreError> {
        let index = self.writes;
        self.writes = self.writes.saturating_add(1);
        if let Some(fault @ Fault::WriteFails { at }) = self.fault {
            if at == index {
                self.fired = Some(fault);
                return Err(StoreError::Injected("write failed"));
            }
        }
        let slot = slot_of(at);
        match state {
            Some(state) => self.states.insert(slot.clone(), state),
            None => self.states.remove(&slot),
        };
        self.write_log.push((slot, state));
        Ok(())
    }
}

/// JavaScript's `Math.min`, written again here so the oracle does not borrow the core's.
fn min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a <= b {
        a
    } else {
        b
    }
}

/// The tokens a shard holds at `now_ms`, by the SPEC's formulas (no count
/// taken), with the clock guard: time before `ts` refills nothing.
pub fn tokens_at(state: State, shard_config: &Config, now_ms: f64) -> f64 {
    let since_ms = now_ms - state.ts;
    match shard_config.kind {
        Kind::TokenBucket => {
            let elapsed_ms = if since_ms > 0.0 { since_ms } else { 0.0 };
            min(state.value + elapsed_ms * (shard_config.rate / shard_config.period_ms), shard_config.capacity)
        }
        Kind::FixedWindow => {
            let windows = (since_ms / shard_config.period_ms).floor();
            let windows = if windows > 0.0 { windows } else { 0.0 };
            min(state.value + shard_config.rate * windows, shard_config.capacity)
        }
        // The targets draw token buckets and fixed windows only (`given_kind`); a sliding window
        // decides on two windows' states, proven by its property tests and against @upstash/ratelimit.
        Kind::SlidingWindow => unreachable!("the fuzz targets draw no sliding window"),
    }
}

/// One limit of a call, as the oracle needs it.
#[derive(Debug, Clone)]
pub struct Asked<'a> {
    /// The limit's name.
    pub name: &'a str,
    /// The key.
    pub key: Option<&'a str>,
    /// Its validated config.
    pub config: &'a Config,
    /// Tokens asked.
    pub count: f64,
    /// Whether it reserved.
    pub reserve: bool,
}

/// What a call did, for [`check_call`].
#[derive(Debug, Clone)]
pub struct Observed<'a> {
    /// Whether the call may write (`limit`, `limitAll`) or not (`check`, `checkAll`).
    pub writes_allowed: bool,
    /// The answer, or the error.
    pub result: &'a Result<RateLimitResult, StoreError>,
    /// The reads: slot and the answer the limiter got (`None`: no state, a full shard).
    pub reads: &'a [(Slot, Option<State>)],
    /// The writes that took effect, in order.
    pub writes: &'a [(Slot, Option<State>)],
    /// The instant of the call.
    pub now_ms: f64,
}

/// Checks one `limit` / `check` / `limitAll` / `checkAll` call against the
/// rules that keep a limiter honest, and says which rule it broke.
///
/// - Every state written is two finite numbers, and a written state was read first.
/// - A refusal, a `check`, and any call that read a non-finite state write nothing;
///   a call that read a non-finite state fails (with the store's error naming the ref).
/// - An error writes nothing, except on a store whose write failed: then the
///   writes before the failing one may stay, and they never add tokens.
/// - A `retryAfter` is a number; with real times (and, for a fixed window,
///   exact window arithmetic) never below 0 by more than rounding ([`wait_tolerance`]).
/// - A grant takes exactly the tokens asked: for each limit and key, the
///   tokens its written shards held at `now` before the call, minus what they
///   hold after, is the sum of the counts asked of it (to 1e-12, relative).
///   For a fixed window this needs exact window arithmetic
///   ([`windows_are_exact`]), and then a written window also holds `now`.
/// - A grant without `reserve` leaves every written shard at `>= 0`; with a
///   `maxReserved`, at `>= -maxReserved / shards`. No shard ends above its capacity.
///
/// # Errors
/// A sentence naming the broken rule and the numbers.
pub fn check_call(asked: &[Asked<'_>], observed: &Observed<'_>) -> Result<(), String> {
    let Observed { writes_allowed, result, reads, writes, now_ms } = *observed;
    for (slot, state) in writes {
        let Some(state) = state else { return Err(format!("a decision deleted {slot:?}")) };
        if !(state.value.is_finite() && state.ts.is_finite()) {
            return Err(format!("wrote a non-finite state {state:?} to {slot:?}"));
        }
        if !reads.iter().any(|(read, _)| read == slot) {
            return Err(format!("wrote {slot:?} without reading it"));
        }
    }
    let read_corrupt = reads.iter().any(|(_, state)| state.is_some_and(|s| !(s.value.is_finite() && s.ts.is_finite())));
    if read_corrupt && !matches!(result, Err(StoreError::Corrupt(_))) {
        return Err(format!("read a non-finite state but answered {result:?}"));
    }
    let exact_windows = windows_are_exact(asked, reads, now_ms);
    // A token bucket's wait is a sum of non-negative terms; a fixed window's is
    // `ts + period × n - now`, which rounds below 0 when the period is finer than
    // the times' resolution (4e-149 ms at 0.1 ms from a start 4e11 ms back).
    let waits_checked = times_are_real(asked, reads, now_ms)
        && (exact_windows || asked.iter().all(|a| a.config.kind == Kind::TokenBucket));
    let granted = match result {
        Err(StoreError::Injected("write failed")) => {
            // The writes before the failing one stay: they must still never add tokens.
            return check_tokens_taken(asked, reads, writes, now_ms, false, exact_windows);
        }
        Err(_) if !writes.is_empty() => return Err(format!("failed with {result:?} but wrote {writes:?}")),
        Err(_) => return Ok(()),
        Ok(result) => result,
    };
    if !writes_allowed && !writes.is_empty() {
        return Err(format!("a check wrote {writes:?}"));
    }
    match granted {
        RateLimitResult::Refused { retry_after_ms, .. } => {
            if !writes.is_empty() {
                return Err(format!("a refusal wrote {writes:?}"));
            }
            if retry_after_ms.is_nan() || (waits_checked && *retry_after_ms < -wait_tolerance(now_ms)) {
                return Err(format!("a refusal said to retry after {retry_after_ms}"));
            }
            Ok(())
        }
        RateLimitResult::Allowed { retry_after_ms, .. } => {
            if retry_after_ms.is_some_and(|wait| wait.is_nan() || (waits_checked && wait < -wait_tolerance(now_ms))) {
                return Err(format!("a grant said to wait {retry_after_ms:?}"));
            }
            if writes_allowed {
                check_tokens_taken(asked, reads, writes, now_ms, true, exact_windows)
            } else {
                Ok(())
            }
        }
    }
}

/// The most milliseconds a clock can report and still count whole ms: 2^53.
pub const REAL_TIME_LIMIT_MS: f64 = 9_007_199_254_740_992.0;

/// Whether every time in the call is one a clock could report (within
/// ±2^53 ms, periods up to 2^53 ms): `now`, a fixed window's `start`, the
/// stored `ts` values. Beyond that, window arithmetic loses whole windows to
/// rounding; the checks that need exact windows apply only inside.
pub fn times_are_real(asked: &[Asked<'_>], reads: &[(Slot, Option<State>)], now_ms: f64) -> bool {
    let real = |ms: f64| ms.abs() <= REAL_TIME_LIMIT_MS;
    real(now_ms)
        && asked.iter().all(|a| a.config.period_ms <= REAL_TIME_LIMIT_MS && a.config.start_ms.is_none_or(real))
        && reads.iter().all(|(_, state)| state.is_none_or(|s| real(s.ts)))
}

/// Whether fixed-window arithmetic is exact in this call: `now`, the stored
/// `ts` values, `start` and the periods are whole milliseconds within
/// ±2^52, so every sum, difference and `k × period` is an integer below 2^53.
///
/// Outside, a window's start can round to one window behind `now`, and the
/// next decision at the same instant refills that window again (as the
/// reference does: the formulas are the same floats). Hosts pass
/// `Date.now()` and whole-ms periods; see the README's reliability section.
pub fn windows_are_exact(asked: &[Asked<'_>], reads: &[(Slot, Option<State>)], now_ms: f64) -> bool {
    const EXACT_LIMIT_MS: f64 = 4_503_599_627_370_496.0; // 2^52
    let exact = |ms: f64| ms.abs() <= EXACT_LIMIT_MS && ms.fract() == 0.0;
    exact(now_ms)
        && asked.iter().all(|a| exact(a.config.period_ms) && a.config.start_ms.is_none_or(exact))
        && reads.iter().all(|(_, state)| state.is_none_or(|s| exact(s.ts)))
}

/// How far below 0 a `retryAfter` may round: `ts + period × n - now` is
/// computed in floats, and with `ts` and `now` a few ulps apart (tiny periods,
/// times near 2^53) it can land a hair below 0, as it does in the reference.
fn wait_tolerance(now_ms: f64) -> f64 {
    1e-9 * (now_ms.abs() + 1.0)
}

/// Tokens taken per limit and key: exactly the counts asked when the call
/// was granted (`complete`), at most that and never negative when a write failed.
fn check_tokens_taken(
    asked: &[Asked<'_>],
    reads: &[(Slot, Option<State>)],
    writes: &[(Slot, Option<State>)],
    now_ms: f64,
    complete: bool,
    exact_windows: bool,
) -> Result<(), String> {
    let mut limits: Vec<(&str, Option<&str>)> = asked.iter().map(|a| (a.name, a.key)).collect();
    limits.dedup();
    limits.sort();
    limits.dedup();
    for (name, key) in limits {
        let items: Vec<&Asked<'_>> = asked.iter().filter(|a| a.name == name && a.key == key).collect();
        let config = items[0].config;
        let shard = config.per_shard();
        let counts: f64 = items.iter().map(|a| a.count).sum();
        let any_reserve = items.iter().any(|a| a.reserve);
        // The last write of each shard is where it ends.
        let mut last: Vec<(u32, State)> = Vec::new();
        for ((slot_name, slot_key, shard_index), state) in writes {
            if slot_name == name && slot_key.as_deref() == key {
                let state = state.expect("deletions were refused above");
                last.retain(|(index, _)| index != shard_index);
                last.push((*shard_index, state));
            }
        }
        let mut taken = 0.0;
        let mut scale = counts.abs() + config.capacity;
        for (shard_index, after) in &last {
            // The last read of a shard is where its chain of decisions began: once
            // a batch has decided on a shard, later items read its pending state.
            let before = reads
                .iter()
                .rev()
                .find(|((n, k, s), _)| n == name && k.as_deref() == key && s == shard_index)
                .and_then(|(_, state)| *state);
            let held = match before {
                Some(state) => tokens_at(state, &shard, now_ms),
                None => shard.capacity,
            };
            if after.value > shard.capacity + 1e-12 * (shard.capacity.abs() + held.abs()) {
                return Err(format!("{name:?} {key:?} shard {shard_index} holds {} > its capacity {}", after.value, shard.capacity));
            }
            if let Some(state) = before {
                if after.ts < state.ts {
                    return Err(format!("{name:?} shard {shard_index}: ts moved back from {} to {}", state.ts, after.ts));
                }
            }
            // A fixed window's written `ts` is the start of the window holding
            // `now`: more than a period behind, the next call at this instant
            // would refill again; ahead of `now`, it would refill late.
            let began_ms = match before {
                Some(state) => Some(state.ts),
                None => shard.start_ms, // a fresh shard starts at `start`, or within the last period
            };
            let moved = began_ms.is_none_or(|ts| ts <= now_ms);
            if exact_windows && shard.kind == Kind::FixedWindow && moved {
                if !(after.ts <= now_ms && after.ts + shard.period_ms > now_ms) {
                    return Err(format!(
                        "{name:?} {key:?} shard {shard_index}: window starting {} (period {}) does not hold now {now_ms}",
                        after.ts, shard.period_ms
                    ));
                }
            }
            let floor = match (any_reserve, shard.max_reserved) {
                (false, _) => 0.0,
                (true, Some(max_reserved)) => -max_reserved - 1e-12 * (max_reserved + held.abs() + counts.abs()),
                (true, None) => f64::NEG_INFINITY,
            };
            if after.value < floor {
                return Err(format!(
                    "{name:?} {key:?} shard {shard_index} left at {} below {floor} (reserve {any_reserve}, maxReserved {:?})",
                    after.value, shard.max_reserved
                ));
            }
            taken += held - after.value;
            scale += held.abs() + after.value.abs();
        }
        // Relative rounding, and an absolute floor for subnormal token counts.
        let tolerance = 1e-12 * scale + 1e-300;
        if shard.kind == Kind::FixedWindow && !exact_windows {
            // A window's start may round (see `windows_are_exact`): only the
            // checks above (finite, capacity, debt floor) apply.
            continue;
        }
        if complete && (taken - counts).abs() > tolerance {
            return Err(format!("{name:?} {key:?}: asked {counts}, took {taken} (tolerance {tolerance})"));
        }
        if !complete && (taken < -tolerance || taken > counts + tolerance) {
            return Err(format!("{name:?} {key:?}: a failed call took {taken} of {counts} asked"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! The checks can fail: each broken decision below is caught.
    use super::*;
    use ratebound::ConfigInput;

    fn bucket() -> Config {
        Config::try_from(&ConfigInput::token_bucket(10.0, 1000.0).with("maxReserved", 5.0)).unwrap()
    }

    fn slot() -> Slot {
        ("x".into(), None, 0)
    }

    fn asked(config: &Config, count: f64, reserve: bool) -> Vec<Asked<'_>> {
        vec![Asked { name: "x", key: None, config, count, reserve }]
    }

    fn verdict(config: &Config, count: f64, reserve: bool, result: RateLimitResult, before: Option<State>, after: &[State]) -> Result<(), String> {
        let result = Ok(result);
        let reads = [(slot(), before)];
        let writes: Vec<(Slot, Option<State>)> = after.iter().map(|state| (slot(), Some(*state))).collect();
        check_call(&asked(config, count, reserve), &Observed { writes_allowed: true, result: &result, reads: &reads, writes: &writes, now_ms: 0.0 })
    }

    #[test]
    fn an_honest_grant_passes() {
        let config = bucket();
        let full = State { value: 10.0, ts: 0.0 };
        assert_eq!(verdict(&config, 3.0, false, RateLimitResult::allowed(None), Some(full), &[State { value: 7.0, ts: 0.0 }]), Ok(()));
    }

    #[test]
    fn a_grant_that_takes_less_than_asked_is_caught() {
        let config = bucket();
        let full = State { value: 10.0, ts: 0.0 };
        let error = verdict(&config, 3.0, false, RateLimitResult::allowed(None), Some(full), &[State { value: 8.0, ts: 0.0 }]).unwrap_err();
        assert!(error.contains("asked 3, took 2"), "{error}");
    }

    #[test]
    fn a_grant_without_tokens_is_caught() {
        let config = bucket();
        let empty = State { value: 0.0, ts: 0.0 };
        let error = verdict(&config, 1.0, false, RateLimitResult::allowed(None), Some(empty), &[State { value: -1.0, ts: 0.0 }]).unwrap_err();
        assert!(error.contains("below 0"), "{error}");
    }

    #[test]
    fn a_reservation_past_max_reserved_is_caught() {
        let config = bucket();
        let empty = State { value: 0.0, ts: 0.0 };
        let error = verdict(&config, 6.0, true, RateLimitResult::allowed(Some(600.0)), Some(empty), &[State { value: -6.0, ts: 0.0 }]).unwrap_err();
        assert!(error.contains("below -5"), "{error}");
    }

    #[test]
    fn a_non_finite_write_is_caught() {
        let config = bucket();
        for bad in [State { value: f64::NAN, ts: 0.0 }, State { value: f64::NEG_INFINITY, ts: 0.0 }, State { value: 1.0, ts: f64::INFINITY }] {
            let error = verdict(&config, 1.0, true, RateLimitResult::allowed(None), None, &[bad]).unwrap_err();
            assert!(error.contains("non-finite"), "{error}");
        }
    }

    #[test]
    fn a_refusal_that_writes_is_caught() {
        let config = bucket();
        let empty = State { value: 0.0, ts: 0.0 };
        let error = verdict(&config, 1.0, false, RateLimitResult::refused(100.0), Some(empty), &[empty]).unwrap_err();
        assert!(error.contains("refusal wrote"), "{error}");
        let error = verdict(&config, 1.0, false, RateLimitResult::refused(f64::NAN), Some(empty), &[]).unwrap_err();
        assert!(error.contains("retry after NaN"), "{error}");
    }

    #[test]
    fn a_corrupt_state_counted_as_full_is_caught() {
        let config = bucket();
        let corrupt = State { value: f64::NAN, ts: 0.0 };
        let error = verdict(&config, 1.0, false, RateLimitResult::allowed(None), Some(corrupt), &[]).unwrap_err();
        assert!(error.contains("non-finite state but answered"), "{error}");
    }

    #[test]
    fn a_failed_write_that_mints_tokens_is_caught() {
        let config = bucket();
        let result = Err(StoreError::Injected("write failed"));
        let reads = [(slot(), Some(State { value: 2.0, ts: 0.0 }))];
        let writes = [(slot(), Some(State { value: 5.0, ts: 0.0 }))];
        let observed = Observed { writes_allowed: true, result: &result, reads: &reads, writes: &writes, now_ms: 0.0 };
        let error = check_call(&asked(&config, 1.0, false), &observed).unwrap_err();
        assert!(error.contains("failed call took -3"), "{error}");
    }

    #[test]
    fn a_wait_in_the_past_is_caught() {
        let config = bucket();
        let empty = State { value: 0.0, ts: 0.0 };
        let error = verdict(&config, 1.0, false, RateLimitResult::refused(-500.0), Some(empty), &[]).unwrap_err();
        assert!(error.contains("retry after -500"), "{error}");
    }

    #[test]
    fn a_fixed_window_written_a_window_behind_now_is_caught() {
        // The next call at this instant would refill the window again: a double admission.
        let window = Config::try_from(&ConfigInput::fixed_window(10.0, 1000.0).with("start", 0.0)).unwrap();
        let full = State { value: 10.0, ts: 0.0 };
        let behind = State { value: 9.0, ts: 0.0 };
        let result = Ok(RateLimitResult::allowed(None));
        let reads = [(slot(), Some(full))];
        let writes = [(slot(), Some(behind))];
        let observed = Observed { writes_allowed: true, result: &result, reads: &reads, writes: &writes, now_ms: 2500.0 };
        let error = check_call(&asked(&window, 1.0, false), &observed).unwrap_err();
        assert!(error.contains("does not hold now 2500"), "{error}");
        let writes = [(slot(), Some(State { value: 9.0, ts: 2000.0 }))];
        let observed = Observed { writes: &writes, ..observed };
        assert_eq!(check_call(&asked(&window, 1.0, false), &observed), Ok(()));
    }

    #[test]
    fn the_oracle_refills_by_the_spec_formulas_and_not_backwards() {
        let config = bucket();
        assert_eq!(tokens_at(State { value: 0.0, ts: 0.0 }, &config, 500.0), 5.0);
        assert_eq!(tokens_at(State { value: 4.0, ts: 5000.0 }, &config, 1000.0), 4.0);
        let window = Config::try_from(&ConfigInput::fixed_window(10.0, 1000.0)).unwrap();
        assert_eq!(tokens_at(State { value: 0.0, ts: 0.0 }, &window, 999.0), 0.0);
        assert_eq!(tokens_at(State { value: 0.0, ts: 0.0 }, &window, 1000.0), 10.0);
    }
}
