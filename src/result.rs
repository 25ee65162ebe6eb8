//! What the limiter answers: a decision's result, and a limit's value.

use serde::Serialize;
use tsify::Tsify;

use crate::config::RateLimitConfig;

/// The answer to `limit` and `check`.
#[derive(Tsify, Serialize, Debug, Clone, Copy, PartialEq)]
#[serde(untagged)]
pub enum RateLimitResult {
    /// Granted. `retryAfter` is present when the tokens were reserved: wait
    /// that many ms before doing the work.
    Allowed {
        #[tsify(type = "true")]
        ok: bool,
        #[serde(rename = "retryAfter", skip_serializing_if = "Option::is_none")]
        #[tsify(optional)]
        retry_after_ms: Option<f64>,
    },
    /// Refused; nothing was written. Retry in `retryAfter` ms.
    Refused {
        #[tsify(type = "false")]
        ok: bool,
        #[serde(rename = "retryAfter")]
        retry_after_ms: f64,
    },
}

impl RateLimitResult {
    /// Granted, possibly as a reservation that is due in `retry_after_ms`.
    pub fn allowed(retry_after_ms: Option<f64>) -> Self {
        RateLimitResult::Allowed { ok: true, retry_after_ms }
    }

    /// Refused: retry in `retry_after_ms`.
    pub fn refused(retry_after_ms: f64) -> Self {
        RateLimitResult::Refused { ok: false, retry_after_ms }
    }

    /// Whether the tokens were granted.
    pub fn is_ok(&self) -> bool {
        matches!(self, RateLimitResult::Allowed { .. })
    }

    /// The wait in ms, when there is one.
    pub fn retry_after_ms(&self) -> Option<f64> {
        match *self {
            RateLimitResult::Allowed { retry_after_ms, .. } => retry_after_ms,
            RateLimitResult::Refused { retry_after_ms, .. } => Some(retry_after_ms),
        }
    }
}

/// `getValue`'s report: `calculateRateLimit({ value, ts }, config, now)` projects the whole limit forward.
#[derive(Tsify, Serialize, Debug, Clone, PartialEq)]
#[tsify(rename = "RateLimitValue")]
pub struct ValueReport {
    /// Tokens available in the whole limit at `ts` (negative: reserved debt).
    pub value: f64,
    /// When `value` was true, in ms since the epoch.
    pub ts: f64,
    /// The best sampled shard.
    pub shard: u32,
    /// The limit's config with `capacity`, `shards` and a fixed window's `start` filled in.
    pub config: RateLimitConfig,
}
