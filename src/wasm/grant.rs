//! Grants at the boundary: `limitWithGrant` answers with a grant's data,
//! `settle` takes it back (own fields only) with what was really used.

use std::rc::Rc;

use js_sys::{Array, Reflect};
use wasm_bindgen::prelude::*;

use crate::error::{Error, Problem, Says};
use crate::limiter::BatchItem;
use crate::raw::RawValue;
use crate::request;
use crate::result::RateLimitResult;
use crate::settle::{limit_with_grant, settle, Grant, GrantShard, Settled};
use crate::wasm::convert::{is_array, object, own_fields, raw_value, result_to_js};
use crate::wasm::host::{run, Backend, HostStore};
use crate::wasm::limiter::{LimitCall, RateLimiterCore};
use crate::wasm::random::random_source;

const GRANT_FIELDS: [&str; 6] = ["name", "key", "id", "count", "chargedAt", "shards"];
const SHARD_FIELDS: [&str; 5] = ["shard", "count", "value", "ts", "refunded"];

fn wrong(problem: Problem) -> Error {
    let says = match problem.says {
        Says::Unknown { known, .. } => Says::Unknown { what: "field", of: " of a grant's data", plural: "fields", known },
        says => says,
    };
    Error::InvalidArgument { function: "settle".into(), problem: Problem { says, ..problem } }
}

fn number(field: &str, value: &JsValue) -> Result<f64, Error> {
    value.as_f64().ok_or_else(|| wrong(Problem::must_be(field, "a number", raw_value(value))))
}

/// A grant's data as a plain object: `{ name, key?, id, count, chargedAt, shards }`.
fn grant_to_js(grant: &Grant) -> JsValue {
    let shards = Array::new();
    for part in &grant.shards {
        let fields = [("shard", part.shard.into()), ("count", part.count.into()), ("value", part.value.into()), ("ts", part.ts.into()), ("refunded", part.refunded.into())];
        shards.push(&object(&fields));
    }
    let mut fields = vec![("name", JsValue::from(grant.name.as_str()))];
    if let Some(key) = &grant.key {
        fields.push(("key", key.as_str().into()));
    }
    fields.extend([("id", grant.id.as_str().into()), ("count", grant.count.into()), ("chargedAt", grant.charged_at_ms.into()), ("shards", shards.into())]);
    object(&fields)
}

/// A grant's data back from JavaScript: own fields only; its ranges are the core's to check.
fn grant_from_js(data: &JsValue) -> Result<Grant, JsValue> {
    if !data.is_object() || is_array(data) {
        return Err(JsValue::from(wrong(Problem::must_be("grant", "a grant's data (an object)", raw_value(data)))));
    }
    let [name, key, id, count, charged_at, shards] = own_fields(data, &GRANT_FIELDS, wrong)?;
    let name = request::name(raw_value(&name))?;
    let key = request::key(&name, raw_value(&key))?;
    let RawValue::String(id) = raw_value(&id) else {
        return Err(JsValue::from(wrong(Problem::must_be("grant.id", "a string", raw_value(&id)))));
    };
    if !is_array(&shards) {
        return Err(JsValue::from(wrong(Problem::must_be("grant.shards", "an array", raw_value(&shards)))));
    }
    let length = Reflect::get(&shards, &"length".into())?.as_f64().unwrap_or(0.0).clamp(0.0, 3.0) as u32;
    let mut parts = Vec::with_capacity(length as usize);
    for index in 0..length {
        let part = Reflect::get_u32(&shards, index)?;
        let [shard, count, value, ts, refunded] = own_fields(&part, &SHARD_FIELDS, wrong)?;
        let shard = number("grant.shards.shard", &shard)?;
        if !(shard.fract() == 0.0 && (0.0..f64::from(u32::MAX)).contains(&shard)) {
            return Err(JsValue::from(wrong(Problem::must_be("grant.shards.shard", "an integer >= 0", shard))));
        }
        parts.push(GrantShard {
            shard: shard as u32,
            count: number("grant.shards.count", &count)?,
            value: number("grant.shards.value", &value)?,
            ts: number("grant.shards.ts", &ts)?,
            refunded: number("grant.shards.refunded", &refunded)?,
        });
    }
    Ok(Grant { name, key, id, count: number("grant.count", &count)?, charged_at_ms: number("grant.chargedAt", &charged_at)?, shards: parts })
}

fn settled_to_js(settled: Settled) -> JsValue {
    let mut fields = vec![("refunded", settled.refunded.into()), ("charged", settled.charged.into()), ("unpaid", settled.unpaid.into())];
    if let Some(wait) = settled.retry_after_ms {
        fields.push(("retryAfter", wait.into()));
    }
    object(&fields)
}

fn granted_to_js((result, grant): (RateLimitResult, Option<Grant>)) -> JsValue {
    let answer = result_to_js(result);
    if let Some(grant) = grant {
        let _ = Reflect::set(&answer, &"grant".into(), &grant_to_js(&grant));
    }
    answer
}

#[wasm_bindgen]
impl RateLimiterCore {
    /// `limit`, answering with the grant's data (`grant`) when it was granted and `grant` is true.
    #[wasm_bindgen(js_name = limitWithGrant, unchecked_return_type = "RateLimitResult & { grant?: GrantData } | Promise<RateLimitResult & { grant?: GrantData }>")]
    #[allow(clippy::too_many_arguments)]
    pub fn limit_with_grant(&self, #[wasm_bindgen(unchecked_param_type = "RateLimitStore")] store: JsValue, name: JsValue, key: JsValue, count: JsValue, reserve: JsValue, config: JsValue, now: JsValue, grant: JsValue) -> Result<JsValue, JsValue> {
        let call = self.call(name, key, count, reserve, config, now)?;
        if !request::flag(&call.name, "grant", raw_value(&grant))? {
            return self.decide_call(store, call, true);
        }
        let LimitCall { name, key, request, config, now_ms } = call;
        let mut store = Backend::Host(Rc::new(HostStore::from_js(&store)?));
        let mut random = random_source(self.random.clone());
        run(
            async move {
                let item = BatchItem { name: &name, key: key.as_deref(), config: &config, request };
                limit_with_grant(&mut store, item, now_ms, &mut random).await
            },
            granted_to_js,
        )
    }

    /// The error a handle raises when it is settled a second time.
    #[wasm_bindgen(js_name = grantSettled)]
    pub fn grant_settled(name: JsValue) -> JsValue {
        Error::GrantSettled { limit: name.as_string().unwrap_or_default() }.into()
    }

    /// Settles a grant (its data) at `actual` tokens: `{ refunded, charged, unpaid, retryAfter? }`.
    #[wasm_bindgen(unchecked_return_type = "SettleResult | Promise<SettleResult>")]
    pub fn settle(&self, #[wasm_bindgen(unchecked_param_type = "RateLimitStore")] store: JsValue, grant: JsValue, actual: JsValue, config: JsValue, now: JsValue) -> Result<JsValue, JsValue> {
        let grant = grant_from_js(&grant)?;
        let config = self.resolve(&grant.name, &config)?;
        let actual = match raw_value(&actual) {
            RawValue::Number(actual) => actual,
            got => return Err(Error::request(&grant.name, Problem::must_be("actual", "a finite number >= 0", got)).into()),
        };
        let now_ms = request::now(&grant.name, raw_value(&now))?;
        let mut store = Backend::Host(Rc::new(HostStore::from_js(&store)?));
        let mut random = random_source(self.random.clone());
        run(async move { settle(&mut store, &grant, &config, actual, now_ms, &mut random).await }, settled_to_js)
    }
}
