//! The pure functions: `calculateRateLimit`, `decideRateLimit`, `withJitter`,
//! and `CompiledConfig`, a config validated once for calls with numbers only.

use std::cell::Cell;

use js_sys::Function;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::config::Config;
use crate::decision::decide;
use crate::error::{Error, Place, Problem};
use crate::raw::RawValue;
use crate::request::{self, validate_request, Request};
use crate::state::{State, StateRef};
use crate::state::Transition;
use crate::transition::{calculate_rate_limit as transition_of, initial_state};
use crate::wasm::convert::{compile, object, own_fields, raw_value, state_from_js, transition_to_js};
use crate::wasm::random::{draw_random, random_source};

const CALCULATE: &str = "calculateRateLimit";

/// `calculateRateLimit`'s checks (a finite state, a finite `now`, a finite
/// `count >= 0`) and then the transition, for both of its entry points.
fn checked_transition(state: Option<State>, config: &Config, now: RawValue, count: RawValue, random: impl FnOnce() -> Result<f64, Error>) -> Result<Transition, Error> {
    if let Some(state) = state {
        state.checked(StateRef { name: CALCULATE, key: None, shard: 0 })?;
    }
    let now = request::now(CALCULATE, now)?;
    let count = match count {
        RawValue::Number(count) if count.is_finite() && count >= 0.0 => count,
        got => return Err(Error::request(CALCULATE, Problem::must_be("count", "a finite number >= 0", got))),
    };
    transition_of(state, config, now, count, random)
}

/// `calculateRateLimit(state, config, now, count)`: the pure transition.
#[wasm_bindgen(js_name = calculateRateLimit, unchecked_return_type = "RateLimitTransition")]
pub fn calculate_rate_limit(
    #[wasm_bindgen(unchecked_param_type = "RateLimitState | null")] state: JsValue,
    #[wasm_bindgen(unchecked_param_type = "RateLimitConfig")] config: JsValue,
    #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    #[wasm_bindgen(unchecked_param_type = "number")] count: JsValue,
    #[wasm_bindgen(unchecked_param_type = "(() => number) | undefined")] random: JsValue,
) -> Result<JsValue, JsValue> {
    let config = compile(None, &config)?;
    let state = state_from_js(&state, || Place::Passed(CALCULATE))?;
    let mut random = random_source(random.dyn_into::<Function>().ok());
    Ok(transition_to_js(checked_transition(state, &config, raw_value(&now), raw_value(&count), &mut random)?))
}

/// `retryAfter` plus a random delay below `maxJitter` ms, drawn from `random` when given.
#[wasm_bindgen(js_name = withJitter)]
pub fn with_jitter(
    #[wasm_bindgen(unchecked_param_type = "number")] retry_after: JsValue,
    #[wasm_bindgen(unchecked_param_type = "number")] max_jitter: JsValue,
    #[wasm_bindgen(unchecked_param_type = "(() => number) | undefined")] random: JsValue,
) -> Result<f64, JsValue> {
    let number = |field: &str, value: &JsValue| {
        value.as_f64().ok_or_else(|| Error::request("withJitter", Problem::must_be(field, "a finite number >= 0", raw_value(value))))
    };
    let (retry_after, max_jitter) = (number("retryAfter", &retry_after)?, number("maxJitter", &max_jitter)?);
    let random = match random.dyn_into::<Function>() {
        Ok(random) => Some(random),
        Err(other) if other.is_undefined() => None,
        Err(other) => return Err(Error::InvalidArgument { function: "withJitter".into(), problem: Problem::must_be("random", "a function", raw_value(&other)) }.into()),
    };
    Ok(crate::random::with_jitter(retry_after, max_jitter, draw_random(random.as_ref())?)?)
}

/// One validated config, for calling the core with numbers only. The
/// TypeScript layer compiles each config object once and keeps it.
#[wasm_bindgen]
pub struct CompiledConfig {
    config: Config,
    /// The last transition's `ts`, `retryAfter` and `windowStart` (NaN: absent).
    last: Cell<[f64; 3]>,
}

#[wasm_bindgen]
impl CompiledConfig {
    /// Validates `config` (errors name the field and the value).
    #[wasm_bindgen(constructor)]
    pub fn new(#[wasm_bindgen(unchecked_param_type = "RateLimitConfig")] config: JsValue) -> Result<CompiledConfig, JsValue> {
        Ok(CompiledConfig { config: compile(None, &config)?, last: Cell::new([f64::NAN; 3]) })
    }

    /// The transition from `{ value, ts }` (or a fresh state when `has_state`
    /// is false) at `now`, taking `count`. Returns the new value; `ts`,
    /// `retryAfter` and `windowStart` are read from the getters after it.
    pub fn transition(&self, has_state: bool, value: f64, ts: f64, now: f64, count: f64) -> Result<f64, JsValue> {
        let state = has_state.then_some(State { value, ts });
        let transition = checked_transition(state, &self.config, now.into(), count.into(), || draw_random(None))?;
        self.last.set([transition.ts, transition.retry_after_ms.unwrap_or(f64::NAN), transition.window_start_ms.unwrap_or(f64::NAN)]);
        Ok(transition.value)
    }

    /// The last transition's `ts`.
    #[wasm_bindgen(getter)]
    pub fn ts(&self) -> f64 {
        self.last.get()[0]
    }

    /// The last transition's `retryAfter`, or NaN when it had none.
    #[wasm_bindgen(getter, js_name = retryAfter)]
    pub fn retry_after(&self) -> f64 {
        self.last.get()[1]
    }

    /// The last transition's `windowStart`, or NaN when it had none.
    #[wasm_bindgen(getter, js_name = windowStart)]
    pub fn window_start(&self) -> f64 {
        self.last.get()[2]
    }

    /// `decideRateLimit`: the decision `limit` would make on one state the
    /// caller holds, with every argument checked as `limit` checks it (options
    /// `{ count?, reserve?, name? }`, own fields only). Answers
    /// `{ ok, retryAfter?, value, ts }`: the state a grant would write.
    #[wasm_bindgen(unchecked_return_type = "RateLimitDecision")]
    pub fn decide(
        &self,
        #[wasm_bindgen(unchecked_param_type = "RateLimitState | null")] state: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
        #[wasm_bindgen(unchecked_param_type = "DecideOptions | undefined")] options: JsValue,
    ) -> Result<JsValue, JsValue> {
        let [count, reserve, name] =
            own_fields(&options, &["count", "reserve", "name"], |problem| Error::InvalidArgument { function: "decideRateLimit".into(), problem })?;
        let name = match name.is_undefined() {
            true => "preview".to_owned(),
            false => request::name(raw_value(&name))?,
        };
        let request = Request { count: request::count(&name, raw_value(&count))?, reserve: request::flag(&name, "reserve", raw_value(&reserve))? };
        validate_request(&name, &self.config, request)?;
        let now = request::now(&name, raw_value(&now))?;
        request::check_call(&name, None, &self.config, now)?;
        let state = match state_from_js(&state, || Place::Passed("decideRateLimit"))? {
            Some(state) => state,
            None => initial_state(&self.config, now, || draw_random(None))?,
        };
        let decision = decide(state, &self.config, now, request);
        let mut fields = vec![("ok", JsValue::from(decision.ok))];
        let wait = match decision.ok {
            true => decision.retry_after_ms,
            false => Some(decision.retry_after_ms.unwrap_or(f64::INFINITY)),
        };
        if let Some(wait) = wait {
            fields.push(("retryAfter", wait.into()));
        }
        fields.push(("value", decision.next.value.into()));
        fields.push(("ts", decision.next.ts.into()));
        Ok(object(&fields))
    }

    /// Many transitions at one instant: `states` holds `value, ts` pairs (a
    /// NaN value is "no state"); the answer holds `value, ts, retryAfter,
    /// windowStart` for each (NaN where absent).
    #[wasm_bindgen(js_name = transitionMany)]
    pub fn transition_many(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Float64Array")] states: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] count: JsValue,
    ) -> Result<Vec<f64>, JsValue> {
        let invalid = |problem| -> JsValue { Error::request("calculateRateLimits", problem).into() };
        let states = states
            .dyn_into::<js_sys::Float64Array>()
            .map_err(|other| invalid(Problem::must_be("states", "a Float64Array of value, ts pairs", raw_value(&other))))?
            .to_vec();
        if states.len() % 2 != 0 {
            return Err(invalid(Problem::must_be("states", "value, ts pairs", RawValue::Other("an odd count of numbers"))));
        }
        let (now, count) = (raw_value(&now), raw_value(&count));
        checked_transition(None, &self.config, now.clone(), count.clone(), || Ok(0.0))?; // checks now and count once for the batch
        let (now, count) = (now.as_number().unwrap_or(0.0), count.as_number().unwrap_or(0.0));
        let mut answers = Vec::with_capacity(states.len() / 2 * 4);
        for pair in states.chunks_exact(2) {
            let state = match pair[0].is_nan() {
                true => None,
                false => Some(State { value: pair[0], ts: pair[1] }.checked(StateRef { name: "calculateRateLimits", key: None, shard: 0 })?),
            };
            let transition = transition_of(state, &self.config, now, count, || draw_random(None))?;
            answers.extend([transition.value, transition.ts, transition.retry_after_ms.unwrap_or(f64::NAN), transition.window_start_ms.unwrap_or(f64::NAN)]);
        }
        Ok(answers)
    }
}

/// `rateLimitFigures(value, now, retryAfter?, sampled?)`: the figures HTTP
/// headers show, from a `getValue` report at `now` (and a refusal's wait).
#[wasm_bindgen(js_name = rateLimitFigures, unchecked_return_type = "RateLimitFigures")]
pub fn rate_limit_figures(
    #[wasm_bindgen(unchecked_param_type = "RateLimitValue")] report: JsValue,
    #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    #[wasm_bindgen(unchecked_param_type = "number | undefined")] retry_after: JsValue,
    #[wasm_bindgen(unchecked_param_type = "number | undefined")] sampled: JsValue,
) -> Result<JsValue, JsValue> {
    const FIGURES: &str = "rateLimitFigures";
    let wrong = |problem| Error::InvalidArgument { function: FIGURES.into(), problem };
    if !report.is_object() {
        return Err(wrong(Problem::must_be("value", "a getValue report { value, ts, config }", raw_value(&report))).into());
    }
    let config = compile(None, &js_sys::Reflect::get(&report, &"config".into())?)?;
    let state = state_from_js(&report, || Place::Passed(FIGURES))?.ok_or_else(|| wrong(Problem::must_be("value", "a getValue report", RawValue::Null)))?;
    let now = request::now(FIGURES, raw_value(&now))?;
    let retry_after = match raw_value(&retry_after) {
        RawValue::Undefined => None,
        RawValue::Number(wait) if wait >= 0.0 && wait.is_finite() => Some(wait),
        got => return Err(Error::request(FIGURES, Problem::must_be("retryAfter", "a finite number >= 0 or undefined", got)).into()),
    };
    let sampled = match raw_value(&sampled) {
        RawValue::Undefined => 1,
        _ => request::sample_shards(FIGURES, raw_value(&sampled), config.shard_count)?,
    };
    let shown = crate::figures::figures(state, &config, now, retry_after, sampled.min(config.shard_count));
    let mut fields = vec![
        ("limit", shown.limit.into()),
        ("remaining", shown.remaining.into()),
        ("reset", shown.reset.into()),
        ("window", shown.window.into()),
        ("sampled", shown.sampled.into()),
    ];
    if let Some(wait) = shown.retry_after {
        fields.push(("retryAfter", wait.into()));
    }
    Ok(object(&fields))
}
