/**
 * ratebound: rate limits stored as two numbers per key, decided by one
 * WebAssembly core. This module is the API every runtime entry re-exports;
 * the entries load the `.wasm` first.
 * @module
 */
export type {
  DecideOptions,
  FixedWindowConfig,
  GrantData,
  GrantShard,
  RateLimitConfig,
  RateLimitDecision,
  RateLimitFigures,
  RateLimiterOptions,
  RateLimitResult,
  RateLimitState,
  RateLimitStore,
  RateLimitTransition,
  RateLimitValue,
  SettleResult,
  StateRef,
  TokenBucketConfig,
  WriteInfo,
} from "./wasm/ratebound.js";
export type { BatchRequest, GetValueOptions, LimitOptions, ResetOptions, SettleOptions } from "./options.js";
export { Grant } from "./grant.js";
export type { GrantResult } from "./grant.js";
export { RateLimiter } from "./limiter.js";
export { calculateRateLimit, calculateRateLimits, decideRateLimit, rateLimitFigures, withJitter } from "./pure.js";
export { MemoryStore } from "./memory-store.js";
// For adapters and the package's subpath modules: options read by their own
// fields, and argument errors in the core's one shape (TypeError, code INVALID_ARGUMENT).
export { invalidArgument, ownOptions } from "./wasm/ratebound.js";
export { RateLimitError, isRateLimitError } from "./errors.js";
export type { RateLimitErrorData } from "./errors.js";
export { SECOND, MINUTE, HOUR, DAY, WEEK } from "./time.js";
export { StoreTimeoutError, isDegraded } from "./failure-policy.js";
export type { Degraded, FailureOptions, LimitConfig, StoreErrorPolicy } from "./failure-policy.js";
