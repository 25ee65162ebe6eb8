//! The limiter's behaviour through its public Rust API, one sentence per test.
//!
//! Every call runs the core's reference driver (`decide_call`, `limit_all`:
//! plan, read, decide, write) against `Memory`, an in-memory [`StateStore`]
//! that keeps `{ value, ts }` per `(name, key, shard)` and logs what it was
//! asked. Times are explicit `now` values in ms; the random numbers a call
//! draws are passed in (`draws_needed(config)` of them, drawn before any
//! read). Scenarios that apply to both algorithms run for both.
//!
//! Names, keys and stored states are checked by the package (the core never
//! sees a name's bytes, and a host reads states it can vouch for); errors are
//! compared as data (code, field, rule, numbers), the package words them.

mod common;

use std::collections::HashMap;

use common::{both_kinds, config, SplitMix64};

use ratebound::{
    calculate_rate_limit, decide_call, draws_needed, initial_state, limit_all, plan, plan_value, unit_random, value_draws_needed,
    value_of, with_jitter, BatchItem, Config, ConfigInput, Error, Field, Kind, Outcome, RateLimitResult, Request, Rule, State,
    StateRef, StateStore, ValueReport, WriteInfo,
};

// ---------------------------------------------------------------------------
// The harness: a store, configs and random numbers.

/// Where a state lives in [`Memory`]: `(name, key, shard)`.
type Slot = (String, Option<String>, u32);

fn slot(name: &str, key: Option<&str>, shard: u32) -> Slot {
    (name.into(), key.map(Into::into), shard)
}

fn slot_of(at: StateRef<'_>) -> Slot {
    slot(at.name, at.key, at.shard)
}

/// What a call over [`Memory`] can fail with: a core error, or the store's own.
#[derive(Debug, Clone, PartialEq)]
enum StoreError {
    Core(Error),
    Unavailable(Slot),
}

impl From<Error> for StoreError {
    fn from(error: Error) -> Self {
        StoreError::Core(error)
    }
}

/// An in-memory store that logs reads and write attempts and can be told to fail.
#[derive(Debug, Default)]
struct Memory {
    states: HashMap<Slot, State>,
    /// Every slot read, in order.
    reads: Vec<Slot>,
    /// Every write attempted, in order, including one that failed.
    writes: Vec<(Slot, Option<State>)>,
    /// Reading this slot fails.
    failing_read: Option<Slot>,
    /// The write attempt with this index (0-based) fails.
    failing_write: Option<usize>,
}

impl Memory {
    fn with(mut self, name: &str, key: Option<&str>, shard: u32, value: f64, ts: f64) -> Self {
        self.states.insert(slot(name, key, shard), State { value, ts });
        self
    }

    fn state(&self, name: &str, key: Option<&str>, shard: u32) -> Option<State> {
        self.states.get(&slot(name, key, shard)).copied()
    }

    /// Forgets the logs, keeping the states.
    fn clear_logs(&mut self) {
        self.reads.clear();
        self.writes.clear();
    }

    fn shards_read(&self) -> Vec<u32> {
        self.reads.iter().map(|(_, _, shard)| *shard).collect()
    }
}

impl StateStore for Memory {
    type Error = StoreError;

    fn read(&mut self, at: StateRef<'_>) -> Result<Option<State>, StoreError> {
        let at = slot_of(at);
        self.reads.push(at.clone());
        if self.failing_read.as_ref() == Some(&at) {
            return Err(StoreError::Unavailable(at));
        }
        Ok(self.states.get(&at).copied())
    }

    fn write(&mut self, at: StateRef<'_>, state: Option<State>, _info: WriteInfo) -> Result<(), StoreError> {
        let at = slot_of(at);
        let attempt = self.writes.len();
        self.writes.push((at.clone(), state));
        if self.failing_write == Some(attempt) {
            return Err(StoreError::Unavailable(at));
        }
        match state {
            Some(state) => self.states.insert(at, state),
            None => self.states.remove(&at),
        };
        Ok(())
    }
}

const NAME: &str = "send";
const KEY: Option<&str> = Some("ada");

/// Picks the token bucket's or the fixed window's expectation.
fn per_kind<T>(config: &Config, token_bucket: T, fixed_window: T) -> T {
    match config.kind {
        Kind::TokenBucket => token_bucket,
        Kind::FixedWindow => fixed_window,
        Kind::SlidingWindow => unreachable!("the sliding window's behaviour is src/sliding_window.rs's"),
    }
}

fn ask(count: f64) -> Request {
    Request { count, reserve: false }
}

fn reserving(count: f64) -> Request {
    Request { count, reserve: true }
}

/// The numbers a decision on `config` draws: `pattern` in turn, then its last
/// one again (first shard, second shard, then each shard's phase).
fn draws(config: &Config, pattern: &[f64]) -> Vec<f64> {
    (0..draws_needed(config)).map(|index| pattern[index.min(pattern.len() - 1)]).collect()
}

/// `limit` (when `write`) or `check` on `NAME`/`KEY` at `name`, drawing `pattern`.
#[allow(clippy::too_many_arguments)]
fn call(store: &mut Memory, name: &str, key: Option<&str>, config: &Config, request: Request, now_ms: f64, pattern: &[f64], write: bool) -> Result<RateLimitResult, StoreError> {
    decide_call(store, name, key, config, request, now_ms, &draws(config, pattern), write).map(|outcome: Outcome| outcome.result)
}

/// `limit` on `NAME`/`KEY` drawing 0.5s; it must not fail.
fn take(store: &mut Memory, config: &Config, request: Request, now_ms: f64) -> RateLimitResult {
    call(store, NAME, KEY, config, request, now_ms, &[0.5], true).expect("limit does not fail")
}

/// `check` on `NAME`/`KEY` drawing 0.5s; it must not fail.
fn peek(store: &mut Memory, config: &Config, request: Request, now_ms: f64) -> RateLimitResult {
    call(store, NAME, KEY, config, request, now_ms, &[0.5], false).expect("check does not fail")
}

/// The error a `limit` call fails with.
fn limit_error(store: &mut Memory, config: &Config, request: Request, now_ms: f64) -> StoreError {
    call(store, NAME, KEY, config, request, now_ms, &[0.5], true).expect_err("limit fails")
}

/// `limit` on `NAME`/`KEY` drawing `pattern`.
fn take_drawing(store: &mut Memory, config: &Config, request: Request, now_ms: f64, pattern: &[f64]) -> Result<RateLimitResult, StoreError> {
    call(store, NAME, KEY, config, request, now_ms, pattern, true)
}

fn granted() -> RateLimitResult {
    RateLimitResult::allowed(None)
}

fn granted_after(retry_after_ms: f64) -> RateLimitResult {
    RateLimitResult::allowed(Some(retry_after_ms))
}

fn refused(retry_after_ms: f64) -> RateLimitResult {
    RateLimitResult::refused(retry_after_ms)
}

/// The error of a request that can never succeed, which touches no state.
fn count_error(config: &Config, request: Request) -> Error {
    let mut store = Memory::default();
    let error = call(&mut store, NAME, KEY, config, request, 0.0, &[0.5], true).expect_err("an error");
    assert!(store.reads.is_empty() && store.writes.is_empty(), "an impossible request touches no state");
    match error {
        StoreError::Core(error @ Error::CountExceedsMax { .. }) => {
            assert_eq!(error.code(), "COUNT_EXCEEDS_MAX");
            assert_eq!(error.field(), Some(Field::Count));
            error
        }
        other => panic!("expected CountExceedsMax, got {other:?}"),
    }
}

fn exceeds(count: f64, max: f64, shard_count: u32, reserve: bool) -> Error {
    Error::CountExceedsMax { count, max, shard_count, reserve }
}

// ---------------------------------------------------------------------------
// Burst capacity and refill.

#[test]
fn a_full_limit_grants_its_capacity_at_once_then_refuses() {
    for config in both_kinds(10.0, 60_000.0, &[("capacity", 3.0)]) {
        let mut store = Memory::default();
        for _ in 0..3 {
            assert_eq!(take(&mut store, &config, ask(1.0), 0.0), granted(), "{:?}", config.kind);
        }
        // Token bucket: one token every 6 s. Fixed window: the next window, at 60 s.
        let expected = per_kind(&config, refused(6_000.0), refused(60_000.0));
        assert_eq!(take(&mut store, &config, ask(1.0), 0.0), expected);
    }
}

#[test]
fn a_full_limit_grants_one_request_for_its_whole_capacity() {
    for config in both_kinds(10.0, 1_000.0, &[("capacity", 25.0)]) {
        let mut store = Memory::default();
        assert_eq!(take(&mut store, &config, ask(25.0), 0.0), granted());
        assert_eq!(store.state(NAME, KEY, 0), Some(State { value: 0.0, ts: 0.0 }));
    }
}

#[test]
fn token_bucket_refills_continuously_up_to_capacity() {
    let [config, _] = both_kinds(10.0, 1_000.0, &[]);
    let mut store = Memory::default();
    assert_eq!(take(&mut store, &config, ask(10.0), 0.0), granted());
    // 10 tokens per second: one token after 100 ms.
    assert_eq!(take(&mut store, &config, ask(1.0), 100.0), granted());
    assert_eq!(take(&mut store, &config, ask(1.0), 100.0), refused(100.0));
    // Long idle: capped at the capacity, not 50 tokens.
    assert_eq!(take(&mut store, &config, ask(10.0), 5_100.0), granted());
    assert_eq!(take(&mut store, &config, ask(1.0), 5_100.0), refused(100.0));
}

#[test]
fn fixed_window_refills_at_the_next_window_start() {
    let [_, config] = both_kinds(10.0, 1_000.0, &[]);
    let mut store = Memory::default();
    assert_eq!(take(&mut store, &config, ask(10.0), 200.0), granted());
    assert_eq!(take(&mut store, &config, ask(1.0), 999.0), refused(1.0));
    for _ in 0..10 {
        assert_eq!(take(&mut store, &config, ask(1.0), 1_000.0), granted());
    }
    assert_eq!(take(&mut store, &config, ask(1.0), 1_000.0), refused(1_000.0));
    assert_eq!(store.state(NAME, KEY, 0), Some(State { value: 0.0, ts: 1_000.0 }));
}

#[test]
fn fixed_window_accumulates_windows_up_to_capacity() {
    let [_, config] = both_kinds(5.0, 1_000.0, &[("capacity", 20.0)]);
    let mut store = Memory::default();
    assert_eq!(take(&mut store, &config, ask(20.0), 0.0), granted());
    // Three windows have started by 3 500: 15 tokens, then the next window at 4 000.
    assert_eq!(take(&mut store, &config, ask(15.0), 3_500.0), granted());
    assert_eq!(take(&mut store, &config, ask(1.0), 3_500.0), refused(500.0));
    // Ten windows later the limit is full, not 50.
    assert_eq!(take(&mut store, &config, ask(20.0), 13_000.0), granted());
    assert_eq!(take(&mut store, &config, ask(1.0), 13_000.0), refused(1_000.0));
}

#[test]
fn a_fixed_window_without_start_begins_at_a_random_instant_of_the_last_period() {
    let config = config(ConfigInput::fixed_window(10.0, 1_000.0));
    let mut store = Memory::default();
    // Phase 0.25: the first window started 250 ms before the first request.
    let result = take_drawing(&mut store, &config, ask(10.0), 10_000.0, &[0.25]);
    assert_eq!(result, Ok(granted()));
    assert_eq!(store.state(NAME, KEY, 0), Some(State { value: 0.0, ts: 9_750.0 }));
    assert_eq!(take(&mut store, &config, ask(1.0), 10_000.0), refused(750.0));
    assert_eq!(take(&mut store, &config, ask(1.0), 10_750.0), granted());
}

// ---------------------------------------------------------------------------
// retryAfter.

#[test]
fn retry_after_is_the_time_until_the_shortfall_has_arrived() {
    for config in both_kinds(10.0, 1_000.0, &[("capacity", 30.0)]) {
        let mut store = Memory::default();
        assert_eq!(take(&mut store, &config, ask(30.0), 0.0), granted());
        // 3 short: 300 ms of refill, or the next window at 1 000.
        assert_eq!(take(&mut store, &config, ask(3.0), 0.0), refused(per_kind(&config, 300.0, 1_000.0)));
        // 25 short: 2.5 s of refill, or three windows' worth, the third starting at 3 000.
        assert_eq!(take(&mut store, &config, ask(25.0), 0.0), refused(per_kind(&config, 2_500.0, 3_000.0)));
        // At 250 the token bucket has 2.5 back; the fixed window is 250 ms nearer its windows.
        let expected = per_kind(&config, 2_250.0, 2_750.0);
        assert_eq!(take(&mut store, &config, ask(25.0), 250.0), refused(expected), "{:?}", config.kind);
    }
}

#[test]
fn retrying_after_retry_after_succeeds_and_not_before() {
    for config in both_kinds(10.0, 1_000.0, &[]) {
        let mut store = Memory::default();
        assert_eq!(take(&mut store, &config, ask(10.0), 0.0), granted());
        let retry_after_ms = take(&mut store, &config, ask(4.0), 100.0).retry_after_ms().expect("refused");
        assert_eq!(retry_after_ms, per_kind(&config, 300.0, 900.0));
        assert!(!take(&mut store, &config, ask(4.0), 100.0 + retry_after_ms - 1.0).is_ok());
        assert_eq!(take(&mut store, &config, ask(4.0), 100.0 + retry_after_ms), granted());
    }
}

// ---------------------------------------------------------------------------
// Reservations.

#[test]
fn a_reservation_is_granted_with_its_wait_and_leaves_debt() {
    for config in both_kinds(10.0, 1_000.0, &[]) {
        let mut store = Memory::default();
        assert_eq!(take(&mut store, &config, ask(10.0), 0.0), granted());
        let expected = per_kind(&config, granted_after(250.0), granted_after(750.0));
        assert_eq!(take(&mut store, &config, reserving(5.0), 250.0), expected, "{:?}", config.kind);
        // Token bucket: 2.5 tokens had come back, so 2.5 are owed. Fixed window: 5.
        let debt = per_kind(&config, State { value: -2.5, ts: 250.0 }, State { value: -5.0, ts: 0.0 });
        assert_eq!(store.state(NAME, KEY, 0), Some(debt));
        // A plain request behind the debt waits for the debt too.
        let expected = per_kind(&config, refused(350.0), refused(750.0));
        assert_eq!(take(&mut store, &config, ask(1.0), 250.0), expected);
    }
}

#[test]
fn a_reservation_on_a_full_limit_has_no_wait() {
    for config in both_kinds(10.0, 1_000.0, &[("maxReserved", 5.0)]) {
        let mut store = Memory::default();
        assert_eq!(take(&mut store, &config, reserving(10.0), 0.0), granted());
    }
}

#[test]
fn reservations_stop_at_max_reserved() {
    for config in both_kinds(10.0, 1_000.0, &[("maxReserved", 5.0)]) {
        let mut store = Memory::default();
        assert_eq!(take(&mut store, &config, ask(10.0), 0.0), granted());
        let expected = per_kind(&config, granted_after(500.0), granted_after(1_000.0));
        assert_eq!(take(&mut store, &config, reserving(5.0), 0.0), expected);
        store.clear_logs();
        // One more would owe 6 > 5: refused, with the wait for 6 tokens.
        let expected = per_kind(&config, refused(600.0), refused(1_000.0));
        assert_eq!(take(&mut store, &config, reserving(1.0), 0.0), expected, "{:?}", config.kind);
        assert!(store.writes.is_empty());
        assert_eq!(store.state(NAME, KEY, 0), Some(State { value: -5.0, ts: 0.0 }));
    }
}

#[test]
fn max_reserved_zero_allows_no_reservation_at_all() {
    for config in both_kinds(10.0, 1_000.0, &[("maxReserved", 0.0)]) {
        let mut store = Memory::default();
        assert_eq!(take(&mut store, &config, ask(10.0), 0.0), granted());
        let expected = per_kind(&config, refused(100.0), refused(1_000.0));
        assert_eq!(take(&mut store, &config, reserving(1.0), 0.0), expected, "{:?}", config.kind);
        assert_eq!(store.state(NAME, KEY, 0), Some(State { value: 0.0, ts: 0.0 }));
        assert_eq!(count_error(&config, reserving(11.0)), exceeds(11.0, 10.0, 1, true));
    }
}

#[test]
fn without_max_reserved_any_reservation_is_granted_with_its_wait() {
    for config in both_kinds(10.0, 1_000.0, &[]) {
        let mut store = Memory::default();
        // 990 owed: 99 s of refill, or 99 windows.
        assert_eq!(take(&mut store, &config, reserving(1_000.0), 0.0), granted_after(99_000.0));
        assert_eq!(store.state(NAME, KEY, 0), Some(State { value: -990.0, ts: 0.0 }));
    }
}

// ---------------------------------------------------------------------------
// Requests that can never succeed, and malformed counts.

#[test]
fn a_count_above_capacity_is_an_error_with_the_count_and_the_bound() {
    for config in both_kinds(10.0, 60_000.0, &[("capacity", 3.0)]) {
        assert_eq!(count_error(&config, ask(4.0)), exceeds(4.0, 3.0, 1, false));
    }
    let fractional = config(ConfigInput::token_bucket(1.0, 1_000.0).with("capacity", 2.5));
    assert_eq!(count_error(&fractional, ask(2.75)), exceeds(2.75, 2.5, 1, false));
}

#[test]
fn a_sharded_count_error_names_the_shards() {
    let llm = config(ConfigInput::token_bucket(40_000.0, 60_000.0).with("shards", 10.0));
    assert_eq!(count_error(&llm, ask(8_001.0)), exceeds(8_001.0, 8_000.0, 10, false));
    // Two shards: the shard factor is 1, the whole capacity.
    let pair = config(ConfigInput::fixed_window(20.0, 1_000.0).with("shards", 2.0));
    assert_eq!(count_error(&pair, ask(21.0)), exceeds(21.0, 20.0, 2, false));
    // Three shards: 10 / 1.5, the number JavaScript prints as 6.666666666666667.
    let three = config(ConfigInput::token_bucket(10.0, 1_000.0).with("shards", 3.0));
    assert_eq!(count_error(&three, ask(7.0)), exceeds(7.0, 6.666666666666667, 3, false));
}

/// The package prints a reservation's bound with two decimals, as the
/// reference does: the error says it was a reservation.
#[test]
fn a_reservation_past_max_reserved_is_an_error_with_the_bound_including_max_reserved() {
    for config in both_kinds(10.0, 1_000.0, &[("maxReserved", 5.0)]) {
        assert_eq!(count_error(&config, reserving(20.0)), exceeds(20.0, 15.0, 1, true));
        assert_eq!(count_error(&config, reserving(15.5)), exceeds(15.5, 15.0, 1, true));
    }
    let third = config(ConfigInput::token_bucket(10.0, 1_000.0).with("maxReserved", 1.0 / 3.0));
    assert_eq!(count_error(&third, reserving(10.5)), exceeds(10.5, 10.0 + 1.0 / 3.0, 1, true));
    let sharded = config(ConfigInput::fixed_window(40.0, 1_000.0).with("shards", 4.0).with("maxReserved", 10.0));
    assert_eq!(count_error(&sharded, reserving(26.0)), exceeds(26.0, 25.0, 4, true));
}

/// Reproduces the bug fixed in de1ad11 ("Grant every reservation that
/// validation accepts, even at the rounding edge"): with `count = capacity +
/// maxReserved` exactly as validation computes it, the debt check
/// `-(available - count) > maxReserved` could round one ulp over and refuse
/// the request on a full limit, forever (refill is capped at capacity), with
/// a `retryAfter` that never came true. Before the fix about a third of
/// random (capacity, maxReserved) pairs hit it, sharded or not.
#[test]
fn a_reservation_of_exactly_capacity_plus_max_reserved_is_granted_on_a_full_limit() {
    let pairs = [(0.1, 0.2), (0.5, 0.15108221776431025), (115.69891887191571, 51.125045213777206), (857.1746100645701, 178.7477203251099)];
    for (capacity, max_reserved) in pairs {
        for shards in [1.0, 2.0, 5.0, 13.0] {
            let extra = [("capacity", capacity), ("maxReserved", max_reserved), ("shards", shards)];
            for config in both_kinds(capacity, 1_000.0, &extra) {
                // The bound exactly as SPEC words it.
                let shard_factor = if shards < 3.0 { 1.0 } else { shards / 2.0 };
                let count = capacity / shard_factor + max_reserved / shard_factor;
                let mut store = Memory::default();
                let result = take_drawing(&mut store, &config, reserving(count), 0.0, &[0.0, 0.5]);
                let described = format!("{:?}, capacity {capacity}, maxReserved {max_reserved}, {shards} shards", config.kind);
                assert!(result.as_ref().is_ok_and(RateLimitResult::is_ok), "{described}: {result:?}");
            }
        }
    }
}

#[test]
fn a_count_at_the_bound_is_not_an_error() {
    for config in both_kinds(10.0, 1_000.0, &[("maxReserved", 5.0)]) {
        let mut store = Memory::default();
        assert_eq!(take(&mut store, &config, ask(10.0), 0.0), granted());
        let mut store = Memory::default();
        assert!(take(&mut store, &config, reserving(15.0), 0.0).is_ok());
    }
}

#[test]
fn a_negative_or_non_finite_count_is_an_error_not_a_refill() {
    for config in both_kinds(10.0, 1_000.0, &[]) {
        for count in [-1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            for request in [ask(count), reserving(count)] {
                let mut store = Memory::default().with(NAME, KEY, 0, 0.0, 0.0);
                let error = limit_error(&mut store, &config, request, 0.0);
                let StoreError::Core(error) = error else { panic!("{error:?}") };
                assert_eq!(error.code(), "INVALID_REQUEST");
                // What was given, NaN included (problems compare numbers bit for bit).
                assert_eq!(error, Error::request(Field::Count, Rule::FiniteNonNegative, count));
                assert!(store.reads.is_empty() && store.writes.is_empty());
                assert_eq!(store.state(NAME, KEY, 0), Some(State { value: 0.0, ts: 0.0 }));
            }
        }
    }
}

#[test]
fn a_non_finite_now_is_an_error() {
    for config in both_kinds(10.0, 1_000.0, &[]) {
        let mut store = Memory::default();
        let StoreError::Core(error) = limit_error(&mut store, &config, ask(1.0), f64::NAN) else { panic!() };
        assert_eq!((error.code(), error.field()), ("INVALID_REQUEST", Some(Field::Now)));
        assert_eq!(error.problem().map(|problem| problem.rule), Some(Rule::FiniteMs));
        assert!(store.writes.is_empty());
    }
}

#[test]
fn a_count_of_zero_is_granted_while_tokens_remain_and_consumes_nothing() {
    for config in both_kinds(10.0, 1_000.0, &[]) {
        let mut store = Memory::default();
        assert_eq!(take(&mut store, &config, ask(0.0), 0.0), granted());
        assert_eq!(store.state(NAME, KEY, 0), Some(State { value: 10.0, ts: 0.0 }));
    }
}

// ---------------------------------------------------------------------------
// check writes nothing; a refusal writes nothing.

#[test]
fn check_answers_like_limit_but_never_writes() {
    for config in both_kinds(10.0, 1_000.0, &[]) {
        // Fresh, partly used, empty, and in debt.
        for (initial, request) in [
            (None, ask(1.0)),
            (Some(4.0), ask(3.0)),
            (Some(0.0), ask(1.0)),
            (Some(-3.0), reserving(2.0)),
        ] {
            let mut store = Memory::default();
            if let Some(value) = initial {
                store = store.with(NAME, KEY, 0, value, 0.0);
            }
            let before = store.states.clone();
            let checked = peek(&mut store, &config, request, 100.0);
            assert!(store.writes.is_empty(), "check wrote {:?}", store.writes);
            assert_eq!(store.states, before);
            assert_eq!(take(&mut store, &config, request, 100.0), checked, "{:?} {initial:?}", config.kind);
        }
    }
}

#[test]
fn a_refused_limit_writes_nothing() {
    for config in both_kinds(10.0, 1_000.0, &[("maxReserved", 2.0)]) {
        let mut store = Memory::default().with(NAME, KEY, 0, 1.0, 0.0);
        for request in [ask(2.0), reserving(4.0)] {
            assert!(!take(&mut store, &config, request, 10.0).is_ok());
            assert!(store.writes.is_empty(), "{:?}", store.writes);
            assert_eq!(store.state(NAME, KEY, 0), Some(State { value: 1.0, ts: 0.0 }));
        }
    }
}

// ---------------------------------------------------------------------------
// Keys.

#[test]
fn each_key_has_its_own_state() {
    for config in both_kinds(10.0, 1_000.0, &[]) {
        let mut store = Memory::default();
        for key in [Some("ada"), Some("bob"), None] {
            let result = call(&mut store, NAME, key, &config, ask(10.0), 0.0, &[0.5], true);
            assert_eq!(result, Ok(granted()), "{key:?}");
        }
        assert_eq!(store.states.len(), 3);
    }
}

// ---------------------------------------------------------------------------
// getValue.

/// `getValue` as a host runs it: plan the sampled shards, read them, report.
fn get_value(store: &mut Memory, config: &Config, sample_shards: Option<f64>, now_ms: f64, draws: &[f64]) -> Result<ValueReport, StoreError> {
    let mut shards = [0.0; 1024];
    let sampled = plan_value(config, sample_shards, now_ms, draws, &mut shards)?;
    let mut states = Vec::with_capacity(sampled);
    for &shard in &shards[..sampled] {
        let shard = shard as u32;
        states.push((shard, store.read(StateRef { name: NAME, key: KEY, shard })?));
    }
    Ok(value_of(config, now_ms, sampled, |index| states[index]))
}

/// [`get_value`] drawing `pattern` in turn (then its last one again); it must not fail.
fn value_report(store: &mut Memory, config: &Config, sample_shards: Option<f64>, now_ms: f64, pattern: &[f64]) -> ValueReport {
    let needed = value_draws_needed(config, sample_shards).expect("a valid sampleShards");
    let draws: Vec<f64> = (0..needed).map(|index| pattern[index.min(pattern.len() - 1)]).collect();
    get_value(store, config, sample_shards, now_ms, &draws).expect("getValue succeeds")
}

#[test]
fn get_value_of_an_unused_unsharded_limit_is_full() {
    for config in both_kinds(10.0, 1_000.0, &[("capacity", 30.0)]) {
        let mut store = Memory::default();
        let report = value_report(&mut store, &config, None, 5_500.0, &[0.5]);
        // Token bucket: full now. Fixed window: full in the window from `start`.
        let ts = per_kind(&config, 5_500.0, 0.0);
        assert_eq!((report.value, report.ts, report.shard), (30.0, ts, 0));
        // The config filled in (`capacity`, `shards`) and the `start` of its windows.
        assert_eq!((config.capacity, config.shard_count, report.start_ms), (30.0, 1, per_kind(&config, None, Some(0.0))));
        assert!(store.writes.is_empty());
    }
}

#[test]
fn get_value_of_an_unsharded_limit_is_the_stored_state_and_projects_forward() {
    for config in both_kinds(10.0, 1_000.0, &[]) {
        let mut store = Memory::default();
        assert_eq!(take(&mut store, &config, ask(7.0), 1_100.0), granted());
        store.clear_logs();
        let report = value_report(&mut store, &config, None, 1_400.0, &[0.5]);
        let ts = per_kind(&config, 1_100.0, 1_000.0);
        assert_eq!((report.value, report.ts, report.shard), (3.0, ts, 0));
        // Projecting the report to 1 400 gives what a limit call would see.
        let projected = calculate_rate_limit(Some(State { value: report.value, ts: report.ts }), &config, 1_400.0, 0.0, 0.5);
        assert_eq!(projected.value, per_kind(&config, 6.0, 3.0));
        assert!(store.writes.is_empty());
    }
}

#[test]
fn get_value_of_a_fixed_window_without_start_reports_its_window_start() {
    let config = config(ConfigInput::fixed_window(10.0, 1_000.0));
    let mut store = Memory::default().with(NAME, KEY, 0, 4.0, 12_345.0);
    let report = value_report(&mut store, &config, None, 12_500.0, &[0.5]);
    assert_eq!((report.value, report.ts), (4.0, 12_345.0));
    assert_eq!(report.start_ms, Some(12_345.0));
}

#[test]
fn get_value_of_a_sharded_token_bucket_is_the_sampled_mean_times_the_shards() {
    let [config, _] = both_kinds(30.0, 1_000.0, &[("shards", 3.0)]);
    // Each shard: 10 tokens, 10 per second.
    let mut store = Memory::default().with(NAME, KEY, 0, 4.0, 1_000.0).with(NAME, KEY, 1, 1.0, 1_100.0);
    // All three: shard 2 is missing, so full at 1 200; the others projected to 1 200 hold 6 and 2.
    let report = value_report(&mut store, &config, Some(3.0), 1_200.0, &[0.0]);
    assert!((report.value - 18.0).abs() < 1e-9, "{}", report.value);
    assert_eq!((report.ts, report.shard), (1_200.0, 2));
    assert_eq!((config.capacity, config.shard_count, report.start_ms), (30.0, 3, None));
    // The default samples one shard: here shard 0, reported for the whole limit.
    let report = value_report(&mut store, &config, None, 1_200.0, &[0.0]);
    assert_eq!((report.value, report.ts, report.shard), (12.0, 1_000.0, 0));
    // More samples than shards reads each shard once.
    store.clear_logs();
    let report = value_report(&mut store, &config, Some(99.0), 1_200.0, &[0.9]);
    assert!((report.value - 18.0).abs() < 1e-9, "{}", report.value);
    let mut read = store.shards_read();
    read.sort();
    assert_eq!(read, vec![0, 1, 2]);
    assert!(store.writes.is_empty());
}

#[test]
fn get_value_of_a_sharded_fixed_window_projects_to_the_latest_window() {
    let [_, config] = both_kinds(30.0, 1_000.0, &[("shards", 3.0)]);
    let mut store = Memory::default().with(NAME, KEY, 0, 4.0, 1_000.0).with(NAME, KEY, 1, 1.0, 1_000.0);
    // Shard 2 is missing: full (10) from `start` 0, still 10 in the window at 1 000.
    let report = value_report(&mut store, &config, Some(3.0), 1_200.0, &[0.0]);
    assert_eq!((report.value, report.ts, report.shard), (15.0, 1_000.0, 2));
    assert_eq!((config.capacity, config.shard_count, report.start_ms), (30.0, 3, Some(0.0)));
    // A shard in an older window is first moved into the latest one.
    let mut store = Memory::default().with(NAME, KEY, 0, 4.0, 1_000.0).with(NAME, KEY, 1, 1.0, 0.0).with(NAME, KEY, 2, 2.0, 1_000.0);
    let report = value_report(&mut store, &config, Some(3.0), 1_200.0, &[0.0]);
    // 4, 10 and 2: mean 16/3, times 3 shards.
    assert!((report.value - 16.0).abs() < 1e-9, "{}", report.value);
    assert_eq!((report.ts, report.shard), (1_000.0, 1));
}

#[test]
fn get_value_rejects_a_sample_count_that_is_not_a_positive_integer() {
    for config in both_kinds(30.0, 1_000.0, &[("shards", 3.0)]) {
        for wanted in [0.0, 1.5, -2.0, f64::NAN] {
            let expected = Error::request(Field::SampleShards, Rule::IntegerAtLeastOne, wanted);
            assert_eq!(value_draws_needed(&config, Some(wanted)), Err(expected));
            let mut store = Memory::default();
            let error = get_value(&mut store, &config, Some(wanted), 0.0, &[0.0, 0.0, 0.0]).unwrap_err();
            assert_eq!(error, StoreError::Core(expected));
            assert!(store.reads.is_empty());
        }
    }
}

// ---------------------------------------------------------------------------
// Sharding.

#[test]
fn a_fresh_shard_that_grants_is_used_alone() {
    for config in both_kinds(40.0, 1_000.0, &[("shards", 4.0)]) {
        let mut store = Memory::default();
        // Draws 0.6, 0.6: shard floor(0.6 × 4) = 2, then (2 + 1 + floor(0.6 × 3)) % 4 = 0.
        let result = take_drawing(&mut store, &config, ask(1.0), 500.0, &[0.6]);
        assert_eq!(result, Ok(granted()));
        // Both planned shards are read up front; the first, fresh and granting, is used alone.
        assert_eq!(store.shards_read(), vec![2, 0]);
        let ts = per_kind(&config, 500.0, 0.0);
        assert_eq!(store.writes, vec![(slot(NAME, KEY, 2), Some(State { value: 9.0, ts }))]);
    }
}

#[test]
fn with_two_shards_a_granting_shard_is_used_alone() {
    for config in both_kinds(20.0, 1_000.0, &[("shards", 2.0)]) {
        let mut store = Memory::default().with(NAME, KEY, 0, 1.0, 0.0).with(NAME, KEY, 1, 10.0, 0.0);
        let result = take_drawing(&mut store, &config, ask(1.0), 0.0, &[0.0]);
        assert_eq!(result, Ok(granted()));
        assert_eq!(store.shards_read(), vec![0, 1]);
        // Shard 1, read too, holds more: it is not the one charged.
        assert_eq!(store.writes, vec![(slot(NAME, KEY, 0), Some(State { value: 0.0, ts: 0.0 }))]);
    }
}

#[test]
fn of_two_stored_shards_the_one_that_grants_is_used() {
    for config in both_kinds(40.0, 1_000.0, &[("shards", 4.0)]) {
        // random 0.0, 0.0: shard 0 first, then shard 1.
        let mut store = Memory::default().with(NAME, KEY, 0, 0.5, 0.0).with(NAME, KEY, 1, 5.0, 0.0);
        let result = take_drawing(&mut store, &config, ask(1.0), 0.0, &[0.0, 0.0]);
        assert_eq!(result, Ok(granted()));
        assert_eq!(store.shards_read(), vec![0, 1]);
        assert_eq!(store.writes, vec![(slot(NAME, KEY, 1), Some(State { value: 4.0, ts: 0.0 }))]);
    }
}

#[test]
fn of_two_stored_shards_that_both_grant_the_one_left_with_more_is_used() {
    for config in both_kinds(40.0, 1_000.0, &[("shards", 4.0)]) {
        let mut store = Memory::default().with(NAME, KEY, 0, 6.0, 0.0).with(NAME, KEY, 1, 8.0, 0.0);
        let result = take_drawing(&mut store, &config, ask(1.0), 0.0, &[0.0, 0.0]);
        assert_eq!(result, Ok(granted()));
        assert_eq!(store.writes, vec![(slot(NAME, KEY, 1), Some(State { value: 7.0, ts: 0.0 }))]);
    }
}

#[test]
fn two_short_shards_serve_a_request_together_and_end_level() {
    for config in both_kinds(40.0, 1_000.0, &[("shards", 4.0)]) {
        let mut store = Memory::default().with(NAME, KEY, 0, 3.0, 0.0).with(NAME, KEY, 1, 2.0, 0.0);
        let result = take_drawing(&mut store, &config, ask(4.0), 0.0, &[0.0, 0.0]);
        assert_eq!(result, Ok(granted()), "{:?}", config.kind);
        assert_eq!(
            store.writes,
            vec![
                (slot(NAME, KEY, 0), Some(State { value: 0.5, ts: 0.0 })),
                (slot(NAME, KEY, 1), Some(State { value: 0.5, ts: 0.0 })),
            ]
        );
    }
}

#[test]
fn two_shards_short_even_together_refuse_and_write_nothing() {
    for config in both_kinds(40.0, 1_000.0, &[("shards", 4.0)]) {
        let mut store = Memory::default().with(NAME, KEY, 0, 1.0, 0.0).with(NAME, KEY, 1, 2.0, 0.0);
        let result = take_drawing(&mut store, &config, ask(4.0), 0.0, &[0.0, 0.0]);
        // Both would be left 0.5 short: 50 ms at 10 tokens per second per shard, or the next window.
        assert_eq!(result, Ok(per_kind(&config, refused(50.0), refused(1_000.0))), "{:?}", config.kind);
        assert!(store.writes.is_empty());
    }
}

/// Since issue 24 (item 11) a refusal on two shards waits until the same
/// call on the same shards is granted, alone or together: not "the larger
/// retryAfter" of the two shares, which could be short (a full shard refills
/// nothing) or, as here before, long (4 tokens need only shard 0's next
/// window; the test asserted 900 ms, shard 1's window, until then).
#[test]
fn two_shards_short_together_wait_for_the_first_instant_the_same_shards_can_serve_it() {
    // Fixed windows of shards that started at different instants: shard 0's
    // next window is at 1 000, shard 1's at 1 800.
    let config = config(ConfigInput::fixed_window(40.0, 1_000.0).with("shards", 4.0));
    let store = || Memory::default().with(NAME, KEY, 0, 1.0, 0.0).with(NAME, KEY, 1, 2.0, 800.0);
    // 4 tokens: shard 0 alone holds them at 1 000.
    let mut shards = store();
    assert_eq!(take_drawing(&mut shards, &config, ask(4.0), 900.0, &[0.0, 0.0]), Ok(refused(100.0)));
    assert!(shards.writes.is_empty());
    assert_eq!(take_drawing(&mut shards, &config, ask(4.0), 1_000.0, &[0.0, 0.0]), Ok(granted()));
    // 15 tokens need both: 10 + 2 at 1 000 is short, 10 + 10 at 1 800 is not (the slower one).
    let mut shards = store();
    assert_eq!(take_drawing(&mut shards, &config, ask(15.0), 900.0, &[0.0, 0.0]), Ok(refused(900.0)));
    assert!(take_drawing(&mut shards, &config, ask(15.0), 1_000.0, &[0.0, 0.0]).is_ok_and(|result| !result.is_ok()));
    assert_eq!(take_drawing(&mut shards, &config, ask(15.0), 1_800.0, &[0.0, 0.0]), Ok(granted()));
}

/// The deviation from SPEC documented in `decide_planned`: a fresh first shard
/// that refuses is not the last word, or a request for more than one shard
/// holds (which validation allows) would be refused forever.
#[test]
fn a_fresh_sharded_limit_serves_a_count_bigger_than_one_shard_holds() {
    for (shards, rate) in [(4.0, 40.0), (2.0, 20.0)] {
        for config in both_kinds(rate, 1_000.0, &[("shards", shards)]) {
            // Each shard holds 10; 15 needs two.
            let mut store = Memory::default();
            let result = take_drawing(&mut store, &config, ask(15.0), 0.0, &[0.0, 0.0]);
            assert_eq!(result, Ok(granted()), "{shards} shards, {:?}", config.kind);
            assert_eq!(
                store.writes,
                vec![
                    (slot(NAME, KEY, 0), Some(State { value: 2.5, ts: 0.0 })),
                    (slot(NAME, KEY, 1), Some(State { value: 2.5, ts: 0.0 })),
                ]
            );
            // And the largest valid count, all of two shards.
            let mut store = Memory::default();
            let result = take_drawing(&mut store, &config, ask(20.0), 0.0, &[0.5, 0.5]);
            assert_eq!(result, Ok(granted()));
            assert_eq!(store.writes.len(), 2);
            assert!(store.states.values().all(|state| state.value == 0.0));
        }
    }
}

#[test]
fn a_sharded_limit_never_grants_more_than_its_capacity_at_one_instant() {
    for config in both_kinds(80.0, 60_000.0, &[("shards", 8.0)]) {
        for seed in 0..20 {
            let mut store = Memory::default();
            let mut random = SplitMix64(seed);
            let mut admitted = 0.0;
            for call in 0..200 {
                store.clear_logs();
                let count = [1.0, 2.0, 3.0, 7.0][call % 4];
                let drawn = random.draws(&config);
                let result = decide_call(&mut store, NAME, KEY, &config, ask(count), 0.0, &drawn, true).unwrap().result;
                assert!(store.reads.len() <= 2 && store.writes.len() <= 2, "{:?} {:?}", store.reads, store.writes);
                if result.is_ok() {
                    admitted += count;
                } else {
                    assert!(store.writes.is_empty());
                }
            }
            assert!(admitted <= 80.0, "{:?} seed {seed}: admitted {admitted}", config.kind);
            // Every granted token came out of some shard's 10.
            let left: f64 = (0..8).map(|shard| store.state(NAME, KEY, shard).map_or(10.0, |state| state.value)).sum();
            assert!((80.0 - left - admitted).abs() < 1e-9, "left {left}, admitted {admitted}");
            // The power of two choices serves most of the capacity.
            assert!(admitted >= 60.0, "{:?} seed {seed}: admitted only {admitted}", config.kind);
        }
    }
}

#[test]
fn a_sharded_limit_refills_every_shard() {
    for config in both_kinds(40.0, 1_000.0, &[("shards", 4.0)]) {
        let mut store = Memory::default();
        for shard in 0..4 {
            store = store.with(NAME, KEY, shard, 0.0, 0.0);
        }
        let mut random = SplitMix64(7);
        let result = decide_call(&mut store, NAME, KEY, &config, ask(1.0), 999.0, &random.draws(&config), true).unwrap().result;
        assert_eq!(result, per_kind(&config, granted(), refused(1.0)), "{:?}", config.kind);
        let mut admitted = 0.0;
        for _ in 0..100 {
            if decide_call(&mut store, NAME, KEY, &config, ask(1.0), 1_000.0, &random.draws(&config), true).unwrap().result.is_ok() {
                admitted += 1.0;
            }
        }
        // One second of refill is 40 tokens across the shards; the token bucket spent one of them at 999.
        let bound = per_kind(&config, 39.0, 40.0);
        assert!(admitted <= bound && admitted >= 30.0, "{:?}: {admitted}", config.kind);
    }
}

// ---------------------------------------------------------------------------
// limitAll.

/// A `limitAll` item on `KEY` of a limit that draws nothing (unsharded, windows known).
fn item<'a>(name: &'a str, config: &'a Config, request: Request) -> BatchItem<'a> {
    assert_eq!(draws_needed(config), 0, "use drawing_item for a limit that draws");
    drawing_item(name, config, request, &[])
}

fn drawing_item<'a>(name: &'a str, config: &'a Config, request: Request, draws: &'a [f64]) -> BatchItem<'a> {
    BatchItem { name, key: KEY, config, request, draws }
}

/// The seeds' deadlock: A takes x then y, B takes y then x. Taken one limit
/// at a time, each could hold the limit the other needs; together, neither
/// consumes anything unless it gets everything.
#[test]
fn limit_all_never_holds_one_limit_while_refused_on_another() {
    for config in both_kinds(10.0, 1_000.0, &[]) {
        let mut store = Memory::default();
        // Someone took 5 of y.
        assert_eq!(call(&mut store, "y", KEY, &config, ask(5.0), 0.0, &[0.5], true), Ok(granted()));
        store.clear_logs();
        // A wants 5 of x and 10 of y: refused, and x is untouched.
        let a = [item("x", &config, ask(5.0)), item("y", &config, ask(10.0))];
        let result = limit_all(&mut store, &a, 0.0, true).unwrap();
        assert_eq!(result, per_kind(&config, refused(500.0), refused(1_000.0)), "{:?}", config.kind);
        assert!(store.writes.is_empty());
        assert_eq!(store.state("x", KEY, 0), None);
        // B wants 5 of y and 10 of x: both are there, so B gets them.
        let b = [item("y", &config, ask(5.0)), item("x", &config, ask(10.0))];
        assert_eq!(limit_all(&mut store, &b, 0.0, true), Ok(granted()));
        assert_eq!(store.state("x", KEY, 0).map(|state| state.value), Some(0.0));
        assert_eq!(store.state("y", KEY, 0).map(|state| state.value), Some(0.0));
    }
}

#[test]
fn limit_all_refused_on_several_limits_waits_for_the_slowest() {
    let [x, _] = both_kinds(10.0, 1_000.0, &[]);
    let [y, _] = both_kinds(1.0, 1_000.0, &[("capacity", 10.0)]);
    let mut store = Memory::default().with("x", KEY, 0, 0.0, 0.0).with("y", KEY, 0, 0.0, 0.0);
    let batch = [item("x", &x, ask(2.0)), item("y", &y, ask(2.0))];
    // x needs 200 ms, y needs 2 s.
    assert_eq!(limit_all(&mut store, &batch, 0.0, true), Ok(refused(2_000.0)));
    assert!(store.writes.is_empty());
}

#[test]
fn limit_all_adds_up_two_items_on_the_same_limit_and_key() {
    for config in both_kinds(10.0, 1_000.0, &[]) {
        let mut store = Memory::default();
        // 6 and 6 each fit alone, not together.
        let too_much = [item(NAME, &config, ask(6.0)), item(NAME, &config, ask(6.0))];
        let result = limit_all(&mut store, &too_much, 0.0, true).unwrap();
        assert_eq!(result, per_kind(&config, refused(200.0), refused(1_000.0)), "{:?}", config.kind);
        assert!(store.writes.is_empty());
        // 4 and 6 fit exactly.
        let exact = [item(NAME, &config, ask(4.0)), item(NAME, &config, ask(6.0))];
        assert_eq!(limit_all(&mut store, &exact, 0.0, true), Ok(granted()));
        assert_eq!(store.state(NAME, KEY, 0), Some(State { value: 0.0, ts: 0.0 }));
        // The shared state was read once.
        assert_eq!(store.shards_read(), vec![0, 0]);
    }
}

#[test]
fn limit_all_without_writing_is_a_check_of_every_limit() {
    for config in both_kinds(10.0, 1_000.0, &[]) {
        let mut store = Memory::default();
        let batch = [item("x", &config, ask(4.0)), item("y", &config, reserving(12.0))];
        let result = limit_all(&mut store, &batch, 0.0, false).unwrap();
        // Granted, with y's reservation wait: 2 owed.
        assert_eq!(result, per_kind(&config, granted_after(200.0), granted_after(1_000.0)));
        assert!(store.writes.is_empty());
        assert!(store.states.is_empty());
    }
}

#[test]
fn limit_all_validates_every_item_before_reading_any() {
    for config in both_kinds(10.0, 1_000.0, &[]) {
        let mut store = Memory::default();
        let batch = [item("x", &config, ask(1.0)), item("y", &config, ask(11.0))];
        let error = limit_all(&mut store, &batch, 0.0, true).unwrap_err();
        assert_eq!(error, StoreError::Core(exceeds(11.0, 10.0, 1, false)));
        assert!(store.reads.is_empty() && store.writes.is_empty());
    }
}

#[test]
fn limit_all_over_sharded_limits_writes_all_or_nothing() {
    for config in both_kinds(40.0, 1_000.0, &[("shards", 4.0)]) {
        let mut store = Memory::default();
        let mut random = SplitMix64(3);
        let (x_draws, y_draws) = (random.draws(&config), random.draws(&config));
        let batch = [drawing_item("x", &config, ask(15.0), &x_draws), drawing_item("y", &config, ask(20.0), &y_draws)];
        assert_eq!(limit_all(&mut store, &batch, 0.0, true), Ok(granted()));
        // 15 and 20 each need two shards of 10.
        assert_eq!(store.writes.len(), 4);
        // Now y is empty on every shard: a batch asking 1 of x and 1 of y is refused and writes nothing.
        for shard in 0..4 {
            store = store.with("y", KEY, shard, 0.0, 0.0);
        }
        store.clear_logs();
        let before = store.states.clone();
        let (x_draws, y_draws) = (random.draws(&config), random.draws(&config));
        let batch = [drawing_item("x", &config, ask(1.0), &x_draws), drawing_item("y", &config, ask(1.0), &y_draws)];
        assert!(!limit_all(&mut store, &batch, 0.0, true).unwrap().is_ok());
        assert!(store.writes.is_empty());
        assert_eq!(store.states, before);
    }
}

// ---------------------------------------------------------------------------
// Failing stores.

#[test]
fn a_store_that_fails_to_read_fails_the_call_and_nothing_is_written() {
    for config in both_kinds(40.0, 1_000.0, &[("shards", 4.0)]) {
        // The second shard's read fails; the first, read already, would have served alone.
        let mut store = Memory::default().with(NAME, KEY, 0, 5.0, 0.0);
        store.failing_read = Some(slot(NAME, KEY, 1));
        let result = take_drawing(&mut store, &config, ask(1.0), 0.0, &[0.0, 0.0]);
        assert_eq!(result, Err(StoreError::Unavailable(slot(NAME, KEY, 1))));
        assert!(store.writes.is_empty());
        // In a batch, a failing read of a later item aborts the earlier items' writes.
        let mut store = Memory { failing_read: Some(slot("y", KEY, 0)), ..Memory::default() };
        let [unsharded, _] = both_kinds(10.0, 1_000.0, &[]);
        let batch = [item("x", &unsharded, ask(1.0)), item("y", &unsharded, ask(1.0))];
        let result = limit_all(&mut store, &batch, 0.0, true);
        assert_eq!(result, Err(StoreError::Unavailable(slot("y", KEY, 0))));
        assert!(store.writes.is_empty());
    }
}

#[test]
fn a_store_that_fails_to_write_fails_the_call_and_nothing_is_written_after_it() {
    for config in both_kinds(40.0, 1_000.0, &[("shards", 4.0)]) {
        // A combined decision writes two shards; the first write fails.
        let mut store = Memory::default().with(NAME, KEY, 0, 3.0, 0.0).with(NAME, KEY, 1, 2.0, 0.0);
        store.failing_write = Some(0);
        let before = store.states.clone();
        let result = take_drawing(&mut store, &config, ask(4.0), 0.0, &[0.0, 0.0]);
        assert_eq!(result, Err(StoreError::Unavailable(slot(NAME, KEY, 0))));
        assert_eq!(store.writes.len(), 1, "{:?}", store.writes);
        assert_eq!(store.states, before);
    }
}

// ---------------------------------------------------------------------------
// Clocks and random sources.

#[test]
fn a_clock_stepping_backwards_neither_mints_nor_burns_tokens() {
    for config in both_kinds(10.0, 1_000.0, &[]) {
        // The last call was at 5 000 (token bucket) / in the window from 5 000 (fixed window).
        let mut store = Memory::default().with(NAME, KEY, 0, 4.0, 5_000.0);
        // At 1 000 the 4 tokens are still there, no more and no fewer.
        assert_eq!(take(&mut store, &config, ask(1.0), 1_000.0), granted());
        assert_eq!(store.state(NAME, KEY, 0), Some(State { value: 3.0, ts: 5_000.0 }));
        assert_eq!(take(&mut store, &config, ask(3.0), 1_000.0), granted());
        // Empty: the wait counts from the stored time, plus the clock's lag.
        let expected = per_kind(&config, refused(4_100.0), refused(5_000.0));
        assert_eq!(take(&mut store, &config, ask(1.0), 1_000.0), expected, "{:?}", config.kind);
        // Back at 5 000 the stepped-back calls minted nothing.
        let expected = per_kind(&config, refused(100.0), refused(1_000.0));
        assert_eq!(take(&mut store, &config, ask(1.0), 5_000.0), expected);
        // And burned nothing: a full refill later, the limit is full.
        assert_eq!(take(&mut store, &config, ask(10.0), 6_000.0), granted());
    }
}

#[test]
fn a_clock_stepping_backwards_does_not_move_the_state_back() {
    for config in both_kinds(10.0, 1_000.0, &[]) {
        let mut store = Memory::default().with(NAME, KEY, 0, 0.0, 5_000.0);
        // A zero-count call at 1 000 is granted; it must not record 1 000 as the state's time,
        // which would refill 40 tokens by 5 000.
        assert_eq!(take(&mut store, &config, ask(0.0), 1_000.0), granted());
        assert_eq!(store.state(NAME, KEY, 0), Some(State { value: 0.0, ts: 5_000.0 }));
        assert!(!take(&mut store, &config, ask(1.0), 5_000.0).is_ok());
    }
}

#[test]
fn a_random_source_outside_zero_to_one_is_an_error_before_any_read() {
    let sharded = both_kinds(40.0, 1_000.0, &[("shards", 4.0)]);
    let unstarted = config(ConfigInput::fixed_window(10.0, 1_000.0));
    // The number drawn, as given (NaN included).
    let rejects = |result: Result<RateLimitResult, StoreError>, drawn: f64| match result {
        Err(StoreError::Core(error @ Error::InvalidRandom { got })) => error.code() == "INVALID_RANDOM" && got.to_bits() == drawn.to_bits(),
        _ => false,
    };
    for config in sharded.iter().chain([&unstarted]) {
        for drawn in [1.0, f64::NAN, -0.25, f64::INFINITY] {
            let mut store = Memory::default();
            let result = take_drawing(&mut store, config, ask(1.0), 0.0, &[drawn]);
            assert!(rejects(result, drawn), "{config:?} {drawn}");
            // Too few numbers is the same error, never a default.
            let result = decide_call(&mut store, NAME, KEY, config, ask(1.0), 0.0, &[], true).map(|outcome| outcome.result);
            assert!(matches!(result, Err(StoreError::Core(Error::InvalidRandom { .. }))), "{result:?}");
            assert!(store.reads.is_empty() && store.writes.is_empty());
            let value = get_value(&mut store, config, None, 0.0, &[drawn]);
            if config.shard_count > 1 {
                assert!(rejects(value.map(|_| granted()), drawn), "sampling shards draws");
            } else {
                // A fixed window with no state reports its latest possible start, `now`: no draw.
                assert_eq!(value.map(|report| report.ts), Ok(0.0));
            }
            assert!(store.writes.is_empty());
        }
    }
}

#[test]
fn an_unsharded_limit_with_known_windows_needs_no_random_numbers() {
    for config in both_kinds(10.0, 1_000.0, &[]) {
        assert_eq!(draws_needed(&config), 0);
        let mut store = Memory::default();
        assert_eq!(decide_call(&mut store, NAME, KEY, &config, ask(1.0), 0.0, &[], true).map(|outcome| outcome.result), Ok(granted()));
    }
}

// ---------------------------------------------------------------------------
// The pure transition.

#[test]
fn calculate_rate_limit_projects_and_consumes() {
    for config in both_kinds(10.0, 1_000.0, &[("capacity", 20.0)]) {
        let state = State { value: 2.0, ts: 1_000.0 };
        let next = calculate_rate_limit(Some(state), &config, 2_500.0, 15.0, 0.5);
        // Token bucket: 2 + 15 = 17, minus 15. Fixed window: one window (at 2 000): 12, minus 15.
        let expected = per_kind(&config, (2.0, 2_500.0, None, None), (-3.0, 2_000.0, Some(500.0), Some(1_000.0)));
        assert_eq!((next.value, next.ts, next.retry_after_ms, next.window_start_ms), expected, "{:?}", config.kind);
        let fresh = calculate_rate_limit(None, &config, 2_500.0, 0.0, 0.5);
        assert_eq!((fresh.value, fresh.ts), per_kind(&config, (20.0, 2_500.0), (20.0, 2_000.0)));
    }
}

#[test]
fn initial_state_of_a_fixed_window_without_start_is_a_random_instant_of_the_last_period() {
    let config = config(ConfigInput::fixed_window(5.0, 1_000.0));
    assert_eq!(initial_state(&config, 10_000.0, 0.25), State { value: 5.0, ts: 9_750.0 });
    assert_eq!(initial_state(&config, 10_000.0, 0.9999), State { value: 5.0, ts: 9_001.0 });
    // The phase is checked where it is drawn, by the plan.
    assert_eq!(unit_random(1.0), Err(Error::InvalidRandom { got: 1.0 }));
    assert_eq!(plan(&config, 10_000.0, &[1.0]), Err(Error::InvalidRandom { got: 1.0 }));
    assert_eq!(plan(&config, 10_000.0, &[0.25]).map(|planned| planned.fresh[0]), Ok(State { value: 5.0, ts: 9_750.0 }));
}

#[test]
fn with_jitter_adds_a_random_share_of_the_maximum() {
    assert_eq!(with_jitter(1_000.0, 500.0, 0.5), Ok(1_250.0));
    assert_eq!(with_jitter(1_000.0, 0.0, 0.99), Ok(1_000.0));
    assert!(matches!(with_jitter(1_000.0, 500.0, 1.0), Err(Error::InvalidRandom { .. })));
    let error = with_jitter(-1.0, 500.0, 0.5).unwrap_err();
    assert_eq!((error.code(), error.field()), ("INVALID_REQUEST", Some(Field::RetryAfter)));
}

/// Reproduces a defect of the reference driver found by the `decisions`
/// fuzz target: `limit_all` planned each item after reading the states of
/// the items before it, so a later item's bad random number failed the call
/// after the store had been read. Bad input is decided before any read.
#[test]
fn limit_all_checks_every_items_random_numbers_before_reading_any() {
    let sharded = both_kinds(40.0, 1_000.0, &[("shards", 4.0)]);
    for config in &sharded {
        let mut store = Memory::default();
        let good = draws(config, &[0.5]);
        let bad = draws(config, &[f64::NAN]);
        let batch = [drawing_item("x", config, ask(1.0), &good), drawing_item("y", config, ask(1.0), &bad)];
        let error = limit_all(&mut store, &batch, 0.0, true).unwrap_err();
        assert!(matches!(error, StoreError::Core(Error::InvalidRandom { got }) if got.is_nan()), "{error:?}");
        assert!(store.reads.is_empty() && store.writes.is_empty(), "{:?}", store.reads);
    }
}
