//! The only module that touches JavaScript, split by concern: values in and
//! out (`convert`), errors (`error`), the host store and the runner
//! (`host`), randomness (`random`), the limiter class (`limiter`), the
//! MemoryStore's slab (`slab`) and the pure functions (`pure`).
//!
//! Exported functions take `JsValue`s and convert inside their bodies, so no
//! input can reach a trap; every error becomes a real `Error` with a `code`.

mod convert;
mod error;
mod grant;
mod host;
mod limiter;
mod policy;
mod pure;
mod random;
mod slab;

use wasm_bindgen::prelude::*;

pub use convert::{invalid_argument, own_options};
pub use limiter::{check_options, RateLimiterCore};
pub use pure::{calculate_rate_limit, rate_limit_figures, with_jitter, CompiledConfig};
pub use slab::MemorySlab;

#[wasm_bindgen(typescript_custom_section)]
const HOST_TYPES: &'static str = r#"
/** Where one shard's state lives: the limit's name, its key (absent for the shared state) and the shard. */
export type StateRef = { name: string; key?: string; shard: number };

/** Clock and randomness of a `RateLimiter`, injectable for deterministic tests and replays. */
export interface RateLimiterOptions {
  /** Milliseconds since the epoch; default `Date.now`. */
  now?: () => number;
  /** Numbers in `[0, 1)`; default: the runtime's cryptographic source, drawn inside each call. */
  random?: () => number;
}

/** Options of `decideRateLimit`. */
export interface DecideOptions {
  /** Tokens to take (default 1). */
  count?: number;
  /** Reserve instead of being refused. */
  reserve?: boolean;
  /** The limit's name, for error messages (default "preview"). */
  name?: string;
}

/** What `decideRateLimit` answers: the decision, and the state a grant would write. */
export type RateLimitDecision = RateLimitResult & { value: number; ts: number };

/**
 * What a write knows besides the state: the call's clock (`now`, ms) and the instant (`fullAt`, ms)
 * from which the state is full again, so that deleting it changes no decision (`Infinity`: never,
 * as for a fixed window with a random start). Stores may use it for a TTL or to make room.
 */
export type WriteInfo = { now: number; fullAt: number };

/**
 * The host's persistence. Either method may answer directly or with a Promise.
 * `write(ref, null)` deletes. A method that throws or rejects makes the call fail (fail closed).
 */
export interface RateLimitStore {
  read(ref: StateRef): RateLimitState | null | undefined | Promise<RateLimitState | null | undefined>;
  write(ref: StateRef, state: RateLimitState | null, info?: WriteInfo): void | Promise<void>;
  /**
   * Optional: how the host makes one limiter call a transaction. When present, every call
   * (`limit`, `check`, `limitAll`, `checkAll`, `getValue`, `reset`) runs as
   * `transaction(body)`: the host hands `body` a store for one attempt and commits what
   * `body` wrote, atomically, when it resolves; an optimistic host may run `body` again on
   * a conflict. When `body` rejects, nothing is committed and the call rejects.
   */
  transaction?<T>(body: (store: RateLimitStore) => Promise<T>): Promise<T>;
}
"#;
